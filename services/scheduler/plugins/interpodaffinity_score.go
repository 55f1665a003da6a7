package plugins

import (
	"context"
	"math"
	"sync"

	"skiff.dev/services/scheduler/framework"
)

// topologyScores is a score per domain: topologyKey -> value -> score.
type topologyScores map[string]map[string]int64

func (m topologyScores) add(key, value string, w int64) {
	vs := m[key]
	if vs == nil {
		vs = map[string]int64{}
		m[key] = vs
	}
	vs[value] += w
}

func (m topologyScores) merge(o topologyScores) {
	for k, vs := range o {
		for v, w := range vs {
			m.add(k, v, w)
		}
	}
}

// affinityScoreState is what PreScore computes for Score.
type affinityScoreState struct {
	scores topologyScores
}

// PreScore implements framework.PreScorePlugin: it sums, per domain, the
// weights of the preferred terms (the pod's, matched by the pods there;
// theirs, matched by the pod) and the existing pods' required affinity
// terms the pod matches. Skip when nothing scored.
//
// With the snapshot's index, each of the pod's preferred terms that
// requires a label pair looks only at the pods having it (the others at
// every pod), and the existing pods' terms are read from the index's
// distinct scoring terms that may select the pod, with their weights per
// domain. Without it, every pod with terms (every pod, when the pod has
// preferred terms) is looked at.
func (p *InterPodAffinityPlugin) PreScore(_ context.Context, state *framework.CycleState, pod *framework.PodInfo, nodes []*framework.NodeInfo) *framework.Status {
	if len(nodes) == 0 || pod.AffinityError != nil {
		return framework.NewStatus(framework.Skip)
	}
	snap := p.h.Snapshot()
	idx := snap.AffinityIndex
	affinity := p.resolveWeighted(pod.PreferredAffinityTerms)
	anti := p.resolveWeighted(pod.PreferredAntiAffinityTerms)
	nsLabels := p.namespaceLabels(pod)
	scores := topologyScores{}

	// What is left to scan: the pod's terms the index cannot narrow, and
	// (without an index) the existing pods' terms.
	scanAffinity, scanAnti := affinity, anti
	existingTerms := idx == nil
	if idx != nil {
		scanAffinity = scoreCandidates(idx, scores, affinity, 1)
		scanAnti = scoreCandidates(idx, scores, anti, -1)
		idx.ForEachScoringTerm(pod.Pod, func(t *framework.AffinityTerm, counts, weights map[string]int64) {
			if len(counts) == 0 || !t.Matches(pod.Pod, nsLabels) {
				return
			}
			for v, n := range counts {
				if n > 0 {
					scores.add(t.TopologyKey, v, weights[v])
				}
			}
		})
	}
	var scan []*framework.NodeInfo
	scanAll := len(scanAffinity)+len(scanAnti) > 0
	switch {
	case scanAll:
		scan = snap.List()
	case existingTerms:
		scan = snap.HavePodsWithAffinityList
	}
	var mu sync.Mutex
	p.h.Parallelizer().ForEachChunk(len(scan), func(lo, hi int) bool {
		local := topologyScores{}
		for _, ni := range scan[lo:hi] {
			nl := ni.Node().GetMetadata().GetLabels()
			if len(nl) == 0 {
				continue
			}
			pods := ni.PodsWithAffinity
			if scanAll {
				pods = ni.Pods
			}
			for _, existing := range pods {
				scoreExisting(local, pod, existing, nl, scanAffinity, scanAnti, existingTerms, nsLabels)
			}
		}
		if len(local) > 0 {
			mu.Lock()
			scores.merge(local)
			mu.Unlock()
		}
		return true
	})
	if len(scores) == 0 {
		return framework.NewStatus(framework.Skip)
	}
	state.Write(podAffinityScoreKey, &affinityScoreState{scores: scores})
	return nil
}

// scoreCandidates adds to m, for each of terms (resolved), sign times its
// weight in the domain of each pod that the index offers and the term
// matches; it returns the terms the index cannot narrow (no required
// label pair).
func scoreCandidates(idx *framework.AffinityIndex, m topologyScores, terms []framework.WeightedAffinityTerm, sign int64) []framework.WeightedAffinityTerm {
	var left []framework.WeightedAffinityTerm
	for i := range terms {
		t := &terms[i].AffinityTerm
		w := sign * int64(terms[i].Weight)
		if !idx.ForEachCandidatePod([]framework.AffinityTerm{*t}, func(e *framework.PodInfo, ni *framework.NodeInfo) {
			if v, ok := ni.Node().GetMetadata().GetLabels()[t.TopologyKey]; ok && t.Matches(e.Pod, nil) {
				m.add(t.TopologyKey, v, w)
			}
		}) {
			left = append(left, terms[i])
		}
	}
	return left
}

// scoreExisting adds to m what one existing pod on a node labelled nl
// contributes: matching the pod's terms affinity and anti, and, when
// existingTerms, its own terms matched by the pod.
func scoreExisting(m topologyScores, pod, existing *framework.PodInfo, nl map[string]string,
	affinity, anti []framework.WeightedAffinityTerm, existingTerms bool, nsLabels map[string]string) {
	term := func(t *framework.AffinityTerm, w int64, target *framework.PodInfo, ns map[string]string) {
		if v, ok := nl[t.TopologyKey]; ok && t.Matches(target.Pod, ns) {
			m.add(t.TopologyKey, v, w)
		}
	}
	// The pod's preferred terms, matched by the existing pod (their
	// namespace selectors are resolved: no namespace labels needed).
	for i := range affinity {
		term(&affinity[i].AffinityTerm, int64(affinity[i].Weight), existing, nil)
	}
	for i := range anti {
		term(&anti[i].AffinityTerm, -int64(anti[i].Weight), existing, nil)
	}
	// The existing pod's terms, matched by the pod.
	if !existingTerms {
		return
	}
	for i := range existing.RequiredAffinityTerms {
		term(&existing.RequiredAffinityTerms[i], HardPodAffinityWeight, pod, nsLabels)
	}
	for i := range existing.PreferredAffinityTerms {
		t := &existing.PreferredAffinityTerms[i]
		term(&t.AffinityTerm, int64(t.Weight), pod, nsLabels)
	}
	for i := range existing.PreferredAntiAffinityTerms {
		t := &existing.PreferredAntiAffinityTerms[i]
		term(&t.AffinityTerm, -int64(t.Weight), pod, nsLabels)
	}
}

// resolveWeighted is resolveNamespaces for weighted terms.
func (p *InterPodAffinityPlugin) resolveWeighted(terms []framework.WeightedAffinityTerm) []framework.WeightedAffinityTerm {
	if len(terms) == 0 {
		return nil
	}
	plain := make([]framework.AffinityTerm, len(terms))
	for i := range terms {
		plain[i] = terms[i].AffinityTerm
	}
	plain = p.resolveNamespaces(plain)
	out := make([]framework.WeightedAffinityTerm, len(terms))
	for i := range terms {
		out[i] = framework.WeightedAffinityTerm{AffinityTerm: plain[i], Weight: terms[i].Weight}
	}
	return out
}

// Score implements framework.ScorePlugin: the sum of the scores of the
// node's domains.
func (p *InterPodAffinityPlugin) Score(_ context.Context, state *framework.CycleState, _ *framework.PodInfo, node *framework.NodeInfo) (int64, *framework.Status) {
	s, ok := framework.ReadAs[*affinityScoreState](state, podAffinityScoreKey)
	if !ok {
		return 0, framework.NewStatus(framework.Error, "InterPodAffinity: Score without PreScore")
	}
	nl := node.Node().GetMetadata().GetLabels()
	var score int64
	for k, vs := range s.scores {
		if v, ok := nl[k]; ok {
			score += vs[v]
		}
	}
	return score, nil
}

// ScoreExtensions implements framework.ScorePlugin.
func (p *InterPodAffinityPlugin) ScoreExtensions() framework.ScoreExtensions { return p }

// NormalizeScore implements framework.ScoreExtensions: the lowest node
// gets 0, the highest 100, linearly between (all 0 when they are equal).
func (p *InterPodAffinityPlugin) NormalizeScore(_ context.Context, _ *framework.CycleState, _ *framework.PodInfo, scores []framework.NodeScore) *framework.Status {
	NormalizeAffinityScores(scores)
	return nil
}

// NormalizeAffinityScores maps raw affinity scores (any sign) to 0..100.
func NormalizeAffinityScores(scores []framework.NodeScore) {
	lo, hi := int64(math.MaxInt64), int64(math.MinInt64)
	for _, s := range scores {
		lo, hi = min(lo, s.Score), max(hi, s.Score)
	}
	diff := hi - lo
	for i := range scores {
		f := 0.0
		if diff > 0 {
			f = float64(framework.MaxNodeScore) * float64(scores[i].Score-lo) / float64(diff)
		}
		scores[i].Score = int64(f)
	}
}
