package validation_test

import (
	"testing"

	"skiff.dev/internal/validation"
	corev1 "skiff.dev/proto/core/v1"
)

// A pod that reads Secrets, the downward API and a projected volume:
// valid as written, and each case breaks one rule of the new fields.
func secretsPod() *corev1.Pod {
	p := nginxPod()
	s := p.Spec
	s.Volumes = append(s.Volumes,
		&corev1.Volume{Name: "tls", Secret: &corev1.SecretVolumeSource{SecretName: "web-tls",
			Items:       []*corev1.KeyToPath{{Key: "tls.crt", Path: "certs/tls.crt"}, {Key: "tls.key", Path: "certs/tls.key", Mode: ptr[int32](0o400)}},
			DefaultMode: ptr[int32](0o640)}},
		&corev1.Volume{Name: "podinfo", DownwardApi: &corev1.DownwardAPIVolumeSource{Items: []*corev1.DownwardAPIVolumeFile{
			{Path: "labels", FieldRef: &corev1.ObjectFieldSelector{ApiVersion: "v1", FieldPath: "metadata.labels"}},
			{Path: "app", FieldRef: &corev1.ObjectFieldSelector{ApiVersion: "v1", FieldPath: "metadata.labels['app']"}},
			{Path: "cpu_limit", ResourceFieldRef: &corev1.ResourceFieldSelector{ContainerName: "nginx", Resource: "limits.cpu", Divisor: "1m"}},
		}}},
		&corev1.Volume{Name: "all-in-one", Projected: &corev1.ProjectedVolumeSource{Sources: []*corev1.VolumeProjection{
			{Secret: &corev1.SecretProjection{Name: "db", Items: []*corev1.KeyToPath{{Key: "password", Path: "db/password"}}}},
			{ConfigMap: &corev1.ConfigMapProjection{Name: "app", Items: []*corev1.KeyToPath{{Key: "config", Path: "app.conf"}}}},
			{DownwardApi: &corev1.DownwardAPIProjection{Items: []*corev1.DownwardAPIVolumeFile{
				{Path: "name", FieldRef: &corev1.ObjectFieldSelector{ApiVersion: "v1", FieldPath: "metadata.name"}}}}},
			{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Audience: "vault", ExpirationSeconds: ptr[int64](3600), Path: "token"}},
		}}},
	)
	c := s.Containers[0]
	c.Env = append(c.Env, &corev1.EnvVar{Name: "DB_PASSWORD", ValueFrom: &corev1.EnvVarSource{
		SecretKeyRef: &corev1.SecretKeySelector{Name: "db", Key: "password", Optional: ptr(true)}}})
	c.EnvFrom = append(c.EnvFrom, &corev1.EnvFromSource{Prefix: "DB_", SecretRef: &corev1.SecretEnvSource{Name: "db"}})
	return p
}

func TestPodSecretsDownwardAPIAndProjectedVolumes(t *testing.T) {
	vol := func(s *corev1.PodSpec, name string) *corev1.Volume {
		for _, v := range s.Volumes {
			if v.Name == name {
				return v
			}
		}
		t.Fatalf("no volume %s", name)
		return nil
	}
	// Indexes of the volumes secretsPod adds after nginxPod's three.
	const tls, podinfo, proj = "spec.volumes[3]", "spec.volumes[4]", "spec.volumes[5]"
	env := func(s *corev1.PodSpec) *corev1.EnvVar { c := s.Containers[0]; return c.Env[len(c.Env)-1] }
	envFrom := func(s *corev1.PodSpec) *corev1.EnvFromSource {
		c := s.Containers[0]
		return c.EnvFrom[len(c.EnvFrom)-1]
	}
	sources := func(s *corev1.PodSpec) []*corev1.VolumeProjection { return vol(s, "all-in-one").Projected.Sources }
	cases := []struct {
		name   string
		mutate func(s *corev1.PodSpec)
		want   []string
	}{
		{"valid", func(s *corev1.PodSpec) {}, nil},

		// secret volumes
		{"secret volume and emptyDir", func(s *corev1.PodSpec) { vol(s, "tls").EmptyDir = &corev1.EmptyDirVolumeSource{} },
			[]string{tls + ".secret: Forbidden"}},
		{"secretName missing", func(s *corev1.PodSpec) { vol(s, "tls").Secret.SecretName = "" }, []string{tls + ".secret.secretName: Required value"}},
		{"secret defaultMode above 0777", func(s *corev1.PodSpec) { vol(s, "tls").Secret.DefaultMode = ptr[int32](0o1777) },
			[]string{tls + ".secret.defaultMode: Invalid value"}},
		{"secret item mode negative", func(s *corev1.PodSpec) { vol(s, "tls").Secret.Items[1].Mode = ptr[int32](-1) },
			[]string{tls + ".secret.items[1].mode: Invalid value"}},
		{"secret item key missing", func(s *corev1.PodSpec) { vol(s, "tls").Secret.Items[0].Key = "" },
			[]string{tls + ".secret.items[0].key: Required value"}},
		{"secret item path missing", func(s *corev1.PodSpec) { vol(s, "tls").Secret.Items[0].Path = "" },
			[]string{tls + ".secret.items[0].path: Required value"}},
		{"secret item path absolute", func(s *corev1.PodSpec) { vol(s, "tls").Secret.Items[0].Path = "/etc/tls.crt" },
			[]string{tls + ".secret.items[0].path: Invalid value"}},
		{"secret item path escapes", func(s *corev1.PodSpec) { vol(s, "tls").Secret.Items[0].Path = "certs/../../tls.crt" },
			[]string{tls + ".secret.items[0].path: Invalid value"}},
		{"secret item path reserved", func(s *corev1.PodSpec) { vol(s, "tls").Secret.Items[0].Path = "..data" },
			[]string{tls + ".secret.items[0].path: Invalid value"}},
		{"secret item paths clash", func(s *corev1.PodSpec) { vol(s, "tls").Secret.Items[1].Path = "certs//tls.crt" },
			[]string{tls + ".secret.items[1].path: Invalid value"}},

		// downwardAPI volumes
		{"downwardAPI path missing", func(s *corev1.PodSpec) { vol(s, "podinfo").DownwardApi.Items[0].Path = "" },
			[]string{podinfo + ".downwardAPI.items[0].path: Required value"}},
		{"downwardAPI neither fieldRef nor resourceFieldRef", func(s *corev1.PodSpec) { vol(s, "podinfo").DownwardApi.Items[0].FieldRef = nil },
			[]string{podinfo + ".downwardAPI.items[0]: Required value"}},
		{"downwardAPI fieldRef and resourceFieldRef", func(s *corev1.PodSpec) {
			vol(s, "podinfo").DownwardApi.Items[2].FieldRef = &corev1.ObjectFieldSelector{ApiVersion: "v1", FieldPath: "metadata.name"}
		}, []string{podinfo + ".downwardAPI.items[2]: Invalid value"}},
		{"downwardAPI file of spec.nodeName", func(s *corev1.PodSpec) { vol(s, "podinfo").DownwardApi.Items[0].FieldRef.FieldPath = "spec.nodeName" },
			[]string{podinfo + ".downwardAPI.items[0].fieldRef.fieldPath: Unsupported value"}},
		{"downwardAPI file of the uid, annotations, namespace", func(s *corev1.PodSpec) {
			d := vol(s, "podinfo").DownwardApi
			d.Items = append(d.Items,
				&corev1.DownwardAPIVolumeFile{Path: "uid", FieldRef: &corev1.ObjectFieldSelector{ApiVersion: "v1", FieldPath: "metadata.uid"}},
				&corev1.DownwardAPIVolumeFile{Path: "annotations", FieldRef: &corev1.ObjectFieldSelector{ApiVersion: "v1", FieldPath: "metadata.annotations"}},
				&corev1.DownwardAPIVolumeFile{Path: "build", FieldRef: &corev1.ObjectFieldSelector{ApiVersion: "v1", FieldPath: "metadata.annotations['example.com/build']"}},
				&corev1.DownwardAPIVolumeFile{Path: "ns", FieldRef: &corev1.ObjectFieldSelector{ApiVersion: "v1", FieldPath: "metadata.namespace"}})
		}, nil},
		{"downwardAPI label subscript invalid", func(s *corev1.PodSpec) {
			vol(s, "podinfo").DownwardApi.Items[1].FieldRef.FieldPath = "metadata.labels['a b']"
		},
			[]string{podinfo + ".downwardAPI.items[1].fieldRef.fieldPath: Invalid value"}},
		{"downwardAPI resourceFieldRef without containerName", func(s *corev1.PodSpec) {
			vol(s, "podinfo").DownwardApi.Items[2].ResourceFieldRef.ContainerName = ""
		}, []string{podinfo + ".downwardAPI.items[2].resourceFieldRef.containerName: Required value"}},
		{"downwardAPI mode too big", func(s *corev1.PodSpec) { vol(s, "podinfo").DownwardApi.Items[0].Mode = ptr[int32](0o1000) },
			[]string{podinfo + ".downwardAPI.items[0].mode: Invalid value"}},
		{"downwardAPI path with ..", func(s *corev1.PodSpec) { vol(s, "podinfo").DownwardApi.Items[0].Path = "../labels" },
			[]string{podinfo + ".downwardAPI.items[0].path: Invalid value"}},

		// projected volumes
		{"projected source with two kinds", func(s *corev1.PodSpec) {
			sources(s)[0].ConfigMap = &corev1.ConfigMapProjection{Name: "x"}
		}, []string{proj + ".projected.sources[0]: Forbidden"}},
		{"projected source empty", func(s *corev1.PodSpec) { sources(s)[1] = &corev1.VolumeProjection{} },
			[]string{proj + ".projected.sources[1]: Required value"}},
		{"projected secret name missing", func(s *corev1.PodSpec) { sources(s)[0].Secret.Name = "" },
			[]string{proj + ".projected.sources[0].secret.name: Required value"}},
		{"projected configMap name missing", func(s *corev1.PodSpec) { sources(s)[1].ConfigMap.Name = "" },
			[]string{proj + ".projected.sources[1].configMap.name: Required value"}},
		{"projected paths clash across sources", func(s *corev1.PodSpec) { sources(s)[1].ConfigMap.Items[0].Path = "db/password" },
			[]string{proj + ".projected.sources[1].configMap.items[0].path: Invalid value"}},
		{"projected downwardAPI path clashes with the token", func(s *corev1.PodSpec) { sources(s)[2].DownwardApi.Items[0].Path = "token" },
			[]string{proj + ".projected.sources[3].serviceAccountToken.path: Invalid value"}},
		{"token path missing", func(s *corev1.PodSpec) { sources(s)[3].ServiceAccountToken.Path = "" },
			[]string{proj + ".projected.sources[3].serviceAccountToken.path: Required value"}},
		{"token path absolute", func(s *corev1.PodSpec) { sources(s)[3].ServiceAccountToken.Path = "/var/run/token" },
			[]string{proj + ".projected.sources[3].serviceAccountToken.path: Invalid value"}},
		{"token lifetime under 10 minutes", func(s *corev1.PodSpec) { sources(s)[3].ServiceAccountToken.ExpirationSeconds = ptr[int64](599) },
			[]string{proj + ".projected.sources[3].serviceAccountToken.expirationSeconds: Invalid value"}},
		{"token lifetime of exactly 10 minutes", func(s *corev1.PodSpec) { sources(s)[3].ServiceAccountToken.ExpirationSeconds = ptr[int64](600) }, nil},
		{"token lifetime of 2^32 s", func(s *corev1.PodSpec) { sources(s)[3].ServiceAccountToken.ExpirationSeconds = ptr[int64](1 << 32) }, nil},
		{"token lifetime above 2^32 s", func(s *corev1.PodSpec) { sources(s)[3].ServiceAccountToken.ExpirationSeconds = ptr[int64](1<<32 + 1) },
			[]string{proj + ".projected.sources[3].serviceAccountToken.expirationSeconds: Invalid value"}},
		{"token lifetime defaulted", func(s *corev1.PodSpec) { sources(s)[3].ServiceAccountToken.ExpirationSeconds = nil }, nil},
		{"projected defaultMode negative", func(s *corev1.PodSpec) { vol(s, "all-in-one").Projected.DefaultMode = ptr[int32](-1) },
			[]string{proj + ".projected.defaultMode: Invalid value"}},
		{"projected and secret", func(s *corev1.PodSpec) { vol(s, "all-in-one").Secret = &corev1.SecretVolumeSource{SecretName: "x"} },
			[]string{proj + ".projected: Forbidden"}},

		// env
		{"secretKeyRef name missing", func(s *corev1.PodSpec) { env(s).ValueFrom.SecretKeyRef.Name = "" },
			[]string{"spec.containers[0].env[5].valueFrom.secretKeyRef.name: Required value"}},
		{"secretKeyRef key missing", func(s *corev1.PodSpec) { env(s).ValueFrom.SecretKeyRef.Key = "" },
			[]string{"spec.containers[0].env[5].valueFrom.secretKeyRef.key: Required value"}},
		{"secretKeyRef key invalid", func(s *corev1.PodSpec) { env(s).ValueFrom.SecretKeyRef.Key = "db/password" },
			[]string{"spec.containers[0].env[5].valueFrom.secretKeyRef.key: Invalid value"}},
		{"secretKeyRef and configMapKeyRef", func(s *corev1.PodSpec) {
			env(s).ValueFrom.ConfigMapKeyRef = &corev1.ConfigMapKeySelector{Name: "cfg", Key: "k"}
		}, []string{"spec.containers[0].env[5].valueFrom: Invalid value"}},
		{"env fieldRef of the uid, service account, node and IPs", func(s *corev1.PodSpec) {
			c := s.Containers[0]
			for i, fp := range []string{"metadata.uid", "spec.serviceAccountName", "spec.nodeName", "status.podIP", "status.podIPs", "status.hostIP", "status.hostIPs"} {
				c.Env = append(c.Env, &corev1.EnvVar{Name: "F" + string(rune('A'+i)), ValueFrom: &corev1.EnvVarSource{
					FieldRef: &corev1.ObjectFieldSelector{ApiVersion: "v1", FieldPath: fp}}})
			}
		}, nil},
		{"env fieldRef of all labels", func(s *corev1.PodSpec) {
			env(s).ValueFrom = &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{ApiVersion: "v1", FieldPath: "metadata.labels"}}
		}, []string{"spec.containers[0].env[5].valueFrom.fieldRef.fieldPath: Unsupported value"}},
		{"envFrom secretRef name missing", func(s *corev1.PodSpec) { envFrom(s).SecretRef.Name = "" },
			[]string{"spec.containers[0].envFrom[1].secretRef.name: Required value"}},
		{"envFrom secretRef name invalid", func(s *corev1.PodSpec) { envFrom(s).SecretRef.Name = "DB" },
			[]string{"spec.containers[0].envFrom[1].secretRef.name: Invalid value"}},
		{"envFrom secretRef and configMapRef", func(s *corev1.PodSpec) { envFrom(s).ConfigMapRef = &corev1.ConfigMapEnvSource{Name: "cfg"} },
			[]string{"spec.containers[0].envFrom[1]: Forbidden"}},
		{"envFrom neither", func(s *corev1.PodSpec) { envFrom(s).SecretRef = nil }, []string{"spec.containers[0].envFrom[1]: Invalid value"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := secretsPod()
			c.mutate(p.Spec)
			expectErrors(t, validation.Pod(p), c.want)
		})
	}
}
