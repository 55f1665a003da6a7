package framework_test

import (
	"testing"

	corev1 "skiff.dev/proto/core/v1"
	"skiff.dev/services/scheduler/framework"
)

// TestPodInfoCountsSidecars: a sidecar (an init container with
// restartPolicy Always) keeps running beside the containers, so the
// scheduler counts it with them (podresources.Requests).
func TestPodInfoCountsSidecars(t *testing.T) {
	always := "Always"
	req := func(cpu string) *corev1.ResourceRequirements {
		return &corev1.ResourceRequirements{Requests: map[string]string{"cpu": cpu, "example.com/dev": "1"}}
	}
	pi := framework.NewPodInfo(&corev1.Pod{Spec: &corev1.PodSpec{
		InitContainers: []*corev1.Container{
			{Name: "init", Resources: req("500m")},
			{Name: "proxy", RestartPolicy: &always, Resources: req("250m")},
		},
		Containers: []*corev1.Container{{Name: "app", Resources: req("1")}},
	}})
	if pi.ParseError != nil {
		t.Fatal(pi.ParseError)
	}
	if got := pi.Requests.MilliCPU; got != 1250 {
		t.Errorf("MilliCPU = %d, want 1250 (app and its sidecar)", got)
	}
	if got := pi.Requests.Scalar["example.com/dev"]; got != 2000 {
		t.Errorf("example.com/dev = %d milli-units, want 2000", got)
	}
	if pi.Requests.AllowedPodNumber != 1 || pi.NonZeroCPU != 1250 {
		t.Errorf("AllowedPodNumber %d, NonZeroCPU %d; want 1, 1250", pi.Requests.AllowedPodNumber, pi.NonZeroCPU)
	}
}
