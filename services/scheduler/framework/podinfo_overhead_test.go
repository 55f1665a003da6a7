package framework_test

import (
	"testing"

	corev1 "skiff.dev/proto/core/v1"
	"skiff.dev/services/scheduler/framework"
)

// TestPodInfoCountsOverhead: a pod's overhead (its RuntimeClass's, set at
// admission) adds to the requests the scheduler fits and scores, as
// Kubernetes' computePodResourceRequest.
func TestPodInfoCountsOverhead(t *testing.T) {
	pi := framework.NewPodInfo(&corev1.Pod{Spec: &corev1.PodSpec{
		Containers: []*corev1.Container{{Name: "app", Resources: &corev1.ResourceRequirements{Requests: map[string]string{"cpu": "500m"}}}},
		Overhead:   map[string]string{"cpu": "250m", "memory": "120Mi"},
	}})
	if pi.ParseError != nil {
		t.Fatal(pi.ParseError)
	}
	if pi.Requests.MilliCPU != 750 || pi.Requests.Memory != 120<<20 {
		t.Errorf("requests cpu %dm memory %d, want 750m and 120Mi", pi.Requests.MilliCPU, pi.Requests.Memory)
	}
	if pi.NonZeroCPU != 750 || pi.NonZeroMemory != 120<<20 {
		t.Errorf("non-zero cpu %d memory %d", pi.NonZeroCPU, pi.NonZeroMemory)
	}
}
