package plugins

import (
	"cmp"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"

	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/scheduler/framework"
)

// The PreFilter extensions of InterPodAffinity and PodTopologySpread,
// checked against PreFilter itself: over random clusters, a state that
// AddPod and RemovePod took through a series of pods added and removed
// holds the counts (and gives the Filter verdicts) that a fresh PreFilter
// of the changed cluster gives; and the states it was cloned from are
// untouched.

// extCluster is a cluster the tests change a pod at a time.
type extCluster struct {
	nodes []*corev1.Node
	pods  map[string][]*corev1.Pod // node name -> pods
}

// infos builds the cluster's NodeInfos.
func (c *extCluster) infos() []*framework.NodeInfo {
	var out []*framework.NodeInfo
	for _, n := range c.nodes {
		out = append(out, nodeInfo(n, c.pods[n.Metadata.Name]...))
	}
	return out
}

// change adds p to a random node or, when p is nil, removes a random pod
// (if any); it returns the pod and its node's name.
func (c *extCluster) change(r *rand.Rand, p *corev1.Pod) (*corev1.Pod, string, int64) {
	if p != nil {
		node := c.nodes[r.IntN(len(c.nodes))].Metadata.Name
		c.pods[node] = append(c.pods[node], p)
		return p, node, 1
	}
	var nodes []string
	for _, n := range c.nodes {
		if len(c.pods[n.Metadata.Name]) > 0 {
			nodes = append(nodes, n.Metadata.Name)
		}
	}
	if len(nodes) == 0 {
		return nil, "", 0
	}
	node := nodes[r.IntN(len(nodes))]
	i := r.IntN(len(c.pods[node]))
	p = c.pods[node][i]
	c.pods[node] = slices.Delete(slices.Clone(c.pods[node]), i, i+1)
	return p, node, -1
}

// extStep is a cloned state as it stood after a change, with the fresh
// PreFilter's result for the cluster at that point.
type extStep struct {
	state  *framework.CycleState
	expect string
}

// runExtensions drives plugin through random changes of c, for the pod
// incoming; describe prints a state's counts (with the Filter verdicts
// on every node), or "skip" when PreFilter skipped. It reports false when
// PreFilter skipped the pod at the start.
func runExtensions(t *testing.T, r *rand.Rand, iter int, c *extCluster, incoming *framework.PodInfo,
	newPlugin func(*framework.Snapshot) framework.PreFilterPlugin, newPod func(name string) *corev1.Pod,
	describe func(framework.PreFilterPlugin, *framework.CycleState, []*framework.NodeInfo) string) bool {
	t.Helper()
	fresh := func() (framework.PreFilterPlugin, *framework.CycleState, []*framework.NodeInfo) {
		infos := c.infos()
		pl := newPlugin(framework.NewSnapshot(infos...))
		state := framework.NewCycleState()
		if _, s := pl.PreFilter(ctx, state, incoming); s.IsSkip() {
			return pl, nil, infos
		} else if !s.IsSuccess() {
			t.Fatalf("case %d: PreFilter: %v", iter, s)
		}
		return pl, state, infos
	}
	pl, original, infos := fresh()
	if original == nil {
		return false
	}
	originalWant := describe(pl, original, infos)
	ext := pl.PreFilterExtensions()
	work := original.Clone()
	var steps []extStep
	for step := range 8 {
		var add *corev1.Pod
		if r.IntN(2) == 0 {
			add = newPod(fmt.Sprintf("new-%d-%d", iter, step))
		}
		p, node, delta := c.change(r, add)
		if p == nil {
			continue
		}
		_, state, infos := fresh()
		var ni *framework.NodeInfo
		for _, n := range infos {
			if n.Name() == node {
				ni = n
			}
		}
		var s *framework.Status
		if delta > 0 {
			s = ext.AddPod(ctx, work, incoming, framework.NewPodInfo(p), ni)
		} else {
			s = ext.RemovePod(ctx, work, incoming, framework.NewPodInfo(p), ni)
		}
		if !s.IsSuccess() {
			t.Fatalf("case %d step %d: %v", iter, step, s)
		}
		want := "skip"
		if state != nil {
			want = describe(pl, state, infos)
		}
		if got := describe(pl, work, infos); got != want && !(want == "skip" && got == describeEmpty) {
			t.Fatalf("case %d step %d: %+d %s/%s on %s:\nupdated %s\n  fresh %s", iter, step, delta,
				p.Metadata.Namespace, p.Metadata.Name, node, got, want)
		}
		for i, prev := range steps {
			if got := describe(pl, prev.state, infos); got != prev.expect && !(prev.expect == "skip" && got == describeEmpty) {
				t.Fatalf("case %d: the clone of step %d changed with a later step:\n   now %s\nbefore %s", iter, i, got, prev.expect)
			}
		}
		steps = append(steps, extStep{state: work, expect: describe(pl, work, infos)})
		work = work.Clone()
	}
	if got := describe(pl, original, infos); got != originalWant {
		t.Fatalf("case %d: the cycle's state changed through its clones:\n   now %s\nbefore %s", iter, got, originalWant)
	}
	return true
}

// describeEmpty is what a state without counts describes as (what a
// skipped PreFilter means, when the pod has no terms of its own).
const describeEmpty = "empty"

func TestInterPodAffinityExtensionsMatchPreFilter(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	g := randomAffinity{r: rand.New(rand.NewPCG(seed, 36))}
	ns := fakeNamespaces{"default": {}, "prod": {"env": "prod"}, "dev": {"env": "dev"}}
	newPlugin := func(snap *framework.Snapshot) framework.PreFilterPlugin {
		pl, _ := NewInterPodAffinity(nil, affinityHandle{snap: snap, ns: ns})
		return pl.(*InterPodAffinityPlugin)
	}
	describe := func(pl framework.PreFilterPlugin, state *framework.CycleState, infos []*framework.NodeInfo) string {
		s, _ := framework.ReadAs[*affinityFilterState](state, podAffinityFilterKey)
		if len(s.affinityCounts)+len(s.antiAffinityCounts)+len(s.existingAntiAffinityCounts) == 0 &&
			len(s.affinityTerms)+len(s.antiAffinityTerms) == 0 {
			return describeEmpty
		}
		verdicts := map[string]string{}
		for _, n := range infos {
			verdicts[n.Name()] = statusString(pl.(framework.FilterPlugin).Filter(ctx, state, nil, n))
		}
		return fmt.Sprintf("existing anti %v affinity %v anti %v verdicts %v",
			sortedCounts(s.existingAntiAffinityCounts), sortedCounts(s.affinityCounts), sortedCounts(s.antiAffinityCounts), verdicts)
	}
	ran := 0
	for iter := range 300 {
		c := &extCluster{pods: map[string][]*corev1.Pod{}}
		for i := range 1 + g.r.IntN(6) {
			n := g.node(fmt.Sprintf("n%d", i))
			c.nodes = append(c.nodes, n)
			for j := range g.r.IntN(5) {
				c.pods[n.Metadata.Name] = append(c.pods[n.Metadata.Name], g.pod(fmt.Sprintf("p%d-%d", i, j), 2))
			}
		}
		incoming := framework.NewPodInfo(g.pod("incoming", 1))
		if runExtensions(t, g.r, iter, c, incoming, newPlugin, func(name string) *corev1.Pod { return g.pod(name, 2) }, describe) {
			ran++
		}
	}
	if ran < 100 {
		t.Errorf("only %d of 300 cases got past PreFilter", ran)
	}
}

func sortedCounts(m topologyCounts) string {
	keys := slices.SortedFunc(maps.Keys(m), func(a, b topologyPair) int {
		if a.key != b.key {
			return cmp.Compare(a.key, b.key)
		}
		return cmp.Compare(a.value, b.value)
	})
	out := ""
	for _, k := range keys {
		out += fmt.Sprintf("%s=%s:%d ", k.key, k.value, m[k])
	}
	return "[" + out + "]"
}

func TestPodTopologySpreadExtensionsMatchPreFilter(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 37))
	pick := func(xs ...string) string { return xs[r.IntN(len(xs))] }
	newPod := func(name string) *corev1.Pod {
		p := pod(name, "", "")
		p.Metadata.Namespace = pick("default", "default", "prod")
		if r.IntN(4) > 0 {
			p.Metadata.Labels["app"] = pick("web", "web", "db")
		}
		if r.IntN(8) == 0 {
			p.Metadata.DeletionTimestamp = timestamp
		}
		return p
	}
	newPlugin := func(snap *framework.Snapshot) framework.PreFilterPlugin {
		pl, _ := NewPodTopologySpread(nil, fakeHandle{snap: snap})
		return pl.(*PodTopologySpreadPlugin)
	}
	describe := func(pl framework.PreFilterPlugin, state *framework.CycleState, infos []*framework.NodeInfo) string {
		s, _ := framework.ReadAs[*spreadFilterState](state, spreadFilterKey)
		var counts []string
		for _, m := range s.counts {
			keys := slices.Sorted(maps.Keys(m))
			out := ""
			for _, k := range keys {
				out += fmt.Sprintf("%s:%d ", k, m[k])
			}
			counts = append(counts, "["+out+"]")
		}
		verdicts := map[string]string{}
		for _, n := range infos {
			verdicts[n.Name()] = statusString(pl.(framework.FilterPlugin).Filter(ctx, state, nil, n))
		}
		return fmt.Sprintf("counts %v min %v verdicts %v", counts, s.minMatch, verdicts)
	}
	for iter := range 300 {
		c := &extCluster{pods: map[string][]*corev1.Pod{}}
		for i := range 1 + r.IntN(7) {
			n := node(fmt.Sprintf("n%d", i), "4", "8Gi", "110")
			if r.IntN(6) > 0 {
				withLabels(n, zone, pick("a", "b", "c"))
			}
			c.nodes = append(c.nodes, n)
			for j := range r.IntN(5) {
				c.pods[n.Metadata.Name] = append(c.pods[n.Metadata.Name], newPod(fmt.Sprintf("p%d-%d", i, j)))
			}
		}
		incoming := podLabels(pod("incoming", "", ""), "app", pick("web", "db"))
		for range 1 + r.IntN(2) {
			tc := &corev1.TopologySpreadConstraint{
				MaxSkew: 1 + r.Int32N(2), TopologyKey: pick(zone, hostname), WhenUnsatisfiable: DoNotSchedule,
				LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			}
			if r.IntN(3) == 0 {
				tc.LabelSelector = &metav1.LabelSelector{MatchExpressions: []*metav1.LabelSelectorRequirement{
					{Key: "app", Operator: "In", Values: []string{"web", "db"}},
				}}
			}
			if r.IntN(3) == 0 {
				minDomains := 1 + r.Int32N(4)
				tc.MinDomains = &minDomains
			}
			incoming.Spec.TopologySpreadConstraints = append(incoming.Spec.TopologySpreadConstraints, tc)
		}
		if r.IntN(4) == 0 {
			incoming.Spec.NodeSelector = map[string]string{zone: pick("a", "b")}
		}
		runExtensions(t, r, iter, c, framework.NewPodInfo(incoming), newPlugin, newPod, describe)
	}
}

// TestTopologySpreadMinimumAfterSeveralChanges: the smallest domain's
// count stays exact where two remembered domains would not: three zones
// at 0, then a pod added to two of them leaves the third's 0 the minimum.
func TestTopologySpreadMinimumAfterSeveralChanges(t *testing.T) {
	nodes := []*framework.NodeInfo{nodeInfo(zoned("a1", "a")), nodeInfo(zoned("b1", "b")), nodeInfo(zoned("c1", "c"))}
	pl, _ := NewPodTopologySpread(nil, fakeHandle{snap: framework.NewSnapshot(nodes...)})
	spread := pl.(*PodTopologySpreadPlugin)
	incoming := framework.NewPodInfo(spreadPod("p", 1, DoNotSchedule, 0))
	state := framework.NewCycleState()
	if _, s := spread.PreFilter(ctx, state, incoming); !s.IsSuccess() {
		t.Fatal(s)
	}
	work := state.Clone()
	for _, n := range nodes[:2] {
		w := framework.NewPodInfo(web("w-" + n.Name()))
		n = n.Clone()
		n.AddPod(w)
		if s := spread.AddPod(ctx, work, incoming, w, n); !s.IsSuccess() {
			t.Fatal(s)
		}
	}
	s, _ := framework.ReadAs[*spreadFilterState](work, spreadFilterKey)
	if s.minMatch[0] != 0 {
		t.Errorf("minimum %d after adding to a and b, want 0 (zone c)", s.minMatch[0])
	}
	if st := spread.Filter(ctx, work, incoming, nodes[0]); st.IsSuccess() {
		t.Errorf("zone a (1 pod, c has 0) accepted with maxSkew 1")
	}
	if st := spread.Filter(ctx, work, incoming, nodes[2]); !st.IsSuccess() {
		t.Errorf("zone c rejected: %v", st)
	}
}
