package plugins

import (
	"testing"

	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/scheduler/framework"
)

func spreadPod(name string, maxSkew int32, when string, minDomains int32) *corev1.Pod {
	p := podLabels(pod(name, "", ""), "app", "web")
	c := &corev1.TopologySpreadConstraint{
		MaxSkew: maxSkew, TopologyKey: "zone", WhenUnsatisfiable: when,
		LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
	}
	if minDomains > 0 {
		c.MinDomains = &minDomains
	}
	p.Spec.TopologySpreadConstraints = []*corev1.TopologySpreadConstraint{c}
	return p
}

func web(name string) *corev1.Pod { return podLabels(pod(name, "", ""), "app", "web") }

// zoned is a node in zone z ("" for none).
func zoned(name, z string) *corev1.Node {
	n := node(name, "4", "8Gi", "110")
	if z != "" {
		withLabels(n, "zone", z)
	}
	return n
}

func TestPodTopologySpreadFilter(t *testing.T) {
	skewed := "Unschedulable: " + ReasonTopologySkew
	missing := "UnschedulableAndUnresolvable: " + ReasonTopologyLabelMissing
	other := podLabels(pod("other", "", ""), "app", "db")
	otherNS := web("elsewhere")
	otherNS.Metadata.Namespace = "prod"

	cases := []struct {
		name  string
		pod   *corev1.Pod
		nodes []*framework.NodeInfo
		want  map[string]string // node -> status; absent means fits
	}{
		{
			name: "maxSkew 1: the emptier zone only",
			pod:  spreadPod("p", 1, DoNotSchedule, 0),
			nodes: []*framework.NodeInfo{
				nodeInfo(zoned("a1", "a"), web("w1")),
				nodeInfo(zoned("a2", "a")),
				nodeInfo(zoned("b1", "b")),
			},
			want: map[string]string{"a1": skewed, "a2": skewed},
		},
		{
			name: "balanced zones: every node fits",
			pod:  spreadPod("p", 1, DoNotSchedule, 0),
			nodes: []*framework.NodeInfo{
				nodeInfo(zoned("a1", "a"), web("w1")),
				nodeInfo(zoned("b1", "b"), web("w2")),
			},
		},
		{
			name: "maxSkew 2 allows one more",
			pod:  spreadPod("p", 2, DoNotSchedule, 0),
			nodes: []*framework.NodeInfo{
				nodeInfo(zoned("a1", "a"), web("w1")),
				nodeInfo(zoned("b1", "b")),
			},
		},
		{
			name: "pods not matching the selector, or in another namespace, do not count",
			pod:  spreadPod("p", 1, DoNotSchedule, 0),
			nodes: []*framework.NodeInfo{
				nodeInfo(zoned("a1", "a"), other, otherNS),
				nodeInfo(zoned("b1", "b")),
			},
		},
		{
			name: "a node without the key is rejected",
			pod:  spreadPod("p", 1, DoNotSchedule, 0),
			nodes: []*framework.NodeInfo{
				nodeInfo(zoned("a1", "a")),
				nodeInfo(zoned("x", "")),
			},
			want: map[string]string{"x": missing},
		},
		{
			name: "minDomains: fewer domains than asked means the minimum is 0",
			pod:  spreadPod("p", 1, DoNotSchedule, 3),
			nodes: []*framework.NodeInfo{
				nodeInfo(zoned("a1", "a"), web("w1")),
				nodeInfo(zoned("b1", "b"), web("w2")),
			},
			want: map[string]string{"a1": skewed, "b1": skewed},
		},
		{
			name: "terminating pods do not count",
			pod:  spreadPod("p", 1, DoNotSchedule, 0),
			nodes: []*framework.NodeInfo{
				nodeInfo(zoned("a1", "a"), func() *corev1.Pod {
					p := web("gone")
					p.Metadata.DeletionTimestamp = timestamp
					return p
				}()),
				nodeInfo(zoned("b1", "b")),
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pl, _ := NewPodTopologySpread(nil, fakeHandle{snap: framework.NewSnapshot(tc.nodes...)})
			spread := pl.(*PodTopologySpreadPlugin)
			state := framework.NewCycleState()
			pi := framework.NewPodInfo(tc.pod)
			if _, s := spread.PreFilter(ctx, state, pi); !s.IsSuccess() {
				t.Fatalf("PreFilter: %v", s)
			}
			for _, n := range tc.nodes {
				got := statusString(spread.Filter(ctx, state, pi, n))
				if got != tc.want[n.Name()] {
					t.Errorf("%s: got %q, want %q", n.Name(), got, tc.want[n.Name()])
				}
			}
		})
	}
}

func TestPodTopologySpreadSkipsAndScores(t *testing.T) {
	nodes := []*framework.NodeInfo{
		nodeInfo(zoned("a1", "a"), web("w1"), web("w2")),
		nodeInfo(zoned("b1", "b"), web("w3")),
		nodeInfo(zoned("c1", "c")),
		nodeInfo(zoned("x", "")),
	}
	pl, _ := NewPodTopologySpread(nil, fakeHandle{snap: framework.NewSnapshot(nodes...)})
	spread := pl.(*PodTopologySpreadPlugin)

	plain := framework.NewPodInfo(pod("plain", "", ""))
	if _, s := spread.PreFilter(ctx, framework.NewCycleState(), plain); !s.IsSkip() {
		t.Errorf("PreFilter without constraints: %v, want Skip", s)
	}
	if s := spread.PreScore(ctx, framework.NewCycleState(), plain, nodes); !s.IsSkip() {
		t.Errorf("PreScore without constraints: %v, want Skip", s)
	}

	soft := framework.NewPodInfo(spreadPod("p", 1, ScheduleAnyway, 0))
	if _, s := spread.PreFilter(ctx, framework.NewCycleState(), soft); !s.IsSkip() {
		t.Errorf("ScheduleAnyway constraints do not filter: %v, want Skip", s)
	}
	state := framework.NewCycleState()
	if s := spread.PreScore(ctx, state, soft, nodes); !s.IsSuccess() {
		t.Fatal(s)
	}
	scores := make([]framework.NodeScore, len(nodes))
	for i, n := range nodes {
		v, s := spread.Score(ctx, state, soft, n)
		if !s.IsSuccess() {
			t.Fatal(s)
		}
		scores[i] = framework.NodeScore{Name: n.Name(), Score: v}
	}
	spread.NormalizeScore(ctx, state, soft, scores)
	// Fewer matching pods in the zone, higher score; no zone label, 0.
	if !(scores[2].Score > scores[1].Score && scores[1].Score > scores[0].Score) || scores[3].Score != 0 || scores[2].Score != 100 {
		t.Errorf("scores %v: want c1 (empty zone) 100 > b1 > a1, x 0", scores)
	}
}
