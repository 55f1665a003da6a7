package agent

import (
	"context"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"skiff.dev/internal/apierrors"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
)

func ptr[T any](v T) *T { return &v }

// mapSources serves ConfigMaps and Secrets from maps (by name).
func mapSources(cms map[string]*corev1.ConfigMap, secrets map[string]*corev1.Secret) sources {
	return sources{
		configMap: func(_ context.Context, _, name string) (*corev1.ConfigMap, error) {
			if cm, ok := cms[name]; ok {
				return cm, nil
			}
			return nil, apierrors.NewNotFound("configmaps", name)
		},
		secret: func(_ context.Context, _, name string) (*corev1.Secret, error) {
			if s, ok := secrets[name]; ok {
				return s, nil
			}
			return nil, apierrors.NewNotFound("secrets", name)
		},
	}
}

func TestAtomicWriterSwapsDataAndLinks(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "vol")
	files := map[string]volumeFile{"a": {[]byte("1"), 0o644}, "d/b": {[]byte("2"), 0o600}}
	changed, err := writeAtomic(dir, files)
	if err != nil || !changed {
		t.Fatalf("first write: changed %v, %v", changed, err)
	}
	first, _ := os.Readlink(filepath.Join(dir, "..data"))
	if !strings.HasPrefix(first, "..") {
		t.Fatalf("..data -> %q", first)
	}
	for name, want := range map[string]string{"a": "..data/a", "d": "..data/d"} {
		if got, err := os.Readlink(filepath.Join(dir, name)); err != nil || got != want {
			t.Errorf("%s -> %q (%v), want %q", name, got, err, want)
		}
	}
	if fi, err := os.Stat(filepath.Join(dir, "d/b")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("d/b: %v %v", fi, err)
	}
	// The same content: nothing changes.
	if changed, err := writeAtomic(dir, files); err != nil || changed {
		t.Fatalf("same write: changed %v, %v", changed, err)
	}
	// New content, a name gone: a new ..data, the old version removed.
	changed, err = writeAtomic(dir, map[string]volumeFile{"a": {[]byte("10"), 0o644}})
	if err != nil || !changed {
		t.Fatalf("update: changed %v, %v", changed, err)
	}
	second, _ := os.Readlink(filepath.Join(dir, "..data"))
	if second == first {
		t.Error("..data did not change")
	}
	entries, _ := os.ReadDir(dir)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if strings.Join(names, ",") != strings.Join([]string{second, "..data", "a"}, ",") {
		t.Errorf("entries %v", names)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "a")); string(b) != "10" {
		t.Errorf("a = %q", b)
	}
	for _, bad := range []string{"../x", "/x", "..data", "a/../../x"} {
		if _, err := writeAtomic(dir, map[string]volumeFile{bad: {}}); err == nil {
			t.Errorf("path %q accepted", bad)
		}
	}
}

func TestSecretDownwardAPIAndProjectedVolumes(t *testing.T) {
	root := t.TempDir()
	secrets := map[string]*corev1.Secret{"db": {Data: map[string][]byte{"user": []byte("admin"), "password": []byte("s3cret")}}}
	cms := map[string]*corev1.ConfigMap{"app": {Data: map[string]string{"config": "x=1"}}}
	p := &corev1.Pod{
		Metadata: &metav1.ObjectMeta{Name: "web", Namespace: "ns", Uid: "u1", Labels: map[string]string{"app": "web", "tier": "front"},
			Annotations: map[string]string{"note": `say "hi"`}},
		Spec: &corev1.PodSpec{
			Containers: []*corev1.Container{{Name: "c", Resources: &corev1.ResourceRequirements{Limits: map[string]string{"memory": "64Mi"}}}},
			Volumes: []*corev1.Volume{
				{Name: "all", Secret: &corev1.SecretVolumeSource{SecretName: "db"}},
				{Name: "some", Secret: &corev1.SecretVolumeSource{SecretName: "db", DefaultMode: ptr[int32](0o400),
					Items: []*corev1.KeyToPath{{Key: "password", Path: "creds/pw"}, {Key: "user", Path: "user", Mode: ptr[int32](0o440)}}}},
				{Name: "opt", Secret: &corev1.SecretVolumeSource{SecretName: "none", Optional: ptr(true)}},
				{Name: "info", DownwardApi: &corev1.DownwardAPIVolumeSource{Items: []*corev1.DownwardAPIVolumeFile{
					{Path: "labels", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels"}},
					{Path: "annotations", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.annotations"}},
					{Path: "uid", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.uid"}},
					{Path: "mem", ResourceFieldRef: &corev1.ResourceFieldSelector{ContainerName: "c", Resource: "limits.memory", Divisor: "1Mi"}},
				}}},
				{Name: "proj", Projected: &corev1.ProjectedVolumeSource{Sources: []*corev1.VolumeProjection{
					{Secret: &corev1.SecretProjection{Name: "db", Items: []*corev1.KeyToPath{{Key: "password", Path: "db/pw"}}}},
					{ConfigMap: &corev1.ConfigMapProjection{Name: "app"}},
					{DownwardApi: &corev1.DownwardAPIProjection{Items: []*corev1.DownwardAPIVolumeFile{{Path: "name", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}}}},
					{Secret: &corev1.SecretProjection{Name: "gone", Optional: ptr(true)}},
				}}},
			},
		},
	}
	ve := volumeEnv{root: root, get: mapSources(cms, secrets)}
	paths, err := prepareVolumes(context.Background(), ve, p)
	if err != nil {
		t.Fatal(err)
	}
	check := func(vol, file, want string, mode os.FileMode) {
		t.Helper()
		path := filepath.Join(paths[vol], file)
		b, err := os.ReadFile(path)
		if err != nil || string(b) != want {
			t.Errorf("%s/%s = %q (%v), want %q", vol, file, b, err, want)
			return
		}
		if fi, _ := os.Stat(path); fi.Mode().Perm() != mode {
			t.Errorf("%s/%s mode %o, want %o", vol, file, fi.Mode().Perm(), mode)
		}
	}
	check("all", "password", "s3cret", 0o644)
	check("all", "user", "admin", 0o644)
	check("some", "creds/pw", "s3cret", 0o400)
	check("some", "user", "admin", 0o440)
	check("info", "labels", "app=\"web\"\ntier=\"front\"", 0o644)
	check("info", "annotations", `note="say \"hi\""`, 0o644)
	check("info", "uid", "u1", 0o644)
	check("info", "mem", "64", 0o644)
	check("proj", "db/pw", "s3cret", 0o644)
	check("proj", "config", "x=1", 0o644)
	check("proj", "name", "web", 0o644)
	if !strings.Contains(paths["all"], pluginSecret) || !strings.Contains(paths["proj"], pluginProjected) || !strings.Contains(paths["info"], pluginDownwardAPI) {
		t.Errorf("paths %v", paths)
	}
	if _, err := os.Stat(filepath.Join(paths["some"], "password")); err == nil {
		t.Error("a key not in items was written")
	}

	// A missing Secret that is not optional: the kubelet's message, no content.
	p.Spec.Volumes = []*corev1.Volume{{Name: "m", Secret: &corev1.SecretVolumeSource{SecretName: "missing"}}}
	if _, err := prepareVolumes(context.Background(), ve, p); err == nil || !strings.Contains(err.Error(), `secret "missing" not found`) {
		t.Errorf("missing secret: %v", err)
	}
	p.Spec.Volumes = []*corev1.Volume{{Name: "k", Secret: &corev1.SecretVolumeSource{SecretName: "db", Items: []*corev1.KeyToPath{{Key: "nope", Path: "x"}}}}}
	if _, err := prepareVolumes(context.Background(), ve, p); err == nil || !strings.Contains(err.Error(), "references non-existent secret key: nope") {
		t.Errorf("missing key: %v", err)
	}
	// A token projection without a token source fails clearly; with one
	// the token is written, and reused until 80% of its life.
	p.Spec.Volumes = []*corev1.Volume{{Name: "t", Projected: &corev1.ProjectedVolumeSource{Sources: []*corev1.VolumeProjection{
		{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Audience: "vault", Path: "token"}}}}}}
	if _, err := prepareVolumes(context.Background(), ve, p); err == nil || !strings.Contains(err.Error(), "no token source") {
		t.Errorf("token without a source: %v", err)
	}
	now := time.Unix(1_000_000, 0)
	calls := 0
	ve.tokens = &tokenCache{now: func() time.Time { return now }, source: func(_ context.Context, pod *corev1.Pod, aud string, exp int64) (string, time.Time, error) {
		calls++
		if aud != "vault" || exp != 3600 || pod.GetMetadata().GetUid() != "u1" {
			t.Errorf("token for %s %d", aud, exp)
		}
		return "tok" + string(rune('0'+calls)), now.Add(time.Hour), nil
	}}
	if paths, err = prepareVolumes(context.Background(), ve, p); err != nil {
		t.Fatal(err)
	}
	check("t", "token", "tok1", 0o644)
	now = now.Add(47 * time.Minute)
	if _, err := prepareVolumes(context.Background(), ve, p); err != nil || calls != 1 {
		t.Errorf("token asked again before 80%% of its life: %d calls, %v", calls, err)
	}
	now = now.Add(2 * time.Minute)
	if _, err := prepareVolumes(context.Background(), ve, p); err != nil || calls != 2 {
		t.Errorf("token not renewed after 80%% of its life: %d calls, %v", calls, err)
	}
	check("t", "token", "tok2", 0o644)
}

func TestSecretEnv(t *testing.T) {
	get := mapSources(nil, map[string]*corev1.Secret{"db": {Data: map[string][]byte{"user": []byte("admin"), "pass": []byte("s3cret"), "bad key": []byte("x")}}})
	p := &corev1.Pod{Metadata: &metav1.ObjectMeta{Name: "web", Namespace: "ns", Uid: "u1"}, Spec: &corev1.PodSpec{ServiceAccountName: "robot"}}
	c := &corev1.Container{
		EnvFrom: []*corev1.EnvFromSource{{Prefix: "DB_", SecretRef: &corev1.SecretEnvSource{Name: "db"}}, {SecretRef: &corev1.SecretEnvSource{Name: "none", Optional: ptr(true)}}},
		Env: []*corev1.EnvVar{
			{Name: "PW", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{Name: "db", Key: "pass"}}},
			{Name: "OPT", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{Name: "db", Key: "zz", Optional: ptr(true)}}},
			{Name: "URL", Value: "https://$(KUBERNETES_SERVICE_HOST):$(KUBERNETES_SERVICE_PORT)"},
			{Name: "UID", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.uid"}}},
			{Name: "SA", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.serviceAccountName"}}},
			{Name: "IPS", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIPs"}}},
			{Name: "HOSTIPS", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.hostIPs"}}},
			{Name: "KUBERNETES_SERVICE_PORT", Value: "8443"},
		},
	}
	svcEnv := serviceEnv([]*corev1.Service{{Metadata: &metav1.ObjectMeta{Name: "kubernetes", Namespace: "default"},
		Spec: &corev1.ServiceSpec{ClusterIp: "10.96.0.1", Ports: []*corev1.ServicePort{{Name: "https", Port: 443, Protocol: "TCP"}}}}})
	env, err := containerEnv(context.Background(), p, c, envContext{PodIP: "10.0.0.5", HostIP: "192.168.0.1", ServiceEnv: svcEnv}, get)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, kv := range env {
		got = append(got, kv.GetKey()+"="+string(kv.GetValue()))
	}
	want := []string{"DB_pass=s3cret", "DB_user=admin", "PW=s3cret", "URL=https://10.96.0.1:443", "UID=u1", "SA=robot", "IPS=10.0.0.5", "HOSTIPS=192.168.0.1",
		"KUBERNETES_SERVICE_PORT=8443",
		"KUBERNETES_PORT=tcp://10.96.0.1:443", "KUBERNETES_PORT_443_TCP=tcp://10.96.0.1:443", "KUBERNETES_PORT_443_TCP_ADDR=10.96.0.1",
		"KUBERNETES_PORT_443_TCP_PORT=443", "KUBERNETES_PORT_443_TCP_PROTO=tcp", "KUBERNETES_SERVICE_HOST=10.96.0.1", "KUBERNETES_SERVICE_PORT_HTTPS=443"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("env\n%v\nwant\n%v", got, want)
	}
	for _, tc := range []struct {
		c    *corev1.Container
		want string
	}{
		{&corev1.Container{EnvFrom: []*corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{Name: "x"}}}}, `secret "x" not found`},
		{&corev1.Container{Env: []*corev1.EnvVar{{Name: "A", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{Name: "x", Key: "k"}}}}}, `secret "x" not found`},
		{&corev1.Container{Env: []*corev1.EnvVar{{Name: "A", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{Name: "db", Key: "k"}}}}}, "couldn't find key k in Secret ns/db"},
	} {
		_, err := containerEnv(context.Background(), p, tc.c, envContext{}, get)
		if err == nil || err.Error() != tc.want {
			t.Errorf("error %v, want %q", err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), "s3cret") {
			t.Errorf("a secret value in an error: %v", err)
		}
	}
}

func TestPullAuths(t *testing.T) {
	dockerconfigjson := func(auths string) *corev1.Secret {
		return &corev1.Secret{Type: secretTypeDockerConfigJSON, Data: map[string][]byte{".dockerconfigjson": []byte(`{"auths":` + auths + `}`)}}
	}
	secrets := map[string]*corev1.Secret{
		"reg": dockerconfigjson(`{"registry.local:5001": {"username": "skiff", "password": "pw"},
			"*.example.com": {"auth": "` + base64.StdEncoding.EncodeToString([]byte("glob:pw2")) + `"},
			"https://index.docker.io/v1/": {"username": "hub", "password": "pw3"},
			"registry.local:5001/team": {"username": "team", "password": "pw4"}}`),
		"old":     {Type: secretTypeDockercfg, Data: map[string][]byte{".dockercfg": []byte(`{"quay.io": {"username": "q", "password": "pw5"}}`)}},
		"opaque":  {Type: "Opaque", Data: map[string][]byte{"x": []byte("y")}},
		"garbage": dockerconfigjson(`[`),
	}
	p := &corev1.Pod{Metadata: &metav1.ObjectMeta{Name: "web", Namespace: "ns"}, Spec: &corev1.PodSpec{ImagePullSecrets: []*corev1.LocalObjectReference{
		{Name: "missing"}, {Name: "opaque"}, {Name: "garbage"}, {Name: "reg"}, {Name: "old"}}}}
	users := func(image string) string {
		var u []string
		for _, a := range pullAuths(context.Background(), p, image, mapSources(nil, secrets), zap.NewNop()) {
			u = append(u, a.GetUsername()+":"+a.GetPassword())
		}
		return strings.Join(u, ",")
	}
	for image, want := range map[string]string{
		"registry.local:5001/app:v1":      "skiff:pw",
		"registry.local:5001/team/app:v1": "team:pw4,skiff:pw",
		"registry.local:5001/teams/app":   "skiff:pw",
		"registry.local/app:v1":           "",
		"a.example.com/x/y@sha256:abc":    "glob:pw2",
		"a.b.example.com/x":               "",
		"nginx:1.25":                      "hub:pw3",
		"docker.io/library/nginx":         "hub:pw3",
		"quay.io/org/img:latest":          "q:pw5",
		"localhost:5000/x":                "",
	} {
		if got := users(image); got != want {
			t.Errorf("%s: credentials %q, want %q", image, got, want)
		}
	}
}
