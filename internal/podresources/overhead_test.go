package podresources

import (
	"testing"

	corev1 "skiff.dev/proto/core/v1"
)

// TestOverhead: a pod's overhead (set by the RuntimeClass admission plugin)
// adds to its requests, and to its limits only for the resources some
// container limits, as Kubernetes' PodRequests and PodLimits.
func TestOverhead(t *testing.T) {
	app := &corev1.Container{Name: "app", Resources: &corev1.ResourceRequirements{
		Requests: map[string]string{"cpu": "500m", "memory": "128Mi"}, Limits: map[string]string{"memory": "256Mi"}}}
	spec := &corev1.PodSpec{Containers: []*corev1.Container{app}, Overhead: map[string]string{"cpu": "250m", "memory": "120Mi", "example.com/gpu-share": "1"}}
	req, err := Requests(spec)
	if err != nil {
		t.Fatal(err)
	}
	if req["cpu"].MilliValue() != 750 || req["memory"].String() != "248Mi" || req["example.com/gpu-share"].Value() != 1 {
		t.Errorf("requests %v", req)
	}
	lim, err := Limits(spec)
	if err != nil {
		t.Fatal(err)
	}
	if len(lim) != 1 || lim["memory"].String() != "376Mi" {
		t.Errorf("limits %v: want memory's only, with the overhead", lim)
	}

	spec.Overhead = map[string]string{"cpu": "lots"}
	if _, err := Requests(spec); err == nil {
		t.Errorf("an unparsable overhead gave no error")
	}
}
