package plugins

import (
	"maps"
	"slices"
	"testing"

	"skiff.dev/internal/labels"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/scheduler/framework"
)

// affinityHandle serves a snapshot, a parallelizer and namespaces.
type affinityHandle struct {
	framework.Handle
	snap *framework.Snapshot
	ns   fakeNamespaces
}

func (h affinityHandle) Snapshot() *framework.Snapshot         { return h.snap }
func (h affinityHandle) Parallelizer() framework.Parallelizer  { return framework.NewParallelizer(4) }
func (h affinityHandle) Namespaces() framework.NamespaceLister { return h.ns }

// fakeNamespaces: namespace name -> labels.
type fakeNamespaces map[string]map[string]string

func (f fakeNamespaces) NamespaceLabels(name string) map[string]string { return f[name] }
func (f fakeNamespaces) NamespacesMatching(sel labels.Selector) []string {
	var out []string
	for _, name := range slices.Sorted(maps.Keys(f)) {
		if sel.Matches(f[name]) {
			out = append(out, name)
		}
	}
	return out
}

// term is a pod affinity term selecting app=app on key.
func term(app, key string) *corev1.PodAffinityTerm {
	return &corev1.PodAffinityTerm{
		LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}},
		TopologyKey:   key,
	}
}

func inNamespaces(t *corev1.PodAffinityTerm, ns ...string) *corev1.PodAffinityTerm {
	t.Namespaces = ns
	return t
}

func withNamespaceSelector(t *corev1.PodAffinityTerm, ml map[string]string) *corev1.PodAffinityTerm {
	t.NamespaceSelector = &metav1.LabelSelector{MatchLabels: ml}
	return t
}

func weighted(w int32, t *corev1.PodAffinityTerm) *corev1.WeightedPodAffinityTerm {
	return &corev1.WeightedPodAffinityTerm{Weight: w, PodAffinityTerm: t}
}

func affinityOf(p *corev1.Pod) *corev1.Affinity {
	if p.Spec.Affinity == nil {
		p.Spec.Affinity = &corev1.Affinity{}
	}
	return p.Spec.Affinity
}

func requireAffinity(p *corev1.Pod, ts ...*corev1.PodAffinityTerm) *corev1.Pod {
	a := affinityOf(p)
	if a.PodAffinity == nil {
		a.PodAffinity = &corev1.PodAffinity{}
	}
	a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution = ts
	return p
}

func requireAntiAffinity(p *corev1.Pod, ts ...*corev1.PodAffinityTerm) *corev1.Pod {
	a := affinityOf(p)
	if a.PodAntiAffinity == nil {
		a.PodAntiAffinity = &corev1.PodAffinity{}
	}
	a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution = ts
	return p
}

func preferAffinity(p *corev1.Pod, ts ...*corev1.WeightedPodAffinityTerm) *corev1.Pod {
	a := affinityOf(p)
	if a.PodAffinity == nil {
		a.PodAffinity = &corev1.PodAffinity{}
	}
	a.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution = ts
	return p
}

func preferAntiAffinity(p *corev1.Pod, ts ...*corev1.WeightedPodAffinityTerm) *corev1.Pod {
	a := affinityOf(p)
	if a.PodAntiAffinity == nil {
		a.PodAntiAffinity = &corev1.PodAffinity{}
	}
	a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution = ts
	return p
}

func inNamespace(p *corev1.Pod, ns string) *corev1.Pod {
	p.Metadata.Namespace = ns
	return p
}

const hostname = "kubernetes.io/hostname"
const zone = "topology.kubernetes.io/zone"

// inZone is a node labelled with zone z.
func inZone(name, z string) *corev1.Node {
	return withLabels(node(name, "4", "8Gi", "110"), zone, z)
}

// affinityFilter runs PreFilter and Filter over nodes; the result maps
// each node to its status ("" for a fit), or "Skip" for every node when
// PreFilter skipped.
func affinityFilter(t *testing.T, ns fakeNamespaces, p *corev1.Pod, nodes ...*framework.NodeInfo) map[string]string {
	t.Helper()
	pl, _ := NewInterPodAffinity(nil, affinityHandle{snap: framework.NewSnapshot(nodes...), ns: ns})
	plugin := pl.(*InterPodAffinityPlugin)
	state := framework.NewCycleState()
	pi := framework.NewPodInfo(p)
	out := map[string]string{}
	_, st := plugin.PreFilter(ctx, state, pi)
	if st.IsSkip() {
		for _, n := range nodes {
			out[n.Name()] = "Skip"
		}
		return out
	}
	if !st.IsSuccess() {
		t.Fatalf("PreFilter: %v", st)
	}
	for _, n := range nodes {
		out[n.Name()] = statusString(plugin.Filter(ctx, state, pi, n))
	}
	return out
}

func TestInterPodAffinityFilter(t *testing.T) {
	const (
		antiRejected     = "Unschedulable: " + ReasonAntiAffinityRulesNotMatch
		affRejected      = "UnschedulableAndUnresolvable: " + ReasonAffinityRulesNotMatch
		existingRejected = "Unschedulable: " + ReasonExistingAntiAffinityRulesNotMatch
	)
	db := func(name string) *corev1.Pod { return podLabels(pod(name, "", ""), "app", "db") }
	prodLabels := fakeNamespaces{"default": {}, "prod": {"env": "prod"}, "dev": {"env": "dev"}}
	cases := []struct {
		name  string
		ns    fakeNamespaces
		pod   *corev1.Pod
		nodes []*framework.NodeInfo
		want  map[string]string
	}{{
		name:  "no terms anywhere: skipped",
		pod:   web("p"),
		nodes: []*framework.NodeInfo{nodeInfo(inZone("n1", "a"), web("w"))},
		want:  map[string]string{"n1": "Skip"},
	}, {
		name:  "required anti-affinity on hostname keeps off the node of a matching pod",
		pod:   requireAntiAffinity(web("p"), term("web", hostname)),
		nodes: []*framework.NodeInfo{nodeInfo(inZone("n1", "a"), web("w")), nodeInfo(inZone("n2", "a"), db("d"))},
		want:  map[string]string{"n1": antiRejected, "n2": ""},
	}, {
		name:  "required anti-affinity on zone keeps off the whole zone",
		pod:   requireAntiAffinity(web("p"), term("web", zone)),
		nodes: []*framework.NodeInfo{nodeInfo(inZone("n1", "a"), web("w")), nodeInfo(inZone("n2", "a")), nodeInfo(inZone("n3", "b"))},
		want:  map[string]string{"n1": antiRejected, "n2": antiRejected, "n3": ""},
	}, {
		name:  "required affinity on zone: any node of the zone of a matching pod",
		pod:   requireAffinity(web("p"), term("db", zone)),
		nodes: []*framework.NodeInfo{nodeInfo(inZone("n1", "a"), db("d")), nodeInfo(inZone("n2", "a")), nodeInfo(inZone("n3", "b"))},
		want:  map[string]string{"n1": "", "n2": "", "n3": affRejected},
	}, {
		name: "required affinity: a node without the topology key never fits",
		pod:  requireAffinity(web("p"), term("db", zone)),
		nodes: []*framework.NodeInfo{
			nodeInfo(inZone("n1", "a"), db("d")), nodeInfo(node("n2", "4", "8Gi", "110"), db("d2")),
		},
		want: map[string]string{"n1": "", "n2": affRejected},
	}, {
		name:  "the first pod of a group matching its own affinity may go anywhere",
		pod:   requireAffinity(web("p"), term("web", zone)),
		nodes: []*framework.NodeInfo{nodeInfo(inZone("n1", "a"), db("d")), nodeInfo(inZone("n2", "b"))},
		want:  map[string]string{"n1": "", "n2": ""},
	}, {
		name:  "a pod not matching its own affinity needs a matching pod",
		pod:   requireAffinity(db("p"), term("web", zone)),
		nodes: []*framework.NodeInfo{nodeInfo(inZone("n1", "a"), db("d")), nodeInfo(inZone("n2", "b"))},
		want:  map[string]string{"n1": affRejected, "n2": affRejected},
	}, {
		name:  "an existing pod's anti-affinity keeps a matching pod off its node (symmetry)",
		pod:   web("p"),
		nodes: []*framework.NodeInfo{nodeInfo(inZone("n1", "a"), requireAntiAffinity(db("d"), term("web", hostname))), nodeInfo(inZone("n2", "a"))},
		want:  map[string]string{"n1": existingRejected, "n2": ""},
	}, {
		name:  "an existing pod's anti-affinity on zone covers its zone",
		pod:   web("p"),
		nodes: []*framework.NodeInfo{nodeInfo(inZone("n1", "a"), requireAntiAffinity(db("d"), term("web", zone))), nodeInfo(inZone("n2", "a")), nodeInfo(inZone("n3", "b"))},
		want:  map[string]string{"n1": existingRejected, "n2": existingRejected, "n3": ""},
	}, {
		name:  "an existing pod's anti-affinity the pod does not match: nothing to filter",
		pod:   db("p"),
		nodes: []*framework.NodeInfo{nodeInfo(inZone("n1", "a"), requireAntiAffinity(db("d"), term("web", hostname))), nodeInfo(inZone("n2", "a"))},
		want:  map[string]string{"n1": "Skip", "n2": "Skip"},
	}, {
		name:  "a term without namespaces means the pod's own: pods of another namespace do not count",
		ns:    prodLabels,
		pod:   requireAntiAffinity(web("p"), term("web", hostname)),
		nodes: []*framework.NodeInfo{nodeInfo(inZone("n1", "a"), inNamespace(web("w"), "prod"))},
		want:  map[string]string{"n1": ""},
	}, {
		name:  "a term naming namespaces",
		ns:    prodLabels,
		pod:   requireAntiAffinity(web("p"), inNamespaces(term("web", hostname), "prod")),
		nodes: []*framework.NodeInfo{nodeInfo(inZone("n1", "a"), inNamespace(web("w"), "prod")), nodeInfo(inZone("n2", "a"), web("w2"))},
		want:  map[string]string{"n1": antiRejected, "n2": ""},
	}, {
		name:  "namespaceSelector {} means every namespace",
		ns:    prodLabels,
		pod:   requireAntiAffinity(web("p"), withNamespaceSelector(term("web", hostname), nil)),
		nodes: []*framework.NodeInfo{nodeInfo(inZone("n1", "a"), inNamespace(web("w"), "prod")), nodeInfo(inZone("n2", "a"), inNamespace(web("w2"), "dev")), nodeInfo(inZone("n3", "a"))},
		want:  map[string]string{"n1": antiRejected, "n2": antiRejected, "n3": ""},
	}, {
		name:  "namespaceSelector picks namespaces by label",
		ns:    prodLabels,
		pod:   requireAntiAffinity(web("p"), withNamespaceSelector(term("web", hostname), map[string]string{"env": "prod"})),
		nodes: []*framework.NodeInfo{nodeInfo(inZone("n1", "a"), inNamespace(web("w"), "prod")), nodeInfo(inZone("n2", "a"), inNamespace(web("w2"), "dev"))},
		want:  map[string]string{"n1": antiRejected, "n2": ""},
	}, {
		name: "an existing pod's namespaceSelector is matched against the labels of the pod's namespace",
		ns:   prodLabels,
		pod:  inNamespace(web("p"), "prod"),
		nodes: []*framework.NodeInfo{
			nodeInfo(inZone("n1", "a"), requireAntiAffinity(inNamespace(db("d"), "dev"), withNamespaceSelector(term("web", hostname), map[string]string{"env": "prod"}))),
			nodeInfo(inZone("n2", "a"), requireAntiAffinity(inNamespace(db("d2"), "prod"), withNamespaceSelector(term("web", hostname), map[string]string{"env": "dev"}))),
		},
		want: map[string]string{"n1": existingRejected, "n2": ""},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := affinityFilter(t, tc.ns, tc.pod, tc.nodes...)
			if !maps.Equal(got, tc.want) {
				t.Errorf("got %v\nwant %v", got, tc.want)
			}
		})
	}
}

// affinityScores runs PreScore, Score and NormalizeScore over nodes; nil
// when PreScore skipped.
func affinityScores(t *testing.T, p *corev1.Pod, nodes ...*framework.NodeInfo) map[string]int64 {
	t.Helper()
	pl, _ := NewInterPodAffinity(nil, affinityHandle{snap: framework.NewSnapshot(nodes...)})
	plugin := pl.(*InterPodAffinityPlugin)
	state := framework.NewCycleState()
	pi := framework.NewPodInfo(p)
	st := plugin.PreScore(ctx, state, pi, nodes)
	if st.IsSkip() {
		return nil
	}
	if !st.IsSuccess() {
		t.Fatalf("PreScore: %v", st)
	}
	var scores []framework.NodeScore
	for _, n := range nodes {
		s, st := plugin.Score(ctx, state, pi, n)
		if !st.IsSuccess() {
			t.Fatalf("Score(%s): %v", n.Name(), st)
		}
		scores = append(scores, framework.NodeScore{Name: n.Name(), Score: s})
	}
	plugin.NormalizeScore(ctx, state, pi, scores)
	out := map[string]int64{}
	for _, s := range scores {
		out[s.Name] = s.Score
	}
	return out
}

func TestInterPodAffinityScore(t *testing.T) {
	db := func(name string) *corev1.Pod { return podLabels(pod(name, "", ""), "app", "db") }
	cases := []struct {
		name  string
		pod   *corev1.Pod
		nodes []*framework.NodeInfo
		want  map[string]int64
	}{{
		name:  "no terms anywhere: skipped",
		pod:   web("p"),
		nodes: []*framework.NodeInfo{nodeInfo(inZone("n1", "a"), db("d")), nodeInfo(inZone("n2", "b"))},
		want:  nil,
	}, {
		name:  "preferred affinity favours the node of a matching pod",
		pod:   preferAffinity(web("p"), weighted(10, term("db", hostname))),
		nodes: []*framework.NodeInfo{nodeInfo(inZone("n1", "a"), db("d")), nodeInfo(inZone("n2", "a"))},
		want:  map[string]int64{"n1": 100, "n2": 0},
	}, {
		name:  "preferred anti-affinity favours the other nodes",
		pod:   preferAntiAffinity(web("p"), weighted(10, term("db", hostname))),
		nodes: []*framework.NodeInfo{nodeInfo(inZone("n1", "a"), db("d")), nodeInfo(inZone("n2", "a"))},
		want:  map[string]int64{"n1": 0, "n2": 100},
	}, {
		name: "weights add up per domain and normalize between the lowest and the highest",
		pod:  preferAffinity(web("p"), weighted(30, term("db", zone)), weighted(10, term("db", hostname))),
		nodes: []*framework.NodeInfo{
			nodeInfo(inZone("n1", "a"), db("d")), nodeInfo(inZone("n2", "a")), nodeInfo(inZone("n3", "b")),
		},
		// n1: 30+10, n2: 30, n3: 0.
		want: map[string]int64{"n1": 100, "n2": 75, "n3": 0},
	}, {
		name:  "an existing pod's preferred affinity for the pod draws it (symmetry)",
		pod:   web("p"),
		nodes: []*framework.NodeInfo{nodeInfo(inZone("n1", "a"), preferAffinity(db("d"), weighted(5, term("web", hostname)))), nodeInfo(inZone("n2", "a"))},
		want:  map[string]int64{"n1": 100, "n2": 0},
	}, {
		name:  "an existing pod's preferred anti-affinity for the pod repels it",
		pod:   web("p"),
		nodes: []*framework.NodeInfo{nodeInfo(inZone("n1", "a"), preferAntiAffinity(db("d"), weighted(5, term("web", hostname)))), nodeInfo(inZone("n2", "a"))},
		want:  map[string]int64{"n1": 0, "n2": 100},
	}, {
		name:  "an existing pod's required affinity for the pod draws it with weight 1",
		pod:   web("p"),
		nodes: []*framework.NodeInfo{nodeInfo(inZone("n1", "a"), requireAffinity(db("d"), term("web", zone))), nodeInfo(inZone("n2", "a")), nodeInfo(inZone("n3", "b"))},
		want:  map[string]int64{"n1": 100, "n2": 100, "n3": 0},
	}, {
		name:  "an existing pod's required anti-affinity does not score",
		pod:   web("p"),
		nodes: []*framework.NodeInfo{nodeInfo(inZone("n1", "a"), requireAntiAffinity(db("d"), term("web", hostname))), nodeInfo(inZone("n2", "a"))},
		want:  nil,
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := affinityScores(t, tc.pod, tc.nodes...)
			if !maps.Equal(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestNormalizeAffinityScores(t *testing.T) {
	scores := []framework.NodeScore{{Name: "a", Score: -10}, {Name: "b", Score: 0}, {Name: "c", Score: 30}}
	NormalizeAffinityScores(scores)
	got := []int64{scores[0].Score, scores[1].Score, scores[2].Score}
	if want := []int64{0, 25, 100}; !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}
