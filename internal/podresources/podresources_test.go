package podresources

import (
	"maps"
	"strings"
	"testing"

	"skiff.dev/internal/quantity"
	corev1 "skiff.dev/proto/core/v1"
)

func ctr(name, cpu, mem string) *corev1.Container {
	req := map[string]string{}
	if cpu != "" {
		req["cpu"] = cpu
	}
	if mem != "" {
		req["memory"] = mem
	}
	return &corev1.Container{Name: name, Resources: &corev1.ResourceRequirements{Requests: req, Limits: req}}
}

func sidecar(name, cpu, mem string) *corev1.Container {
	c := ctr(name, cpu, mem)
	always := "Always"
	c.RestartPolicy = &always
	return c
}

func TestRequests(t *testing.T) {
	for _, tc := range []struct {
		name        string
		inits, main []*corev1.Container
		want        map[string]string
	}{
		{"containers add up", nil, []*corev1.Container{ctr("a", "100m", "1Gi"), ctr("b", "200m", "")},
			map[string]string{"cpu": "300m", "memory": "1Gi"}},
		{"nothing requested", nil, []*corev1.Container{ctr("a", "", "")}, map[string]string{}},
		{"the largest init container when larger", []*corev1.Container{ctr("i1", "1", ""), ctr("i2", "500m", "2Gi")},
			[]*corev1.Container{ctr("a", "100m", "1Gi")},
			map[string]string{"cpu": "1", "memory": "2Gi"}},
		{"init containers smaller than the containers do not count", []*corev1.Container{ctr("i1", "50m", "")},
			[]*corev1.Container{ctr("a", "100m", "")},
			map[string]string{"cpu": "100m"}},
		{"a sidecar adds to the containers", []*corev1.Container{sidecar("s", "100m", "64Mi")},
			[]*corev1.Container{ctr("a", "100m", "1Gi")},
			map[string]string{"cpu": "200m", "memory": "1088Mi"}},
		{"a sidecar adds to the init containers after it, not before",
			// i1 runs alone (1), i2 with s1 (1 + 500m), the containers with s1 and s2 (100m + 500m + 200m).
			[]*corev1.Container{ctr("i1", "1", ""), sidecar("s1", "500m", ""), ctr("i2", "1", ""), sidecar("s2", "200m", "")},
			[]*corev1.Container{ctr("a", "100m", "")},
			map[string]string{"cpu": "1500m"}},
		{"KEP-753's example",
			// sidecars 1, 2 and an init of 5 after them: 1+2+5 = 8 > 1+2+2 = 5.
			[]*corev1.Container{sidecar("s1", "1", ""), sidecar("s2", "2", ""), ctr("i", "5", "")},
			[]*corev1.Container{ctr("a", "2", "")},
			map[string]string{"cpu": "8"}},
		{"sidecars only, larger than any init", []*corev1.Container{ctr("i", "1", ""), sidecar("s1", "2", ""), sidecar("s2", "3", "")},
			[]*corev1.Container{ctr("a", "1", "")},
			map[string]string{"cpu": "6"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := &corev1.PodSpec{InitContainers: tc.inits, Containers: tc.main}
			for _, f := range []struct {
				name string
				fn   func(*corev1.PodSpec) (map[string]quantity.Quantity, error)
			}{{"Requests", Requests}, {"Limits", Limits}} {
				got, err := f.fn(spec)
				if err != nil {
					t.Fatalf("%s: %v", f.name, err)
				}
				if !equal(got, tc.want) {
					t.Errorf("%s = %v, want %v", f.name, got, tc.want)
				}
			}
		})
	}
}

func TestRequestsAndLimitsApart(t *testing.T) {
	withLimit := ctr("b", "500m", "")
	withLimit.Resources.Limits = map[string]string{"cpu": "1"}
	noLimit := ctr("a", "1", "1Gi")
	noLimit.Resources.Limits = nil
	initC := ctr("i", "2", "10Mi")
	initC.Resources.Limits = nil
	spec := &corev1.PodSpec{Containers: []*corev1.Container{noLimit, withLimit}, InitContainers: []*corev1.Container{initC}}
	req, _ := Requests(spec)
	if !equal(req, map[string]string{"cpu": "2", "memory": "1Gi"}) {
		t.Errorf("Requests = %v, want cpu 2 (the init container's, more than the sum 1500m), memory 1Gi", req)
	}
	lim, _ := Limits(spec)
	if !equal(lim, map[string]string{"cpu": "1"}) {
		t.Errorf("Limits = %v, want cpu 1", lim)
	}
}

func TestRequestsUnparsable(t *testing.T) {
	spec := &corev1.PodSpec{Containers: []*corev1.Container{ctr("a", "1x", "1Gi"), ctr("b", "100m", "")}}
	got, err := Requests(spec)
	if want := `container a: resource "cpu": `; err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("err = %v, want one starting %q", err, want)
	}
	if !equal(got, map[string]string{"cpu": "100m", "memory": "1Gi"}) {
		t.Errorf("Requests = %v, want the parsable quantities", got)
	}
}

func equal(got map[string]quantity.Quantity, want map[string]string) bool {
	w := map[string]quantity.Quantity{}
	for k, v := range want {
		w[k] = quantity.MustParse(v)
	}
	return maps.EqualFunc(got, w, func(a, b quantity.Quantity) bool { return a.Cmp(b) == 0 })
}
