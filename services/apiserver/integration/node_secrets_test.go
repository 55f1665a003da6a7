package integration

import (
	"fmt"
	"testing"
	"time"

	"skiff.dev/internal/apierrors"
	"skiff.dev/internal/await"
	"skiff.dev/internal/client"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/apiserver/user"
)

// TestAuthzNodeSecrets: through the real apiserver with real pods, a node
// reads exactly the Secrets and ConfigMaps that pods bound to it use, and
// asks tokens only for their service accounts.
func TestAuthzNodeSecrets(t *testing.T) {
	s := startAuthorized(t)
	ctx := testContext(t)
	createNamespaces(t, s, "team-a")
	a := s.ConnAs(t, "system:node:node-a", user.NodesGroup)

	for _, n := range []string{"vol", "proj", "env", "envfrom", "pull", "other", "late"} {
		mustCreate(t, client.Secrets(s.Conn).Create, &corev1.Secret{Metadata: objMeta("team-a", "sec-"+n), StringData: map[string]string{"k": "v"}})
	}
	mustCreate(t, client.ConfigMaps(s.Conn).Create, &corev1.ConfigMap{Metadata: objMeta("team-a", "kube-root-ca.crt"), Data: map[string]string{"ca.crt": "x"}})
	for _, sa := range []string{"runner", "other-sa"} {
		mustCreate(t, client.ServiceAccounts(s.Conn).Create, &corev1.ServiceAccount{Metadata: objMeta("team-a", sa)})
	}
	spec := podSpec()
	spec.NodeName = "node-a"
	spec.ServiceAccountName = "runner"
	spec.Volumes = []*corev1.Volume{
		{Name: "vol", Secret: &corev1.SecretVolumeSource{SecretName: "sec-vol"}},
		{Name: "proj", Projected: &corev1.ProjectedVolumeSource{Sources: []*corev1.VolumeProjection{
			{ConfigMap: &corev1.ConfigMapProjection{Name: "kube-root-ca.crt"}},
			{Secret: &corev1.SecretProjection{Name: "sec-proj"}},
		}}},
	}
	spec.Containers[0].Env = []*corev1.EnvVar{{Name: "X", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{Name: "sec-env", Key: "k"}}}}
	spec.Containers[0].EnvFrom = []*corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{Name: "sec-envfrom"}}}
	spec.ImagePullSecrets = []*corev1.LocalObjectReference{{Name: "sec-pull"}}
	podA := mustCreate(t, client.Pods(s.Conn).Create, &corev1.Pod{Metadata: objMeta("team-a", "pod-a"), Spec: spec})
	other := podSpec()
	other.NodeName = "node-b"
	other.ServiceAccountName = "other-sa"
	other.Volumes = []*corev1.Volume{{Name: "vol", Secret: &corev1.SecretVolumeSource{SecretName: "sec-other"}}}
	mustCreate(t, client.Pods(s.Conn).Create, &corev1.Pod{Metadata: objMeta("team-a", "pod-b"), Spec: other})

	secrets := client.Secrets(a)
	for _, n := range []string{"vol", "proj", "env", "envfrom", "pull"} {
		got, err := secrets.Get(ctx, "team-a", "sec-"+n)
		allowed(t, "node-a gets sec-"+n, err)
		if err == nil && string(got.Data["k"]) != "v" {
			t.Errorf("sec-%s: %v", n, got)
		}
	}
	_, err := client.ConfigMaps(a).Get(ctx, "team-a", "kube-root-ca.crt")
	allowed(t, "node-a gets kube-root-ca.crt (its pod's projected volume)", err)
	_, err = secrets.Get(ctx, "team-a", "sec-other")
	denied(t, "node-a gets node-b's pod's Secret", err, `secrets "sec-other" is forbidden: User "system:node:node-a" cannot get resource "secrets" in API group "" in the namespace "team-a": node 'node-a' cannot get secret team-a/sec-other: no relationship found between node 'node-a' and this object`)
	_, err = secrets.List(ctx, &metav1.ListOptions{Namespace: "team-a"})
	denied(t, "node-a lists Secrets", err, "metadata.name=<name>")
	l, err := secrets.List(ctx, &metav1.ListOptions{Namespace: "team-a", FieldSelector: "metadata.name=sec-vol"})
	allowed(t, "node-a lists its pod's Secret by name", err)
	if err == nil && len(l.GetItems()) != 1 {
		t.Errorf("list by name: %v", l.GetItems())
	}
	w, err := secrets.Watch(ctx, &metav1.ListOptions{Namespace: "team-a", FieldSelector: "metadata.name=sec-vol"})
	if err == nil {
		_, err = w.Next()
		w.Stop()
	}
	allowed(t, "node-a watches its pod's Secret by name", err)
	_, err = secrets.Watch(ctx, &metav1.ListOptions{Namespace: "team-a", FieldSelector: "metadata.name=sec-other"})
	if err == nil {
		w, _ := secrets.Watch(ctx, &metav1.ListOptions{Namespace: "team-a", FieldSelector: "metadata.name=sec-other"})
		_, err = w.Next()
		w.Stop()
	}
	denied(t, "node-a watches node-b's pod's Secret", err, "no relationship found")

	sa := corev1.NewServiceAccountsClient(a)
	bound := &corev1.BoundObjectReference{Kind: "Pod", ApiVersion: "v1", Name: "pod-a", Uid: podA.GetMetadata().GetUid()}
	tr := &corev1.TokenRequest{Metadata: objMeta("team-a", "runner"), Spec: &corev1.TokenRequestSpec{Audiences: []string{"skiff"}, BoundObjectRef: bound}}
	_, err = sa.CreateToken(ctx, tr)
	allowed(t, "node-a asks a token of its pod's service account", err)
	tr.Metadata = objMeta("team-a", "other-sa")
	_, err = sa.CreateToken(ctx, tr)
	denied(t, "node-a asks a token of node-b's pod's service account", err, "node 'node-a' cannot create serviceaccount token team-a/other-sa: no relationship found")

	// A pod bound to node-a later gives it its Secret.
	_, err = secrets.Get(ctx, "team-a", "sec-late")
	denied(t, "node-a gets a Secret no pod of it uses yet", err, "no relationship found")
	late := podSpec()
	late.NodeName = "node-a"
	late.Volumes = []*corev1.Volume{{Name: "vol", Secret: &corev1.SecretVolumeSource{SecretName: "sec-late"}}}
	mustCreate(t, client.Pods(s.Conn).Create, &corev1.Pod{Metadata: objMeta("team-a", "pod-late"), Spec: late})
	_, err = secrets.Get(ctx, "team-a", "sec-late")
	allowed(t, "node-a gets its new pod's Secret", err)
	// Once the pod is gone (the node deletes it after it stopped), so is
	// the node's access: the index follows deletions, and the consistent
	// fallback read agrees at once.
	if _, err := client.Pods(a).Delete(ctx, &metav1.DeleteRequest{Namespace: "team-a", Name: "pod-late", GracePeriodSeconds: new(int64)}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.Pods(s.Conn).Get(ctx, "team-a", "pod-late"); !apierrors.IsNotFound(err) {
		t.Fatalf("pod-late after its node deleted it: %v", err)
	}
	// The index hears of the deletion a moment later.
	var sig await.Signal
	sig.Until(t, 10*time.Second, "node-a's access to its deleted pod's Secret to end", ctx.Done(), func() (bool, string) {
		_, err = secrets.Get(ctx, "team-a", "sec-late")
		return err != nil, fmt.Sprintf("get: %v", err)
	})
	denied(t, "node-a gets its deleted pod's Secret", err, "no relationship found")
}
