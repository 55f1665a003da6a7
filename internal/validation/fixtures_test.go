package validation_test

import (
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	"skiff.dev/internal/defaults"
	"skiff.dev/internal/field"
	appsv1 "skiff.dev/proto/apps/v1"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
)

func ptr[T any](v T) *T { return &v }

func intOr(i int32) *metav1.IntOrString {
	return &metav1.IntOrString{Value: &metav1.IntOrString_IntVal{IntVal: i}}
}

func strOr(s string) *metav1.IntOrString {
	return &metav1.IntOrString{Value: &metav1.IntOrString_StrVal{StrVal: s}}
}

// nginxDeployment is the Kubernetes documentation's nginx Deployment,
// grown into what a production manifest carries: resources, probes, env
// from every source, volumes, an init container, scheduling constraints and
// a rolling strategy. It is valid once defaulted.
func nginxDeployment() *appsv1.Deployment {
	d := &appsv1.Deployment{
		ApiVersion: "apps/v1",
		Kind:       "Deployment",
		Metadata: &metav1.ObjectMeta{
			Name:        "nginx-deployment",
			Namespace:   "default",
			Labels:      map[string]string{"app": "nginx"},
			Annotations: map[string]string{"kubernetes.io/change-cause": "kubectl apply --filename=nginx.yaml"},
		},
		Spec: &appsv1.DeploymentSpec{
			Replicas: ptr[int32](3),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "nginx"}},
			Template: &corev1.PodTemplateSpec{
				Metadata: &metav1.ObjectMeta{Labels: map[string]string{"app": "nginx", "tier": "frontend"}},
				Spec:     nginxPodSpec(),
			},
			Strategy: &appsv1.DeploymentStrategy{
				Type:          "RollingUpdate",
				RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: strOr("25%"), MaxUnavailable: intOr(1)},
			},
			MinReadySeconds: 5,
		},
	}
	defaults.Deployment(d)
	return d
}

func nginxPodSpec() *corev1.PodSpec {
	return &corev1.PodSpec{
		Volumes: []*corev1.Volume{
			{Name: "config", ConfigMap: &corev1.ConfigMapVolumeSource{
				Name:  "nginx-config",
				Items: []*corev1.KeyToPath{{Key: "default.conf", Path: "default.conf"}},
			}},
			{Name: "cache", EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: "1Gi"}},
			{Name: "logs", HostPath: &corev1.HostPathVolumeSource{Path: "/var/log/nginx", Type: "DirectoryOrCreate"}},
		},
		InitContainers: []*corev1.Container{{
			Name:         "init-cache",
			Image:        "busybox:1.36",
			Command:      []string{"sh", "-c", "mkdir -p /var/cache/nginx/client_temp"},
			VolumeMounts: []*corev1.VolumeMount{{Name: "cache", MountPath: "/var/cache/nginx"}},
		}},
		Containers: []*corev1.Container{{
			Name:  "nginx",
			Image: "nginx:1.14.2",
			Ports: []*corev1.ContainerPort{{Name: "http", ContainerPort: 80}, {Name: "metrics", ContainerPort: 9113}},
			Env: []*corev1.EnvVar{
				{Name: "NGINX_PORT", Value: "80"},
				{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
				{Name: "APP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels['app']"}}},
				{Name: "CPU_LIMIT_MILLIS", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "limits.cpu", Divisor: "1m"}}},
				{Name: "LOG_LEVEL", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{Name: "nginx-config", Key: "log.level"}}},
			},
			EnvFrom: []*corev1.EnvFromSource{{Prefix: "NGINX_", ConfigMapRef: &corev1.ConfigMapEnvSource{Name: "nginx-env"}}},
			Resources: &corev1.ResourceRequirements{
				Requests: map[string]string{"cpu": "250m", "memory": "64Mi"},
				Limits:   map[string]string{"cpu": "500m", "memory": "128Mi", "ephemeral-storage": "2Gi"},
			},
			VolumeMounts: []*corev1.VolumeMount{
				{Name: "config", MountPath: "/etc/nginx/conf.d", ReadOnly: true},
				{Name: "cache", MountPath: "/var/cache/nginx"},
				{Name: "logs", MountPath: "/var/log/nginx", SubPath: "access"},
			},
			LivenessProbe: &corev1.Probe{
				HttpGet:             &corev1.HTTPGetAction{Path: "/healthz", Port: strOr("http"), HttpHeaders: []*corev1.HTTPHeader{{Name: "X-Probe", Value: "liveness"}}},
				InitialDelaySeconds: 3,
				PeriodSeconds:       3,
			},
			ReadinessProbe: &corev1.Probe{TcpSocket: &corev1.TCPSocketAction{Port: intOr(80)}, PeriodSeconds: 5},
			StartupProbe:   &corev1.Probe{Exec: &corev1.ExecAction{Command: []string{"nginx", "-t"}}, FailureThreshold: 30},
			SecurityContext: &corev1.SecurityContext{
				RunAsUser:                ptr[int64](101),
				AllowPrivilegeEscalation: ptr(false),
				ReadOnlyRootFilesystem:   ptr(true),
			},
		}},
		NodeSelector: map[string]string{"kubernetes.io/os": "linux"},
		Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []*corev1.NodeSelectorTerm{{
				MatchExpressions: []*corev1.NodeSelectorRequirement{
					{Key: "kubernetes.io/arch", Operator: "In", Values: []string{"amd64", "arm64"}},
					{Key: "example.com/cores", Operator: "Gt", Values: []string{"2"}},
				},
			}}},
			PreferredDuringSchedulingIgnoredDuringExecution: []*corev1.PreferredSchedulingTerm{{
				Weight:     50,
				Preference: &corev1.NodeSelectorTerm{MatchExpressions: []*corev1.NodeSelectorRequirement{{Key: "node-role.kubernetes.io/edge", Operator: "DoesNotExist"}}},
			}},
		}},
		Tolerations: []*corev1.Toleration{
			{Key: "node.kubernetes.io/not-ready", Operator: "Exists", Effect: "NoExecute", TolerationSeconds: ptr[int64](300)},
			{Key: "dedicated", Operator: "Equal", Value: "web", Effect: "NoSchedule"},
		},
		TopologySpreadConstraints: []*corev1.TopologySpreadConstraint{{
			MaxSkew:           1,
			TopologyKey:       "topology.kubernetes.io/zone",
			WhenUnsatisfiable: "ScheduleAnyway",
			LabelSelector:     &metav1.LabelSelector{MatchLabels: map[string]string{"app": "nginx"}},
		}},
		SecurityContext:    &corev1.PodSecurityContext{RunAsNonRoot: ptr(true), FsGroup: ptr[int64](101)},
		ServiceAccountName: "nginx",
		PriorityClassName:  "web-critical",
	}
}

// nginxPod is a pod of the nginx Deployment, as its ReplicaSet makes it.
func nginxPod() *corev1.Pod {
	p := &corev1.Pod{
		ApiVersion: "v1",
		Kind:       "Pod",
		Metadata: &metav1.ObjectMeta{
			Name:      "nginx-deployment-7c5ddbdf54-x2k9q",
			Namespace: "default",
			Labels:    map[string]string{"app": "nginx", "tier": "frontend", "pod-template-hash": "7c5ddbdf54"},
			OwnerReferences: []*metav1.OwnerReference{{
				ApiVersion: "apps/v1", Kind: "ReplicaSet", Name: "nginx-deployment-7c5ddbdf54",
				Uid: "1c7e4a3e-8b1e-4c57-9f0e-2c0f1f3a9b10", Controller: ptr(true), BlockOwnerDeletion: ptr(true),
			}},
		},
		Spec: nginxPodSpec(),
	}
	defaults.Pod(p)
	return p
}

// expectErrors fails unless errs reports exactly the wanted problems, each
// written "<field path>: <error type>" (e.g. "spec.replicas: Invalid value").
func expectErrors(t *testing.T, errs field.ErrorList, want []string) {
	t.Helper()
	got := make([]string, len(errs))
	for i, e := range errs {
		got[i] = e.Field + ": " + e.Type.String()
	}
	slices.Sort(got)
	want = slices.Clone(want)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		lines := make([]string, len(errs))
		for i, e := range errs {
			lines[i] = "  " + e.Error()
		}
		t.Fatalf("errors:\n  got  %q\n  want %q\nfull:\n%s", got, want, strings.Join(lines, "\n"))
	}
}

// expectDetail fails unless some error at path has detail containing sub.
func expectDetail(t *testing.T, errs field.ErrorList, path, sub string) {
	t.Helper()
	for _, e := range errs {
		if e.Field == path && strings.Contains(e.Detail, sub) {
			return
		}
	}
	t.Fatalf("no error at %s with detail containing %q in: %v", path, sub, errs)
}

// unchanged fails if validation modified its argument.
func unchanged(t *testing.T, before, after proto.Message) {
	t.Helper()
	if !proto.Equal(before, after) {
		t.Fatalf("validation modified its argument")
	}
}
