package validation_test

import (
	"strings"
	"testing"

	"skiff.dev/internal/validation"
	corev1 "skiff.dev/proto/core/v1"
)

// Native sidecars: restartPolicy Always on an init container, with
// Kubernetes' paths and messages.
func TestSidecarRules(t *testing.T) {
	probe := func() *corev1.Probe {
		return &corev1.Probe{TcpSocket: &corev1.TCPSocketAction{Port: intOr(15021)},
			TimeoutSeconds: 1, PeriodSeconds: 10, SuccessThreshold: 1, FailureThreshold: 3}
	}
	cases := []struct {
		name   string
		mutate func(s *corev1.PodSpec)
		want   []string
		detail string // of the first wanted error, when set
	}{
		{"a sidecar", func(s *corev1.PodSpec) { s.InitContainers[0].RestartPolicy = ptr("Always") }, nil, ""},
		{"a sidecar with every probe", func(s *corev1.PodSpec) {
			ic := s.InitContainers[0]
			ic.RestartPolicy = ptr("Always")
			ic.LivenessProbe, ic.ReadinessProbe, ic.StartupProbe = probe(), probe(), probe()
		}, nil, ""},
		{"a sidecar's probes are checked as a container's", func(s *corev1.PodSpec) {
			ic := s.InitContainers[0]
			ic.RestartPolicy = ptr("Always")
			ic.LivenessProbe, ic.StartupProbe = probe(), probe()
			ic.LivenessProbe.SuccessThreshold = 2
			ic.StartupProbe.TcpSocket = nil
		}, []string{"spec.initContainers[0].livenessProbe.successThreshold: Invalid value", "spec.initContainers[0].startupProbe: Required value"}, "must be 1"},
		{"restartPolicy on an app container", func(s *corev1.PodSpec) { s.Containers[0].RestartPolicy = ptr("Always") },
			[]string{"spec.containers[0].restartPolicy: Forbidden"}, "may not be set for non-init containers"},
		{"restartPolicy Never on an init container", func(s *corev1.PodSpec) { s.InitContainers[0].RestartPolicy = ptr("Never") },
			[]string{"spec.initContainers[0].restartPolicy: Unsupported value"}, `supported values: "Always"`},
		{"restartPolicy empty on an init container", func(s *corev1.PodSpec) { s.InitContainers[0].RestartPolicy = ptr("") },
			[]string{"spec.initContainers[0].restartPolicy: Unsupported value"}, ""},
		{"probes on a regular init container", func(s *corev1.PodSpec) {
			ic := s.InitContainers[0]
			ic.LivenessProbe, ic.ReadinessProbe, ic.StartupProbe = probe(), probe(), probe()
		}, []string{"spec.initContainers[0].livenessProbe: Forbidden", "spec.initContainers[0].readinessProbe: Forbidden", "spec.initContainers[0].startupProbe: Forbidden"},
			"may not be set for init containers without restartPolicy=Always"},
		{"a sidecar in a Job's pod (restartPolicy Never)", func(s *corev1.PodSpec) {
			s.RestartPolicy = "Never"
			s.InitContainers[0].RestartPolicy = ptr("Always")
		}, nil, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := nginxPod()
			c.mutate(p.Spec)
			errs := validation.Pod(p)
			expectErrors(t, errs, c.want)
			if c.detail != "" {
				expectDetail(t, errs, c.want[0][:strings.LastIndex(c.want[0], ": ")], c.detail)
			}
		})
	}
}
