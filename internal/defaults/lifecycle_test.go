package defaults_test

import (
	"testing"

	"skiff.dev/internal/defaults"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
)

// Hooks' httpGet actions default as probes' do; a grpc probe's service
// defaults to "" (set), as in Kubernetes.
func TestLifecycleAndGRPCDefaults(t *testing.T) {
	c := &corev1.Container{Name: "web", Image: "nginx:1",
		Lifecycle: &corev1.Lifecycle{
			PostStart: &corev1.LifecycleHandler{HttpGet: &corev1.HTTPGetAction{}},
			PreStop:   &corev1.LifecycleHandler{HttpGet: &corev1.HTTPGetAction{Path: "/quit", Scheme: "HTTPS"}},
		},
		LivenessProbe: &corev1.Probe{Grpc: &corev1.GRPCAction{Port: 9090}},
		StartupProbe:  &corev1.Probe{Grpc: &corev1.GRPCAction{Port: 9090, Service: ptr("db")}},
	}
	p := &corev1.Pod{Metadata: &metav1.ObjectMeta{Name: "p", Namespace: "default"}, Spec: &corev1.PodSpec{Containers: []*corev1.Container{c}}}
	defaults.Pod(p)
	for _, ch := range []struct{ name, got, want string }{
		{"postStart path", c.Lifecycle.PostStart.HttpGet.Path, "/"},
		{"postStart scheme", c.Lifecycle.PostStart.HttpGet.Scheme, "HTTP"},
		{"preStop path kept", c.Lifecycle.PreStop.HttpGet.Path, "/quit"},
		{"preStop scheme kept", c.Lifecycle.PreStop.HttpGet.Scheme, "HTTPS"},
		{"grpc service", c.LivenessProbe.Grpc.GetService(), ""},
		{"grpc service kept", c.StartupProbe.Grpc.GetService(), "db"},
	} {
		if ch.got != ch.want {
			t.Errorf("%s = %q, want %q", ch.name, ch.got, ch.want)
		}
	}
	if c.LivenessProbe.Grpc.Service == nil {
		t.Error("grpc service left unset")
	}
}
