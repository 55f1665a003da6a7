package qos_test

import (
	"testing"

	"skiff.dev/internal/qos"
	corev1 "skiff.dev/proto/core/v1"
)

func res(req, lim map[string]string) *corev1.ResourceRequirements {
	return &corev1.ResourceRequirements{Requests: req, Limits: lim}
}

func ctr(name string, r *corev1.ResourceRequirements) *corev1.Container {
	return &corev1.Container{Name: name, Image: "x", Resources: r}
}

func TestCompute(t *testing.T) {
	always := "Always"
	full := map[string]string{"cpu": "500m", "memory": "64Mi"}
	for _, tc := range []struct {
		name string
		spec *corev1.PodSpec
		want string
	}{
		{"nothing set", &corev1.PodSpec{Containers: []*corev1.Container{ctr("a", nil)}}, qos.BestEffort},
		{"zero quantities are unset", &corev1.PodSpec{Containers: []*corev1.Container{
			ctr("a", res(map[string]string{"cpu": "0"}, map[string]string{"memory": "0"}))}}, qos.BestEffort},
		{"other resources do not count", &corev1.PodSpec{Containers: []*corev1.Container{
			ctr("a", res(map[string]string{"ephemeral-storage": "1Gi"}, nil))}}, qos.BestEffort},
		{"requests equal limits", &corev1.PodSpec{Containers: []*corev1.Container{ctr("a", res(full, full))}}, qos.Guaranteed},
		{"equal in another notation", &corev1.PodSpec{Containers: []*corev1.Container{
			ctr("a", res(map[string]string{"cpu": "0.5", "memory": "67108864"}, full))}}, qos.Guaranteed},
		{"limits only (requests not defaulted)", &corev1.PodSpec{Containers: []*corev1.Container{ctr("a", res(nil, full))}}, qos.Burstable},
		{"a request below its limit", &corev1.PodSpec{Containers: []*corev1.Container{
			ctr("a", res(map[string]string{"cpu": "100m", "memory": "64Mi"}, full))}}, qos.Burstable},
		{"only a memory limit", &corev1.PodSpec{Containers: []*corev1.Container{
			ctr("a", res(map[string]string{"memory": "64Mi"}, map[string]string{"memory": "64Mi"}))}}, qos.Burstable},
		{"one container of two without limits", &corev1.PodSpec{Containers: []*corev1.Container{
			ctr("a", res(full, full)), ctr("b", nil)}}, qos.Burstable},
		// The sums are compared, as Kubernetes does: 100m+400m requested,
		// 250m+250m limited.
		{"sums equal, containers differ", &corev1.PodSpec{Containers: []*corev1.Container{
			ctr("a", res(map[string]string{"cpu": "100m", "memory": "32Mi"}, map[string]string{"cpu": "250m", "memory": "32Mi"})),
			ctr("b", res(map[string]string{"cpu": "400m", "memory": "32Mi"}, map[string]string{"cpu": "250m", "memory": "32Mi"}))}}, qos.Guaranteed},
		{"an init container without limits", &corev1.PodSpec{
			InitContainers: []*corev1.Container{ctr("init", nil)},
			Containers:     []*corev1.Container{ctr("a", res(full, full))}}, qos.Burstable},
		{"a sidecar without limits", &corev1.PodSpec{
			InitContainers: []*corev1.Container{{Name: "side", Image: "x", RestartPolicy: &always}},
			Containers:     []*corev1.Container{ctr("a", res(full, full))}}, qos.Burstable},
		{"a guaranteed sidecar", &corev1.PodSpec{
			InitContainers: []*corev1.Container{{Name: "side", Image: "x", RestartPolicy: &always, Resources: res(full, full)}},
			Containers:     []*corev1.Container{ctr("a", res(full, full))}}, qos.Guaranteed},
		{"requests in an init container only", &corev1.PodSpec{
			InitContainers: []*corev1.Container{ctr("init", res(map[string]string{"cpu": "1"}, nil))},
			Containers:     []*corev1.Container{ctr("a", nil)}}, qos.Burstable},
		{"overhead does not count", &corev1.PodSpec{Overhead: map[string]string{"cpu": "250m", "memory": "120Mi"},
			Containers: []*corev1.Container{ctr("a", nil)}}, qos.BestEffort},
		{"overhead with guaranteed containers", &corev1.PodSpec{Overhead: map[string]string{"cpu": "250m"},
			Containers: []*corev1.Container{ctr("a", res(full, full))}}, qos.Guaranteed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := qos.Compute(&corev1.Pod{Spec: tc.spec}); got != tc.want {
				t.Errorf("Compute = %s, want %s", got, tc.want)
			}
		})
	}
}

func TestOfReadsTheStatusFirst(t *testing.T) {
	p := &corev1.Pod{Spec: &corev1.PodSpec{Containers: []*corev1.Container{ctr("a", nil)}}}
	if got := qos.Of(p); got != qos.BestEffort {
		t.Errorf("Of without a status = %s", got)
	}
	p.Status = &corev1.PodStatus{QosClass: qos.Burstable}
	if got := qos.Of(p); got != qos.Burstable {
		t.Errorf("Of = %s, want the status' Burstable", got)
	}
}
