package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"skiff.dev/internal/client"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/node-agent/crienv"
	"skiff.dev/services/node-agent/imagebuild"
)

// untilBody GETs url every 100 ms until the body satisfies ok or ctx ends
// (the container's files change without any API event to wait on).
func untilBody(ctx context.Context, t *testing.T, url, what string, ok func(code int, body string) bool) string {
	t.Helper()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	var last string
	for {
		code, body, err := get(ctx, url)
		if err == nil && ok(code, body) {
			return body
		}
		last = fmt.Sprintf("%d %q %v", code, body, err)
		select {
		case <-ctx.Done():
			t.Fatalf("%s: %s; last answer %s", what, ctx.Err(), last)
		case <-tick.C:
		}
	}
}

// The story on a real containerd: a container reads a Secret as
// variables and as files (items, modes, on a tmpfs), its labels through a
// downwardAPI volume, a projected volume of a Secret, a ConfigMap and the
// downward API; an update of the Secret reaches the files (a new ..data)
// within the short volume sync period; and a private registry's image is
// pulled only with the pod's imagePullSecret.
func TestContainerdSecretsAndPullSecrets(t *testing.T) {
	demoTar, err := imagebuild.Build(context.Background(), crienv.DemoSpec("v1"))
	if err != nil {
		t.Fatal(err)
	}
	reg := startAuthRegistry(t, "skiff", "registry-pw", map[string]string{"private/demo:v1": demoTar})
	ce := crienv.Start(t, crienv.WithRegistry(reg.addr))
	e := newEnv(t, ce.Conn, nil, func(c *Config) {
		c.PodLogDir = ce.PodLogDir
		c.RelistPeriod = 200 * time.Millisecond
		c.VolumeSyncPeriod = 300 * time.Millisecond
		c.ImagePullBackOff, c.ImagePullBackOffMax = time.Second, 2*time.Second
	})
	ctx, cancel := context.WithTimeout(e.ctx, 2*time.Minute)
	defer cancel()
	secrets, cms := client.Secrets(e.api.Conn), client.ConfigMaps(e.api.Conn)
	if _, err := secrets.Create(ctx, &corev1.Secret{Metadata: &metav1.ObjectMeta{Name: "db", Namespace: "default"},
		Data: map[string][]byte{"user": []byte("admin"), "password": []byte("pw-1")}}); err != nil {
		t.Fatal(err)
	}
	if _, err := cms.Create(ctx, &corev1.ConfigMap{Metadata: &metav1.ObjectMeta{Name: "app", Namespace: "default"},
		Data: map[string]string{"app.conf": "level=info"}}); err != nil {
		t.Fatal(err)
	}

	c := demo(ce, "app")
	c.Env = []*corev1.EnvVar{
		{Name: "DB_PASSWORD", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{Name: "db", Key: "password"}}},
		{Name: "POD_UID", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{ApiVersion: "v1", FieldPath: "metadata.uid"}}},
		{Name: "HOST_IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{ApiVersion: "v1", FieldPath: "status.hostIP"}}},
		{Name: "POD_IPS", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{ApiVersion: "v1", FieldPath: "status.podIPs"}}},
	}
	c.EnvFrom = []*corev1.EnvFromSource{{Prefix: "SECRET_", SecretRef: &corev1.SecretEnvSource{Name: "db"}}}
	c.VolumeMounts = []*corev1.VolumeMount{{Name: "creds", MountPath: "/etc/creds"}, {Name: "info", MountPath: "/etc/info"}, {Name: "all", MountPath: "/etc/all"}}
	p := demoPod("secrets", c)
	p.Metadata.Labels = map[string]string{"app": "secrets", "tier": "back"}
	p.Spec.Volumes = []*corev1.Volume{
		{Name: "creds", Secret: &corev1.SecretVolumeSource{SecretName: "db", Items: []*corev1.KeyToPath{
			{Key: "password", Path: "db/password", Mode: ptr[int32](0o400)}, {Key: "user", Path: "user"}}}},
		{Name: "info", DownwardApi: &corev1.DownwardAPIVolumeSource{Items: []*corev1.DownwardAPIVolumeFile{
			{Path: "labels", FieldRef: &corev1.ObjectFieldSelector{ApiVersion: "v1", FieldPath: "metadata.labels"}}}}},
		{Name: "all", Projected: &corev1.ProjectedVolumeSource{Sources: []*corev1.VolumeProjection{
			{Secret: &corev1.SecretProjection{Name: "db", Items: []*corev1.KeyToPath{{Key: "user", Path: "db-user"}}}},
			{ConfigMap: &corev1.ConfigMapProjection{Name: "app"}},
			{DownwardApi: &corev1.DownwardAPIProjection{Items: []*corev1.DownwardAPIVolumeFile{
				{Path: "name", FieldRef: &corev1.ObjectFieldSelector{ApiVersion: "v1", FieldPath: "metadata.name"}}}}},
		}}},
	}
	missing := demoPod("no-secret", func() *corev1.Container {
		c := demo(ce, "app")
		c.Env = []*corev1.EnvVar{{Name: "X", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{Name: "absent", Key: "k"}}}}
		return c
	}())
	e.create(p)
	e.create(missing)

	// Pods still running when the test ends leave their tmpfs mounts, as
	// a stopped kubelet does: unmount them before the TempDir goes.
	t.Cleanup(func() {
		uids, _ := os.ReadDir(filepath.Join(e.cfg.RootDir, "pods"))
		for _, u := range uids {
			if err := unmountPodVolumes(e.cfg.RootDir, u.Name()); err != nil {
				t.Error(err)
			}
		}
	})
	got := e.untilRunning("secrets")
	ip, uid := got.GetStatus().GetPodIp(), got.GetMetadata().GetUid()
	base := fmt.Sprintf("http://%s:8080", ip)

	t.Run("secret values and downward API fields in the environment", func(t *testing.T) {
		_, env, err := get(ctx, base+"/env")
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"DB_PASSWORD=pw-1", "SECRET_user=admin", "SECRET_password=pw-1", "POD_UID=" + uid, "HOST_IP=127.0.0.1",
			"POD_IPS=" + ip, "KUBERNETES_SERVICE_HOST=", "KUBERNETES_SERVICE_PORT=", "KUBERNETES_PORT_"} {
			if !strings.Contains(env, "\n"+want) && !strings.HasPrefix(env, want) {
				t.Errorf("environment lacks %s:\n%s", want, env)
			}
		}
	})

	secretDir := filepath.Join(podDir(e.cfg.RootDir, uid), "volumes", pluginSecret, "creds")
	t.Run("secret files with items and modes, on a tmpfs", func(t *testing.T) {
		untilBody(ctx, t, base+"/file?path=/etc/creds/db/password", "secret file", func(code int, b string) bool { return code == 200 && b == "pw-1" })
		untilBody(ctx, t, base+"/file?path=/etc/creds/user", "secret item", func(code int, b string) bool { return code == 200 && b == "admin" })
		if code, _, _ := get(ctx, base+"/file?path=/etc/creds/password"); code != 404 {
			t.Errorf("a key not in items: %d", code)
		}
		fi, err := os.Stat(filepath.Join(secretDir, "db", "password"))
		if err != nil || fi.Mode().Perm() != 0o400 {
			t.Errorf("password file mode: %v %v", fi, err)
		}
		if fi, err := os.Stat(filepath.Join(secretDir, "user")); err != nil || fi.Mode().Perm() != 0o644 {
			t.Errorf("user file mode (defaultMode 0644): %v %v", fi, err)
		}
		if mounted, err := isMountPoint(secretDir); err != nil || !mounted {
			t.Errorf("secret volume not on its own tmpfs: %v %v", mounted, err)
		}
	})

	t.Run("downwardAPI labels and a projected volume", func(t *testing.T) {
		untilBody(ctx, t, base+"/file?path=/etc/info/labels", "labels file", func(code int, b string) bool {
			return code == 200 && b == "app=\"secrets\"\ntier=\"back\""
		})
		for path, want := range map[string]string{"/etc/all/db-user": "admin", "/etc/all/app.conf": "level=info", "/etc/all/name": "secrets"} {
			untilBody(ctx, t, base+"/file?path="+path, path, func(code int, b string) bool { return code == 200 && b == want })
		}
	})

	t.Run("an update of the Secret reaches the files through a new ..data", func(t *testing.T) {
		before, err := os.Readlink(filepath.Join(secretDir, "..data"))
		if err != nil {
			t.Fatal(err)
		}
		s, err := secrets.Get(ctx, "default", "db")
		if err != nil {
			t.Fatal(err)
		}
		s.Data["password"] = []byte("pw-2")
		if _, err := secrets.Update(ctx, s); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		untilBody(ctx, t, base+"/file?path=/etc/creds/db/password", "updated secret file", func(code int, b string) bool { return code == 200 && b == "pw-2" })
		t.Logf("the update reached the container's file in %s (VolumeSyncPeriod 300 ms)", time.Since(start).Round(time.Millisecond))
		after, _ := os.Readlink(filepath.Join(secretDir, "..data"))
		if after == before || !strings.HasPrefix(after, "..") {
			t.Errorf("..data %q -> %q", before, after)
		}
		if _, err := os.Stat(filepath.Join(secretDir, before)); !os.IsNotExist(err) {
			t.Errorf("the old version %s is still there: %v", before, err)
		}
		// The variable keeps the value the container started with.
		if _, env, _ := get(ctx, base+"/env"); !strings.Contains(env, "DB_PASSWORD=pw-1") {
			t.Errorf("environment changed under a running container")
		}
	})

	t.Run("a missing Secret holds the container in CreateContainerConfigError", func(t *testing.T) {
		e.untilPod("no-secret", "CreateContainerConfigError", func(p *corev1.Pod) (bool, string) {
			w := containerStatusOf(p, "app").GetState().GetWaiting()
			return w.GetReason() == "CreateContainerConfigError" && w.GetMessage() == `secret "absent" not found`, brief(p.GetStatus())
		})
	})

	t.Run("a private registry's image pulls only with the pod's imagePullSecret", func(t *testing.T) {
		image := "skiff.local/private/demo:v1"
		locked := demoPod("locked", &corev1.Container{Name: "app", Image: image, ImagePullPolicy: "IfNotPresent"})
		e.create(locked)
		e.untilPod("locked", "ErrImagePull with the registry's 401", func(p *corev1.Pod) (bool, string) {
			w := containerStatusOf(p, "app").GetState().GetWaiting()
			return (w.GetReason() == "ErrImagePull" || w.GetReason() == "ImagePullBackOff") && strings.Contains(w.GetMessage()+pullEvents(ctx, e, "locked"), "401"),
				brief(p.GetStatus())
		})
		if !strings.Contains(pullEvents(ctx, e, "locked"), "401 Unauthorized") {
			t.Errorf("no Failed event with the registry's 401: %q", pullEvents(ctx, e, "locked"))
		}
		if reg.refused.Load() == 0 {
			t.Error("the registry refused nothing")
		}
		cfg, _ := json.Marshal(map[string]any{"auths": map[string]any{reg.addr: map[string]string{"username": "skiff", "password": "registry-pw"},
			"skiff.local": map[string]string{"username": "skiff", "password": "registry-pw"}}})
		if _, err := secrets.Create(ctx, &corev1.Secret{Metadata: &metav1.ObjectMeta{Name: "regcred", Namespace: "default"},
			Type: "kubernetes.io/dockerconfigjson", Data: map[string][]byte{".dockerconfigjson": cfg}}); err != nil {
			t.Fatal(err)
		}
		unlocked := demoPod("unlocked", &corev1.Container{Name: "app", Image: image, ImagePullPolicy: "Always"})
		unlocked.Spec.ImagePullSecrets = []*corev1.LocalObjectReference{{Name: "regcred"}}
		e.create(unlocked)
		got := e.untilPod("unlocked", "Running", func(p *corev1.Pod) (bool, string) {
			return p.GetStatus().GetPhase() == "Running" && p.GetStatus().GetPodIp() != "", brief(p.GetStatus()) + "; events: " + pullEvents(ctx, e, "unlocked")
		})
		untilBody(ctx, t, fmt.Sprintf("http://%s:8080/", got.GetStatus().GetPodIp()), "the pulled image serves", func(code int, b string) bool {
			return code == 200 && strings.HasPrefix(b, "demo v1")
		})
	})

	t.Run("deleting the pod unmounts its tmpfs and removes its volumes", func(t *testing.T) {
		if _, err := e.pods.Delete(ctx, &metav1.DeleteRequest{Namespace: "default", Name: "secrets"}); err != nil {
			t.Fatal(err)
		}
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			_, err := os.Stat(podDir(e.cfg.RootDir, uid))
			if os.IsNotExist(err) {
				break
			}
			select {
			case <-ctx.Done():
				t.Fatalf("pod directory still there: %v", err)
			case <-tick.C:
			}
		}
	})
}

// pullEvents joins the messages of a pod's Failed events.
func pullEvents(ctx context.Context, e *env, pod string) string {
	l, err := client.Events(e.api.Conn).List(ctx, &metav1.ListOptions{Namespace: "default"})
	if err != nil {
		return err.Error()
	}
	var msgs []string
	for _, ev := range l.GetItems() {
		if ev.GetInvolvedObject().GetName() == pod && ev.GetReason() == "Failed" {
			msgs = append(msgs, ev.GetMessage())
		}
	}
	return strings.Join(msgs, "\n")
}
