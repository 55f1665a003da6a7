package nodelifecycle

import (
	"maps"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
)

func TestZoneKey(t *testing.T) {
	for _, tc := range []struct {
		name   string
		labels map[string]string
		want   string
	}{
		{"no labels", nil, ""},
		{"region and zone", map[string]string{labelTopologyRegion: "r1", labelTopologyZone: "z1"}, "r1:z1"},
		{"zone only", map[string]string{labelTopologyZone: "z1"}, ":z1"},
		{"beta labels", map[string]string{labelFailureDomainBetaRegion: "r0", labelFailureDomainBetaZone: "z0"}, "r0:z0"},
		{"stable labels win", map[string]string{labelTopologyZone: "z1", labelFailureDomainBetaZone: "z0", labelFailureDomainBetaRegion: "r0"}, "r0:z1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := &corev1.Node{Metadata: &metav1.ObjectMeta{Name: "n", Labels: tc.labels}}
			if got := zoneKey(n); got != tc.want {
				t.Errorf("zoneKey = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestZoneHealth: the gauge follows each node's latest judgement, a node
// moving zones counts in its new zone only, and a zone whose last node is
// gone loses its series.
func TestZoneHealth(t *testing.T) {
	type step struct {
		node, zone string
		unhealthy  bool
		forget     bool
		want       map[string]float64
	}
	steps := []step{
		{node: "a", zone: "z1", want: map[string]float64{"z1": 0}},
		{node: "b", zone: "z1", unhealthy: true, want: map[string]float64{"z1": 1}},
		{node: "b", zone: "z1", unhealthy: true, want: map[string]float64{"z1": 1}}, // seen again: counted once
		{node: "c", zone: "", unhealthy: true, want: map[string]float64{"z1": 1, "": 1}},
		{node: "b", zone: "z2", unhealthy: true, want: map[string]float64{"z1": 0, "z2": 1, "": 1}}, // relabelled
		{node: "a", zone: "z1", unhealthy: true, want: map[string]float64{"z1": 1, "z2": 1, "": 1}},
		{node: "b", forget: true, want: map[string]float64{"z1": 1, "": 1}},
		{node: "b", forget: true, want: map[string]float64{"z1": 1, "": 1}}, // unknown: nothing
		{node: "c", zone: "", want: map[string]float64{"z1": 1, "": 0}},
		{node: "a", forget: true, want: map[string]float64{"": 0}},
	}
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "g", Help: "h"}, []string{"zone"})
	z := newZoneHealth(g)
	for i, s := range steps {
		if s.forget {
			z.forget(s.node)
		} else {
			z.observe(s.node, s.zone, s.unhealthy)
		}
		if got := gaugeByZone(t, g); !maps.Equal(got, s.want) {
			t.Fatalf("step %d (%+v): gauge %v, want %v", i, s, got, s.want)
		}
	}
}

func gaugeByZone(t *testing.T, g *prometheus.GaugeVec) map[string]float64 {
	t.Helper()
	ch := make(chan prometheus.Metric, 16)
	g.Collect(ch)
	close(ch)
	out := map[string]float64{}
	for m := range ch {
		var pb dto.Metric
		if err := m.Write(&pb); err != nil {
			t.Fatal(err)
		}
		out[pb.GetLabel()[0].GetValue()] = pb.GetGauge().GetValue()
	}
	return out
}
