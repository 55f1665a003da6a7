package quota

import (
	"testing"

	corev1 "skiff.dev/proto/core/v1"
)

// TestUsageCountsOverhead: a pod's overhead is charged to its quota with
// its requests, and to limits where the pod has one, as Kubernetes'.
func TestUsageCountsOverhead(t *testing.T) {
	p := &corev1.Pod{Spec: &corev1.PodSpec{
		Containers: []*corev1.Container{{Name: "app", Resources: &corev1.ResourceRequirements{
			Requests: map[string]string{"cpu": "500m", "memory": "64Mi"}, Limits: map[string]string{"memory": "64Mi"}}}},
		Overhead: map[string]string{"cpu": "250m", "memory": "16Mi"},
	}}
	u := Usage("", "pods", p)
	for key, want := range map[string]string{RequestsCPU: "750m", RequestsMemory: "80Mi", LimitsMemory: "80Mi", LimitsCPU: "0"} {
		if got := u[key]; got.String() != want {
			t.Errorf("%s = %s, want %s", key, got.String(), want)
		}
	}
}
