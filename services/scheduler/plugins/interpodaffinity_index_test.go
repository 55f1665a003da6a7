package plugins

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"testing"

	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/scheduler/framework"
)

// scanExistingAntiAffinity is the plain scan the index replaces: every
// required anti-affinity term of every pod on every node, against pod.
func scanExistingAntiAffinity(pod *framework.PodInfo, nsLabels map[string]string, nodes []*framework.NodeInfo) topologyCounts {
	counts := topologyCounts{}
	for _, ni := range nodes {
		nl := ni.Node().GetMetadata().GetLabels()
		for _, existing := range ni.Pods {
			for i := range existing.RequiredAntiAffinityTerms {
				t := &existing.RequiredAntiAffinityTerms[i]
				if v, ok := nl[t.TopologyKey]; ok && t.Matches(pod.Pod, nsLabels) {
					counts[topologyPair{t.TopologyKey, v}]++
				}
			}
		}
	}
	return counts
}

// scanIncoming is the plain scan of every pod against the pod's required
// (resolved) terms.
func scanIncoming(affinity, anti []framework.AffinityTerm, nodes []*framework.NodeInfo) (aff, an topologyCounts) {
	aff, an = topologyCounts{}, topologyCounts{}
	for _, ni := range nodes {
		nl := ni.Node().GetMetadata().GetLabels()
		for _, existing := range ni.Pods {
			if framework.MatchesAll(affinity, existing.Pod, nil) {
				for i := range affinity {
					if v, ok := nl[affinity[i].TopologyKey]; ok {
						aff[topologyPair{affinity[i].TopologyKey, v}]++
					}
				}
			}
			for i := range anti {
				if v, ok := nl[anti[i].TopologyKey]; ok && anti[i].Matches(existing.Pod, nil) {
					an[topologyPair{anti[i].TopologyKey, v}]++
				}
			}
		}
	}
	return aff, an
}

// randomAffinity makes random pods, terms and labels from small sets, so
// that they often match.
type randomAffinity struct {
	r *rand.Rand
}

func (g randomAffinity) pick(xs ...string) string { return xs[g.r.IntN(len(xs))] }

var (
	randomNamespaces = []string{"default", "prod", "dev"}
	randomLabelKeys  = []string{"app", "tier", "group"}
	randomValues     = map[string][]string{"app": {"web", "db", "cache"}, "tier": {"fe", "be"}, "group": {"g0", "g1", "g2", "g3"}}
)

func (g randomAffinity) labels() map[string]string {
	l := map[string]string{}
	for _, k := range randomLabelKeys {
		if g.r.IntN(3) > 0 {
			l[k] = g.pick(randomValues[k]...)
		}
	}
	return l
}

func (g randomAffinity) selector() *metav1.LabelSelector {
	if g.r.IntN(20) == 0 {
		return nil // matches nothing
	}
	s := &metav1.LabelSelector{}
	for _, k := range randomLabelKeys {
		vs := randomValues[k]
		switch g.r.IntN(8) {
		case 0, 1:
			if s.MatchLabels == nil {
				s.MatchLabels = map[string]string{}
			}
			s.MatchLabels[k] = g.pick(vs...)
		case 2:
			s.MatchExpressions = append(s.MatchExpressions, &metav1.LabelSelectorRequirement{Key: k, Operator: "In", Values: []string{g.pick(vs...)}})
		case 3:
			s.MatchExpressions = append(s.MatchExpressions, &metav1.LabelSelectorRequirement{Key: k, Operator: "In", Values: []string{g.pick(vs...), g.pick(vs...)}})
		case 4:
			s.MatchExpressions = append(s.MatchExpressions, &metav1.LabelSelectorRequirement{Key: k, Operator: "NotIn", Values: []string{g.pick(vs...)}})
		case 5:
			s.MatchExpressions = append(s.MatchExpressions, &metav1.LabelSelectorRequirement{Key: k, Operator: g.pick("Exists", "DoesNotExist")})
		}
	}
	return s
}

func (g randomAffinity) term() *corev1.PodAffinityTerm {
	t := &corev1.PodAffinityTerm{LabelSelector: g.selector(), TopologyKey: g.pick(hostname, hostname, zone, "rack")}
	switch g.r.IntN(6) {
	case 0:
		t.Namespaces = []string{g.pick(randomNamespaces...), g.pick(randomNamespaces...)}
	case 1:
		t.NamespaceSelector = &metav1.LabelSelector{}
	case 2:
		t.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"env": g.pick("prod", "dev")}}
	}
	return t
}

func (g randomAffinity) terms(max int) []*corev1.PodAffinityTerm {
	var out []*corev1.PodAffinityTerm
	for range g.r.IntN(max + 1) {
		out = append(out, g.term())
	}
	return out
}

func (g randomAffinity) weighted() []*corev1.WeightedPodAffinityTerm {
	var out []*corev1.WeightedPodAffinityTerm
	for range 1 + g.r.IntN(2) {
		out = append(out, &corev1.WeightedPodAffinityTerm{Weight: 1 + g.r.Int32N(100), PodAffinityTerm: g.term()})
	}
	return out
}

func (g randomAffinity) pod(name string, termChance int) *corev1.Pod {
	p := &corev1.Pod{
		Metadata: &metav1.ObjectMeta{Namespace: g.pick(randomNamespaces...), Name: name, Uid: "uid-" + name, Labels: g.labels()},
		Spec:     &corev1.PodSpec{},
	}
	if g.r.IntN(termChance) == 0 {
		p.Spec.Affinity = &corev1.Affinity{
			PodAffinity:     &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: g.terms(1)},
			PodAntiAffinity: &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: g.terms(2)},
		}
		if g.r.IntN(3) == 0 {
			p.Spec.Affinity.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution = g.weighted()
		}
		if g.r.IntN(3) == 0 {
			p.Spec.Affinity.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution = g.weighted()
		}
	}
	return p
}

func (g randomAffinity) node(name string) *corev1.Node {
	n := node(name, "4", "8Gi", "110")
	n.Metadata.Labels = map[string]string{hostname: name}
	if g.r.IntN(5) > 0 {
		n.Metadata.Labels[zone] = g.pick("a", "b", "c")
	}
	if g.r.IntN(2) == 0 {
		n.Metadata.Labels["rack"] = g.pick("r1", "r2")
	}
	return n
}

// The index gives what the plain scan of every pod gives, over random
// pods, labels, terms, namespaces and topologies: the same counts in
// PreFilter, hence the same Filter verdicts, and the same scores.
func TestInterPodAffinityIndexMatchesScan(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	g := randomAffinity{r: rand.New(rand.NewPCG(seed, 18))}
	ns := fakeNamespaces{"default": {}, "prod": {"env": "prod"}, "dev": {"env": "dev"}}
	for iter := range 400 {
		var nodes []*framework.NodeInfo
		for i := range 1 + g.r.IntN(8) {
			var pods []*corev1.Pod
			for j := range g.r.IntN(6) {
				pods = append(pods, g.pod(fmt.Sprintf("p%d-%d", i, j), 3))
			}
			nodes = append(nodes, nodeInfo(g.node(fmt.Sprintf("n%d", i)), pods...))
		}
		incoming := framework.NewPodInfo(g.pod("incoming", 1))
		if incoming.AffinityError != nil {
			t.Fatal(incoming.AffinityError)
		}
		indexed := framework.NewSnapshot(nodes...)
		plain := framework.NewSnapshot(nodes...)
		plain.AffinityIndex = nil
		run := func(snap *framework.Snapshot) (*affinityFilterState, map[string]string, map[string]int64) {
			pl, _ := NewInterPodAffinity(nil, affinityHandle{snap: snap, ns: ns})
			p := pl.(*InterPodAffinityPlugin)
			state := framework.NewCycleState()
			verdicts := map[string]string{}
			_, st := p.PreFilter(ctx, state, incoming)
			s, _ := framework.ReadAs[*affinityFilterState](state, podAffinityFilterKey)
			for _, n := range nodes {
				if st.IsSkip() {
					verdicts[n.Name()] = "Skip"
				} else {
					verdicts[n.Name()] = statusString(p.Filter(ctx, state, incoming, n))
				}
			}
			var scores map[string]int64
			if st := p.PreScore(ctx, state, incoming, nodes); !st.IsSkip() {
				scores = map[string]int64{}
				for _, n := range nodes {
					scores[n.Name()], _ = p.Score(ctx, state, incoming, n)
				}
			}
			return s, verdicts, scores
		}
		s, verdicts, scores := run(indexed)
		_, plainVerdicts, plainScores := run(plain)
		if s != nil {
			existing := scanExistingAntiAffinity(incoming, ns[incoming.Pod.GetMetadata().GetNamespace()], nodes)
			aff, anti := scanIncoming(s.affinityTerms, s.antiAffinityTerms, nodes)
			if !maps.Equal(s.existingAntiAffinityCounts, existing) || !maps.Equal(s.affinityCounts, aff) || !maps.Equal(s.antiAffinityCounts, anti) {
				t.Fatalf("case %d: indexed counts differ from the scan's\nexisting anti %v\n    scan %v\naffinity %v\n    scan %v\nanti %v\n    scan %v\nindex:\n%s",
					iter, s.existingAntiAffinityCounts, existing, s.affinityCounts, aff, s.antiAffinityCounts, anti, indexed.AffinityIndex)
			}
		}
		if !maps.Equal(verdicts, plainVerdicts) {
			t.Fatalf("case %d: Filter with the index %v, by scanning %v", iter, verdicts, plainVerdicts)
		}
		if !maps.Equal(scores, plainScores) || (scores == nil) != (plainScores == nil) {
			t.Fatalf("case %d: scores with the index %v, by scanning %v", iter, scores, plainScores)
		}
	}
}

// BenchmarkInterPodAffinityAntiAffinity is one pod's PreFilter, Filter of
// every node and PreScore as in bench's scheduler.antiaffinity: 1,000
// nodes holding 5,000 pods in groups of 10 with anti-affinity on the
// hostname (required, as the bench, or preferred), with the snapshot's
// index and with the plain scan:
// go test -run XXX -bench InterPodAffinityAntiAffinity ./plugins/
func BenchmarkInterPodAffinityAntiAffinity(b *testing.B) {
	b.Run("required", func(b *testing.B) { benchmarkAntiAffinity(b, false) })
	b.Run("preferred", func(b *testing.B) { benchmarkAntiAffinity(b, true) })
}

func benchmarkAntiAffinity(b *testing.B, preferred bool) {
	group := func(i int) *corev1.Pod {
		g := fmt.Sprintf("g%04d", i/10)
		p := &corev1.Pod{
			Metadata: &metav1.ObjectMeta{Namespace: "bench", Name: fmt.Sprintf("pod-%05d", i), Uid: fmt.Sprintf("uid-%05d", i),
				Labels: map[string]string{"app": "antiaffinity-bench", "group": g}},
			Spec: &corev1.PodSpec{},
		}
		t := &corev1.PodAffinityTerm{
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"group": g}}, TopologyKey: hostname,
		}
		if preferred {
			return preferAntiAffinity(p, weighted(100, t))
		}
		return requireAntiAffinity(p, t)
	}
	var nodes []*framework.NodeInfo
	for i := range 1000 {
		n := node(fmt.Sprintf("node-%04d", i), "32", "256Gi", "110")
		n.Metadata.Labels = map[string]string{hostname: n.Metadata.Name}
		ni := framework.NewNodeInfo(n)
		for j := range 5 {
			// Spread each group over 10 nodes.
			ni.AddPod(framework.NewPodInfo(group((j*1000 + i) % 5000)))
		}
		nodes = append(nodes, ni)
	}
	incoming := framework.NewPodInfo(group(42))
	for _, indexed := range []bool{true, false} {
		b.Run(fmt.Sprintf("index=%v", indexed), func(b *testing.B) {
			snap := framework.NewSnapshot(nodes...)
			if !indexed {
				snap.AffinityIndex = nil
			}
			pl, _ := NewInterPodAffinity(nil, affinityHandle{snap: snap})
			p := pl.(*InterPodAffinityPlugin)
			b.ReportAllocs()
			for b.Loop() {
				state := framework.NewCycleState()
				_, st := p.PreFilter(ctx, state, incoming)
				if !st.IsSuccess() && !st.IsSkip() {
					b.Fatal(st)
				}
				for _, n := range nodes {
					if !st.IsSkip() {
						p.Filter(ctx, state, incoming, n)
					}
				}
				p.PreScore(ctx, state, incoming, nodes)
			}
		})
	}
}
