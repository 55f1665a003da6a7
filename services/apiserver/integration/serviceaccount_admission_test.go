package integration

import (
	"regexp"
	"slices"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	"skiff.dev/internal/client"
	corev1 "skiff.dev/proto/core/v1"
	"skiff.dev/services/apiserver/admission"
	"skiff.dev/services/apiserver/apiservertest"
)

// TestServiceAccountAdmission: the ServiceAccount plugin as Kubernetes':
// serviceAccountName defaults to "default", the account must exist, and
// its token, the cluster CA and the namespace are mounted in every
// container at /var/run/secrets/kubernetes.io/serviceaccount unless
// automount is off.
func TestServiceAccountAdmission(t *testing.T) {
	s := startAdmissionWith(t, []apiservertest.Option{apiservertest.Secure()}, admission.ServiceAccountName)
	ctx := testContext(t)
	sas := client.ServiceAccounts(s.Conn)
	pods := client.Pods(s.Conn)
	for _, sa := range []*corev1.ServiceAccount{
		{Metadata: meta("default", "default")},
		{Metadata: meta("default", "quiet"), AutomountServiceAccountToken: proto.Bool(false),
			ImagePullSecrets: []*corev1.LocalObjectReference{{Name: "registry"}}},
	} {
		if _, err := sas.Create(ctx, sa); err != nil {
			t.Fatal(err)
		}
	}
	const path = "/var/run/secrets/kubernetes.io/serviceaccount"

	t.Run("defaults and mounts", func(t *testing.T) {
		p := pod("default", "web")
		p.Spec.InitContainers = []*corev1.Container{{Name: "init", Image: "busybox"}}
		got, err := pods.Create(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		spec := got.GetSpec()
		if spec.GetServiceAccountName() != "default" || spec.GetServiceAccount() != "default" {
			t.Errorf("serviceAccountName %q, serviceAccount %q: want both default (the deprecated name reads back equal)", spec.GetServiceAccountName(), spec.GetServiceAccount())
		}
		if len(spec.GetVolumes()) != 1 {
			t.Fatalf("volumes %v", spec.GetVolumes())
		}
		v := spec.GetVolumes()[0]
		if !regexp.MustCompile(`^kube-api-access-[bcdfghjklmnpqrstvwxz2456789]{5}$`).MatchString(v.GetName()) {
			t.Errorf("volume name %q", v.GetName())
		}
		want := &corev1.ProjectedVolumeSource{DefaultMode: proto.Int32(0o644), Sources: []*corev1.VolumeProjection{
			{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{ExpirationSeconds: proto.Int64(3607), Path: "token"}},
			{ConfigMap: &corev1.ConfigMapProjection{Name: "kube-root-ca.crt", Items: []*corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
			{DownwardApi: &corev1.DownwardAPIProjection{Items: []*corev1.DownwardAPIVolumeFile{{Path: "namespace", FieldRef: &corev1.ObjectFieldSelector{ApiVersion: "v1", FieldPath: "metadata.namespace"}}}}},
		}}
		if !proto.Equal(v.GetProjected(), want) {
			t.Errorf("projected %v, want %v", v.GetProjected(), want)
		}
		for _, c := range append(spec.GetInitContainers(), spec.GetContainers()...) {
			m := c.GetVolumeMounts()
			if len(m) != 1 || m[0].GetName() != v.GetName() || m[0].GetMountPath() != path || !m[0].GetReadOnly() {
				t.Errorf("container %s mounts %v", c.GetName(), m)
			}
		}
	})
	t.Run("the deprecated serviceAccount names the account", func(t *testing.T) {
		p := pod("default", "old-style")
		p.Spec.ServiceAccount = "quiet"
		got, err := pods.Create(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		if got.GetSpec().GetServiceAccountName() != "quiet" || got.GetSpec().GetServiceAccount() != "quiet" {
			t.Errorf("serviceAccountName %q, serviceAccount %q: want quiet", got.GetSpec().GetServiceAccountName(), got.GetSpec().GetServiceAccount())
		}
	})
	t.Run("a container with its own mount at the path keeps it", func(t *testing.T) {
		p := pod("default", "own", &corev1.Container{Name: "a", Image: "x", VolumeMounts: []*corev1.VolumeMount{{Name: "mine", MountPath: path}}}, &corev1.Container{Name: "b", Image: "x"})
		p.Spec.Volumes = []*corev1.Volume{{Name: "mine", EmptyDir: &corev1.EmptyDirVolumeSource{}}}
		got, err := pods.Create(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		if n := len(got.GetSpec().GetVolumes()); n != 2 {
			t.Errorf("%d volumes, want 2", n)
		}
		if m := got.GetSpec().GetContainers()[0].GetVolumeMounts(); len(m) != 1 || m[0].GetName() != "mine" {
			t.Errorf("container a mounts %v", m)
		}
		if m := got.GetSpec().GetContainers()[1].GetVolumeMounts(); len(m) != 1 || m[0].GetMountPath() != path {
			t.Errorf("container b mounts %v", m)
		}
	})
	t.Run("automount off on the account", func(t *testing.T) {
		p := pod("default", "quiet")
		p.Spec.ServiceAccountName = "quiet"
		got, err := pods.Create(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		if len(got.GetSpec().GetVolumes()) != 0 || len(got.GetSpec().GetContainers()[0].GetVolumeMounts()) != 0 {
			t.Errorf("mounted: %v", got.GetSpec())
		}
		if ips := got.GetSpec().GetImagePullSecrets(); len(ips) != 1 || ips[0].GetName() != "registry" {
			t.Errorf("imagePullSecrets %v, want the account's", ips)
		}
		// The pod's setting wins over the account's.
		p = pod("default", "loud")
		p.Spec.ServiceAccountName, p.Spec.AutomountServiceAccountToken = "quiet", proto.Bool(true)
		if got, err = pods.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
		if len(got.GetSpec().GetVolumes()) != 1 {
			t.Errorf("not mounted: %v", got.GetSpec())
		}
	})
	t.Run("automount off on the pod", func(t *testing.T) {
		p := pod("default", "off")
		p.Spec.AutomountServiceAccountToken = proto.Bool(false)
		got, err := pods.Create(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		if len(got.GetSpec().GetVolumes()) != 0 {
			t.Errorf("mounted: %v", got.GetSpec())
		}
	})
	t.Run("a missing account", func(t *testing.T) {
		p := pod("default", "ghostly")
		p.Spec.ServiceAccountName = "ghost"
		_, err := pods.Create(ctx, p)
		wantRefused(t, err, codes.PermissionDenied, `pods "ghostly" is forbidden: error looking up service account default/ghost: serviceaccount "ghost" not found`)
	})
}

// withoutServiceAccount disables the ServiceAccount plugin of the command's
// defaults when a test runs them: no serviceaccounts controller makes the
// "default" accounts in these tests.
func withoutServiceAccount(plugins []string) []string {
	if slices.Equal(plugins, admission.DefaultPlugins) {
		return []string{admission.ServiceAccountName}
	}
	return nil
}

// An apiserver that issues no tokens (--insecure: no service-account key)
// mounts no token volume, which nothing could fill (every pod would wait
// for its volume forever); the account is still defaulted and checked.
func TestServiceAccountAdmissionWithoutTokens(t *testing.T) {
	s := startAdmission(t, admission.ServiceAccountName)
	ctx := testContext(t)
	if _, err := client.ServiceAccounts(s.Conn).Create(ctx, &corev1.ServiceAccount{Metadata: meta("default", "default")}); err != nil {
		t.Fatal(err)
	}
	got, err := client.Pods(s.Conn).Create(ctx, pod("default", "web"))
	if err != nil {
		t.Fatal(err)
	}
	if sa := got.GetSpec().GetServiceAccountName(); sa != "default" {
		t.Errorf("serviceAccountName %q, want default", sa)
	}
	if v := got.GetSpec().GetVolumes(); len(v) != 0 {
		t.Errorf("volumes %v, want none without a token issuer", v)
	}
	_, err = client.Pods(s.Conn).Create(ctx, func() *corev1.Pod { p := pod("default", "x"); p.Spec.ServiceAccountName = "nosuch"; return p }())
	wantRefused(t, err, codes.PermissionDenied, `serviceaccount "nosuch" not found`)
}
