package validation

import (
	"strings"
	"testing"

	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
)

func resourcesPod(containers ...*corev1.Container) *corev1.Pod {
	return &corev1.Pod{Metadata: &metav1.ObjectMeta{Name: "web"}, Spec: &corev1.PodSpec{Containers: containers}}
}

func withResources(name string, requests, limits map[string]string) *corev1.Container {
	return &corev1.Container{Name: name, Resources: &corev1.ResourceRequirements{Requests: requests, Limits: limits}}
}

func limitRange(items ...*corev1.LimitRangeItem) *corev1.LimitRange {
	return &corev1.LimitRange{Spec: &corev1.LimitRangeSpec{Limits: items}}
}

func TestPodLimitRange(t *testing.T) {
	cpu := func(v string) map[string]string { return map[string]string{"cpu": v} }
	cases := []struct {
		name string
		pod  *corev1.Pod
		lr   *corev1.LimitRange
		want []string // substrings of the errors, in order; none: valid
	}{
		{"within bounds",
			resourcesPod(withResources("web", cpu("500m"), cpu("1"))),
			limitRange(&corev1.LimitRangeItem{Type: "Container", Min: cpu("100m"), Max: cpu("1"), MaxLimitRequestRatio: cpu("2")}), nil},
		{"over the container maximum",
			resourcesPod(withResources("a", cpu("500m"), cpu("500m")), withResources("b", cpu("2"), cpu("2"))),
			limitRange(&corev1.LimitRangeItem{Type: "Container", Max: cpu("1")}),
			[]string{"spec.containers[1].resources.limits.cpu: Forbidden: maximum cpu usage per Container is 1, but limit is 2",
				"spec.containers[1].resources.requests.cpu: Forbidden: maximum cpu usage per Container is 1, but request is 2"}},
		{"no limit under a maximum",
			resourcesPod(withResources("a", cpu("500m"), nil)),
			limitRange(&corev1.LimitRangeItem{Type: "Container", Max: cpu("1")}),
			[]string{"spec.containers[0].resources.limits.cpu: Forbidden: maximum cpu usage per Container is 1, but no limit is specified"}},
		{"under the minimum",
			resourcesPod(withResources("a", cpu("50m"), cpu("50m"))),
			limitRange(&corev1.LimitRangeItem{Type: "Container", Min: cpu("100m")}),
			[]string{"requests.cpu: Forbidden: minimum cpu usage per Container is 100m, but request is 50m",
				"limits.cpu: Forbidden: minimum cpu usage per Container is 100m, but limit is 50m"}},
		{"init containers too",
			&corev1.Pod{Spec: &corev1.PodSpec{InitContainers: []*corev1.Container{withResources("init", cpu("1"), cpu("3"))}}},
			limitRange(&corev1.LimitRangeItem{Type: "Container", Max: cpu("1")}),
			[]string{"spec.initContainers[0].resources.limits.cpu: Forbidden: maximum cpu usage per Container is 1, but limit is 3"}},
		{"limit to request ratio",
			resourcesPod(withResources("a", cpu("100m"), cpu("500m"))),
			limitRange(&corev1.LimitRangeItem{Type: "Container", MaxLimitRequestRatio: cpu("2")}),
			[]string{"limits.cpu: Forbidden: cpu max limit to request ratio per Container is 2, but provided ratio is 5"}},
		{"pod maximum on the sum",
			resourcesPod(withResources("a", cpu("400m"), cpu("600m")), withResources("b", cpu("400m"), cpu("600m"))),
			limitRange(&corev1.LimitRangeItem{Type: "Pod", Max: cpu("1")}),
			[]string{"maximum cpu usage per Pod is 1, but limit is 1200m"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			errs := PodLimitRange(tc.pod, tc.lr)
			if len(errs) != len(tc.want) {
				t.Fatalf("got %d errors, want %d: %v", len(errs), len(tc.want), errs)
			}
			for i, w := range tc.want {
				if !strings.Contains(errs[i].Error(), w) {
					t.Errorf("error %d = %q, want it to contain %q", i, errs[i].Error(), w)
				}
			}
		})
	}
}
