package validation_test

import (
	"testing"

	"skiff.dev/internal/validation"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
)

func intPort(p int32) *metav1.IntOrString {
	return &metav1.IntOrString{Value: &metav1.IntOrString_IntVal{IntVal: p}}
}

// Lifecycle hooks and the probes' grpc handler, with Kubernetes' paths and
// messages.
func TestLifecycleAndGRPCRules(t *testing.T) {
	exec := &corev1.ExecAction{Command: []string{"sh", "-c", "true"}}
	cases := []struct {
		name   string
		mutate func(s *corev1.PodSpec)
		want   []string
		detail string // of the first wanted error, when set
	}{
		{"postStart exec and preStop httpGet", func(s *corev1.PodSpec) {
			s.Containers[0].Lifecycle = &corev1.Lifecycle{
				PostStart: &corev1.LifecycleHandler{Exec: exec},
				PreStop:   &corev1.LifecycleHandler{HttpGet: &corev1.HTTPGetAction{Path: "/quit", Port: intPort(80), Scheme: "HTTP"}},
			}
		}, nil, ""},
		{"preStop sleep within the grace period", func(s *corev1.PodSpec) {
			s.Containers[0].Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: 30}}}
		}, nil, ""},
		{"sleep of zero seconds", func(s *corev1.PodSpec) {
			s.Containers[0].Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{}}}
		}, nil, ""},
		{"tcpSocket is accepted, as in Kubernetes", func(s *corev1.PodSpec) {
			s.Containers[0].Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{TcpSocket: &corev1.TCPSocketAction{Port: intPort(80)}}}
		}, nil, ""},
		{"handler without an action", func(s *corev1.PodSpec) {
			s.Containers[0].Lifecycle = &corev1.Lifecycle{PostStart: &corev1.LifecycleHandler{}}
		}, []string{"spec.containers[0].lifecycle.postStart: Required value"}, "must specify a handler type"},
		{"handler with two actions", func(s *corev1.PodSpec) {
			s.Containers[0].Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Exec: exec, Sleep: &corev1.SleepAction{Seconds: 1}}}
		}, []string{"spec.containers[0].lifecycle.preStop.sleep: Forbidden"}, "may not specify more than 1 handler type"},
		{"sleep longer than the grace period", func(s *corev1.PodSpec) {
			s.TerminationGracePeriodSeconds = ptr[int64](10)
			s.Containers[0].Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: 11}}}
		}, []string{"spec.containers[0].lifecycle.preStop.sleep: Invalid value"}, "must be non-negative and less than terminationGracePeriodSeconds (10)"},
		{"negative sleep", func(s *corev1.PodSpec) {
			s.Containers[0].Lifecycle = &corev1.Lifecycle{PostStart: &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: -1}}}
		}, []string{"spec.containers[0].lifecycle.postStart.sleep: Invalid value"}, "must be non-negative"},
		{"exec without a command", func(s *corev1.PodSpec) {
			s.Containers[0].Lifecycle = &corev1.Lifecycle{PostStart: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{}}}
		}, []string{"spec.containers[0].lifecycle.postStart.exec.command: Required value"}, ""},
		{"httpGet hook checked as a probe's", func(s *corev1.PodSpec) {
			s.Containers[0].Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{HttpGet: &corev1.HTTPGetAction{Port: intPort(0), Scheme: "FTP"}}}
		}, []string{
			"spec.containers[0].lifecycle.preStop.httpGet.path: Required value",
			"spec.containers[0].lifecycle.preStop.httpGet.port: Invalid value",
			"spec.containers[0].lifecycle.preStop.httpGet.scheme: Unsupported value",
		}, ""},
		{"init container hooks need restartPolicy Always", func(s *corev1.PodSpec) {
			s.InitContainers[0].Lifecycle = &corev1.Lifecycle{PostStart: &corev1.LifecycleHandler{Exec: exec}}
		}, []string{"spec.initContainers[0].lifecycle: Forbidden"}, "may not be set for init containers without restartPolicy=Always"},
		{"a sidecar's hooks are checked", func(s *corev1.PodSpec) {
			s.InitContainers[0].RestartPolicy = ptr("Always")
			s.InitContainers[0].Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{}}
		}, []string{"spec.initContainers[0].lifecycle.preStop: Required value"}, ""},
		{"grpc probe", func(s *corev1.PodSpec) {
			s.Containers[0].LivenessProbe = &corev1.Probe{Grpc: &corev1.GRPCAction{Port: 9090, Service: ptr("health")},
				TimeoutSeconds: 1, PeriodSeconds: 10, SuccessThreshold: 1, FailureThreshold: 3}
		}, nil, ""},
		{"grpc probe port out of range", func(s *corev1.PodSpec) {
			s.Containers[0].StartupProbe = &corev1.Probe{Grpc: &corev1.GRPCAction{Port: 70000},
				TimeoutSeconds: 1, PeriodSeconds: 10, SuccessThreshold: 1, FailureThreshold: 3}
		}, []string{"spec.containers[0].startupProbe.grpc.port: Invalid value"}, "between 1 and 65535"},
		{"grpc counts as a probe handler", func(s *corev1.PodSpec) {
			s.Containers[0].ReadinessProbe = &corev1.Probe{Grpc: &corev1.GRPCAction{Port: 9090}, Exec: exec,
				TimeoutSeconds: 1, PeriodSeconds: 10, SuccessThreshold: 1, FailureThreshold: 3}
		}, []string{"spec.containers[0].readinessProbe.grpc: Forbidden"}, "may not specify more than 1 handler type"},
		{"terminationMessagePolicy", func(s *corev1.PodSpec) { s.Containers[0].TerminationMessagePolicy = "Sometimes" },
			[]string{"spec.containers[0].terminationMessagePolicy: Unsupported value"}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := nginxPod()
			p.Spec.Containers[0].LivenessProbe, p.Spec.Containers[0].ReadinessProbe, p.Spec.Containers[0].StartupProbe = nil, nil, nil
			c.mutate(p.Spec)
			errs := validation.Pod(p)
			expectErrors(t, errs, c.want)
			if c.detail != "" {
				expectDetail(t, errs, c.want[0][:len(c.want[0])-len(": "+errs[0].Type.String())], c.detail)
			}
		})
	}
}
