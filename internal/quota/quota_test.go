package quota

import (
	"maps"
	"slices"
	"testing"

	"google.golang.org/protobuf/proto"

	"skiff.dev/internal/quantity"
	appsv1 "skiff.dev/proto/apps/v1"
	corev1 "skiff.dev/proto/core/v1"
)

func q(s string) quantity.Quantity { return quantity.MustParse(s) }

func strs(u map[string]quantity.Quantity) map[string]string {
	out := map[string]string{}
	for k, v := range u {
		out[k] = v.String()
	}
	return out
}

func container(name string, requests, limits map[string]string) *corev1.Container {
	return &corev1.Container{Name: name, Resources: &corev1.ResourceRequirements{Requests: requests, Limits: limits}}
}

func sidecar(name string, requests, limits map[string]string) *corev1.Container {
	c := container(name, requests, limits)
	c.RestartPolicy = proto.String("Always")
	return c
}

func TestUsage(t *testing.T) {
	pod := &corev1.Pod{Spec: &corev1.PodSpec{
		Containers: []*corev1.Container{
			container("web", map[string]string{"cpu": "250m", "memory": "64Mi"}, map[string]string{"cpu": "500m", "memory": "128Mi"}),
			container("side", map[string]string{"cpu": "250m"}, map[string]string{"cpu": "1"}),
		},
		InitContainers: []*corev1.Container{container("init", map[string]string{"cpu": "2"}, nil)},
	}}
	cases := []struct {
		name            string
		group, resource string
		obj             proto.Message
		want            map[string]string
	}{
		{"a pod: counts, and requests (the larger of the sum and the init container) and limits", "", "pods", pod, map[string]string{
			"pods": "1", "count/pods": "1", "requests.cpu": "2", "cpu": "2", "requests.memory": "64Mi", "memory": "64Mi", "limits.cpu": "1500m", "limits.memory": "128Mi"}},
		{"a pod with a sidecar: it counts with the containers", "", "pods", &corev1.Pod{Spec: &corev1.PodSpec{
			Containers:     []*corev1.Container{container("web", map[string]string{"cpu": "250m"}, map[string]string{"cpu": "500m"})},
			InitContainers: []*corev1.Container{sidecar("proxy", map[string]string{"cpu": "100m", "memory": "32Mi"}, map[string]string{"cpu": "200m"})},
		}}, map[string]string{
			"pods": "1", "count/pods": "1", "requests.cpu": "350m", "cpu": "350m", "requests.memory": "32Mi", "memory": "32Mi", "limits.cpu": "700m", "limits.memory": "0"}},
		{"a pod without resources uses 0 of them", "", "pods", &corev1.Pod{}, map[string]string{
			"pods": "1", "count/pods": "1", "requests.cpu": "0", "cpu": "0", "requests.memory": "0", "memory": "0", "limits.cpu": "0", "limits.memory": "0"}},
		{"a finished pod uses nothing", "", "pods", &corev1.Pod{Status: &corev1.PodStatus{Phase: "Succeeded"}}, map[string]string{}},
		{"a configmap", "", "configmaps", &corev1.ConfigMap{}, map[string]string{"configmaps": "1", "count/configmaps": "1"}},
		{"a core kind without a bare count name", "", "events", &corev1.Event{}, map[string]string{"count/events": "1"}},
		{"a grouped kind", "apps", "deployments", &appsv1.Deployment{}, map[string]string{"count/deployments.apps": "1"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := strs(Usage(tc.group, tc.resource, tc.obj))
			if !maps.Equal(got, tc.want) {
				t.Errorf("Usage = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestCoveredAndMissingRequests(t *testing.T) {
	usage := map[string]quantity.Quantity{"pods": q("1"), "count/pods": q("1"), "requests.cpu": q("100m")}
	if got := Covered(map[string]string{"configmaps": "5"}, usage); got != nil {
		t.Errorf("a quota of configmaps covers a pod: %v", got)
	}
	if got := Covered(map[string]string{"pods": "5", "requests.memory": "1Gi"}, usage); len(got) != 1 || got["pods"].Cmp(q("1")) != 0 {
		t.Errorf("Covered = %v, want pods=1 only", got)
	}
	pod := &corev1.Pod{Spec: &corev1.PodSpec{Containers: []*corev1.Container{
		container("web", map[string]string{"cpu": "1"}, nil),
		container("side", nil, nil),
	}}}
	got := MissingRequests(map[string]string{"requests.cpu": "4", "memory": "1Gi", "limits.cpu": "8", "pods": "10"}, pod)
	want := []string{"limits.cpu for: web,side", "requests.cpu for: side", "requests.memory for: web,side"}
	if !slices.Equal(got, want) {
		t.Errorf("MissingRequests = %q, want %q", got, want)
	}
	if got := MissingRequests(map[string]string{"pods": "10"}, pod); len(got) != 0 {
		t.Errorf("a count quota needs no requests: %q", got)
	}
}

func TestExceededAndAdd(t *testing.T) {
	hard := map[string]string{"pods": "10", "requests.cpu": "2"}
	cases := []struct {
		name          string
		used          map[string]string
		delta         map[string]quantity.Quantity
		over, unknown []string
		after         map[string]string
	}{
		{"fits", map[string]string{"pods": "9", "requests.cpu": "1"}, map[string]quantity.Quantity{"pods": q("1"), "requests.cpu": q("500m")},
			nil, nil, map[string]string{"pods": "10", "requests.cpu": "1500m"}},
		{"one over", map[string]string{"pods": "10", "requests.cpu": "1"}, map[string]quantity.Quantity{"pods": q("1"), "requests.cpu": q("500m")},
			[]string{"pods"}, nil, nil},
		{"both over, sorted", map[string]string{"pods": "10", "requests.cpu": "2"}, map[string]quantity.Quantity{"requests.cpu": q("1m"), "pods": q("1")},
			[]string{"pods", "requests.cpu"}, nil, nil},
		{"unknown usage", map[string]string{"pods": "1"}, map[string]quantity.Quantity{"pods": q("1"), "requests.cpu": q("1")},
			nil, []string{"requests.cpu"}, nil},
		{"resources the quota does not limit are ignored", map[string]string{"pods": "0", "requests.cpu": "0"}, map[string]quantity.Quantity{"pods": q("1"), "limits.cpu": q("100")},
			nil, nil, map[string]string{"pods": "1", "requests.cpu": "0"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			over, unknown := Exceeded(hard, tc.used, tc.delta)
			if !slices.Equal(over, tc.over) || !slices.Equal(unknown, tc.unknown) {
				t.Fatalf("Exceeded = over %v unknown %v, want %v %v", over, unknown, tc.over, tc.unknown)
			}
			if tc.after != nil {
				if got := Add(hard, tc.used, tc.delta); !maps.Equal(got, tc.after) {
					t.Errorf("Add = %v, want %v", got, tc.after)
				}
			}
		})
	}
	if got := Format([]string{"pods", "requests.cpu"}, func(k string) string { return hard[k] }); got != "pods=10,requests.cpu=2" {
		t.Errorf("Format = %q", got)
	}
}
