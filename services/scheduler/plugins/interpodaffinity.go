package plugins

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"

	"skiff.dev/services/scheduler/config"
	"skiff.dev/services/scheduler/framework"
)

// Reasons of InterPodAffinity, as Kubernetes words them.
const (
	ReasonAffinityRulesNotMatch             = "node(s) didn't match pod affinity rules"
	ReasonAntiAffinityRulesNotMatch         = "node(s) didn't match pod anti-affinity rules"
	ReasonExistingAntiAffinityRulesNotMatch = "node(s) didn't satisfy existing pods anti-affinity rules"
)

// HardPodAffinityWeight is the score an existing pod's required affinity
// term gives the nodes near it when the pod being placed matches it
// (Kubernetes' InterPodAffinityArgs.hardPodAffinityWeight default).
const HardPodAffinityWeight = framework.HardPodAffinityWeight

// InterPodAffinityPlugin is InterPodAffinity: a pod's podAffinity and
// podAntiAffinity terms, and the existing pods' anti-affinity terms, over
// the nodes' topology domains (the value of a term's topologyKey label).
//
// Filter (required terms): a node is rejected when
//   - some required affinity term of the pod has no matching pod in the
//     node's domain (unless no pod anywhere matches and the pod matches
//     its own terms: the first pod of a group);
//   - some required anti-affinity term of the pod has a matching pod in
//     the node's domain;
//   - some pod in one of the node's domains has a required anti-affinity
//     term the pod matches.
//
// PreFilter counts matching pods per (topologyKey, value) pair once per
// pod: the pod's terms against every pod, and the required anti-affinity
// terms of the pods that have some (NodeInfo.PodsWithRequiredAntiAffinity)
// against the pod; Filter then only looks the node's labels up.
//
// Score (preferred terms): per domain, the sum of the weights of the
// pod's preferred affinity terms that pods there match, minus those of
// its preferred anti-affinity terms, plus, symmetrically, the existing
// pods' preferred terms (and required affinity terms, with weight
// HardPodAffinityWeight) the pod matches; normalized to 0..100 between
// the lowest and the highest node.
type InterPodAffinityPlugin struct {
	h framework.Handle
}

var (
	_ framework.PreFilterPlugin = (*InterPodAffinityPlugin)(nil)
	_ framework.FilterPlugin    = (*InterPodAffinityPlugin)(nil)
	_ framework.PreScorePlugin  = (*InterPodAffinityPlugin)(nil)
	_ framework.ScorePlugin     = (*InterPodAffinityPlugin)(nil)
)

// NewInterPodAffinity builds InterPodAffinity (it takes no args).
func NewInterPodAffinity(_ any, h framework.Handle) (framework.Plugin, error) {
	return &InterPodAffinityPlugin{h: h}, nil
}

// Name implements framework.Plugin.
func (p *InterPodAffinityPlugin) Name() string { return config.InterPodAffinity }

const (
	podAffinityFilterKey framework.StateKey = config.InterPodAffinity + "/filter"
	podAffinityScoreKey  framework.StateKey = config.InterPodAffinity + "/score"
)

// topologyPair is one topology domain: a node label and its value.
type topologyPair struct {
	key, value string
}

// topologyCounts counts matching pods (or terms) per domain.
type topologyCounts map[topologyPair]int64

func (m topologyCounts) add(o topologyCounts) {
	for k, v := range o {
		m[k] += v
	}
}

// keyedCounts are topologyCounts grouped by topology key (few), for
// Filter: one lookup of a node label value per key instead of hashing a
// (key, value) pair.
type keyedCounts []keyCounts

type keyCounts struct {
	key    string
	values map[string]int64
}

// byKey groups the positive counts of m by topology key.
func (m topologyCounts) byKey() keyedCounts {
	var out keyedCounts
	for tp, n := range m {
		if n <= 0 {
			continue
		}
		i := slices.IndexFunc(out, func(kc keyCounts) bool { return kc.key == tp.key })
		if i < 0 {
			i = len(out)
			out = append(out, keyCounts{key: tp.key, values: map[string]int64{}})
		}
		out[i].values[tp.value] = n
	}
	return out
}

// get is the count of domain (key, value).
func (kc keyedCounts) get(key, value string) int64 {
	for i := range kc {
		if kc[i].key == key {
			return kc[i].values[value]
		}
	}
	return 0
}

// anyIn reports whether one of the node's domains (its labels nl) has a
// count.
func (kc keyedCounts) anyIn(nl map[string]string) bool {
	for i := range kc {
		if v, ok := nl[kc[i].key]; ok && kc[i].values[v] > 0 {
			return true
		}
	}
	return false
}

// affinityFilterState is what PreFilter computes for Filter; AddPod and
// RemovePod (interpodaffinity_extensions.go) keep its counts true to a
// node with a pod more or less.
type affinityFilterState struct {
	// The pod's required terms, their namespace selectors resolved.
	affinityTerms, antiAffinityTerms []framework.AffinityTerm
	// selfMatch: the pod matches all its own required affinity terms.
	selfMatch bool
	// namespaceLabels are the labels of the pod's namespace, which the
	// existing pods' namespace selectors are matched against.
	namespaceLabels map[string]string
	*affinityTally
}

// affinityTally is the counts of an affinityFilterState, which its clones
// share until one of them changes them (affinityFilterState.mutable).
type affinityTally struct {
	// Pods matching the pod's required affinity terms (counted only for
	// pods matching all of them) and anti-affinity terms, per domain.
	affinityCounts, antiAffinityCounts topologyCounts
	// Existing pods' required anti-affinity terms the pod matches, per
	// domain of the existing pod's node.
	existingAntiAffinityCounts topologyCounts
	// The three counts grouped by key, as Filter reads them.
	affinityByKey, antiAffinityByKey, existingAntiAffinityByKey keyedCounts
	// shared is set once a clone of the state shares the tally.
	shared atomic.Bool
}

// resolveNamespaces returns terms with each namespace selector (other
// than {} and Nothing) replaced by the names of the namespaces it
// matches now, as Kubernetes does once per cycle; terms is not changed.
func (p *InterPodAffinityPlugin) resolveNamespaces(terms []framework.AffinityTerm) []framework.AffinityTerm {
	var out []framework.AffinityTerm
	for i := range terms {
		t := &terms[i]
		if t.NamespaceSelector.Empty() || t.NamespaceSelector.IsNothing() {
			continue
		}
		if out == nil {
			out = slices.Clone(terms)
		}
		var matching []string
		if ns := p.namespaces(); ns != nil {
			matching = ns.NamespacesMatching(t.NamespaceSelector)
		}
		out[i].ResolveNamespaces(matching)
	}
	if out == nil {
		return terms
	}
	return out
}

func (p *InterPodAffinityPlugin) namespaces() framework.NamespaceLister {
	if p.h == nil {
		return nil
	}
	return p.h.Namespaces()
}

// namespaceLabels are the labels of the pod's namespace (nil if unknown).
func (p *InterPodAffinityPlugin) namespaceLabels(pod *framework.PodInfo) map[string]string {
	if ns := p.namespaces(); ns != nil {
		return ns.NamespaceLabels(pod.Pod.GetMetadata().GetNamespace())
	}
	return nil
}

// PreFilter implements framework.PreFilterPlugin: Skip when neither the
// pod nor any existing pod has a required term that applies.
func (p *InterPodAffinityPlugin) PreFilter(_ context.Context, state *framework.CycleState, pod *framework.PodInfo) (*framework.PreFilterResult, *framework.Status) {
	if err := pod.AffinityError; err != nil {
		return nil, framework.NewStatus(framework.UnschedulableAndUnresolvable, err.Error())
	}
	snap := p.h.Snapshot()
	withAnti := snap.HavePodsWithRequiredAntiAffinityList
	if len(pod.RequiredAffinityTerms) == 0 && len(pod.RequiredAntiAffinityTerms) == 0 && len(withAnti) == 0 {
		return nil, framework.NewStatus(framework.Skip)
	}
	s := &affinityFilterState{
		affinityTerms:     p.resolveNamespaces(pod.RequiredAffinityTerms),
		antiAffinityTerms: p.resolveNamespaces(pod.RequiredAntiAffinityTerms),
		namespaceLabels:   p.namespaceLabels(pod),
		affinityTally:     &affinityTally{},
	}
	s.selfMatch = framework.MatchesAll(s.affinityTerms, pod.Pod, nil)
	s.existingAntiAffinityCounts = p.existingAntiAffinityCounts(pod, s.namespaceLabels, snap.AffinityIndex, withAnti)
	s.affinityCounts, s.antiAffinityCounts = p.incomingCounts(s, snap.AffinityIndex, snap.List())
	if len(s.existingAntiAffinityCounts) == 0 && len(s.affinityTerms) == 0 && len(s.antiAffinityTerms) == 0 {
		return nil, framework.NewStatus(framework.Skip)
	}
	s.affinityByKey = s.affinityCounts.byKey()
	s.antiAffinityByKey = s.antiAffinityCounts.byKey()
	s.existingAntiAffinityByKey = s.existingAntiAffinityCounts.byKey()
	state.Write(podAffinityFilterKey, s)
	return nil, nil
}

// existingAntiAffinityCounts counts, per domain, the required
// anti-affinity terms of the pods on nodes that the pod matches: from the
// snapshot's index, the distinct terms that may select the pod, with
// their instances per domain; without an index, every term of the pods
// on nodes.
func (p *InterPodAffinityPlugin) existingAntiAffinityCounts(pod *framework.PodInfo, nsLabels map[string]string, idx *framework.AffinityIndex, nodes []*framework.NodeInfo) topologyCounts {
	counts := topologyCounts{}
	if len(nodes) == 0 {
		return counts
	}
	if idx != nil {
		idx.ForEachAntiAffinityTerm(pod.Pod, func(t *framework.AffinityTerm, byValue map[string]int64) {
			if len(byValue) == 0 || !t.Matches(pod.Pod, nsLabels) {
				return
			}
			for v, n := range byValue {
				counts[topologyPair{t.TopologyKey, v}] += n
			}
		})
		return counts
	}
	p.forEachNode(nodes, counts, func(ni *framework.NodeInfo, local topologyCounts) {
		nl := ni.Node().GetMetadata().GetLabels()
		for _, existing := range ni.PodsWithRequiredAntiAffinity {
			for i := range existing.RequiredAntiAffinityTerms {
				t := &existing.RequiredAntiAffinityTerms[i]
				if v, ok := nl[t.TopologyKey]; ok && t.Matches(pod.Pod, nsLabels) {
					local[topologyPair{t.TopologyKey, v}]++
				}
			}
		}
	})
	return counts
}

// incomingCounts counts, per domain, the pods matching all the pod's
// required affinity terms (once per term) and the pods matching each of
// its required anti-affinity terms. With an index, a term (or the
// affinity terms together) that requires a label pair looks only at the
// pods having it; the others look at every pod of nodes.
func (p *InterPodAffinityPlugin) incomingCounts(s *affinityFilterState, idx *framework.AffinityIndex, nodes []*framework.NodeInfo) (affinity, anti topologyCounts) {
	affinity, anti = topologyCounts{}, topologyCounts{}
	scanAffinity := len(s.affinityTerms) > 0
	scanAnti := s.antiAffinityTerms
	if idx != nil {
		if scanAffinity && idx.ForEachCandidatePod(s.affinityTerms, func(e *framework.PodInfo, ni *framework.NodeInfo) {
			countAffinity(affinity, s.affinityTerms, e, ni.Node().GetMetadata().GetLabels())
		}) {
			scanAffinity = false
		}
		scanAnti = nil
		for i := range s.antiAffinityTerms {
			one := s.antiAffinityTerms[i : i+1]
			if !idx.ForEachCandidatePod(one, func(e *framework.PodInfo, ni *framework.NodeInfo) {
				countAntiAffinity(anti, one, e, ni.Node().GetMetadata().GetLabels())
			}) {
				scanAnti = append(scanAnti, one[0])
			}
		}
	}
	if !scanAffinity && len(scanAnti) == 0 {
		return affinity, anti
	}
	var mu sync.Mutex
	p.h.Parallelizer().ForEachChunk(len(nodes), func(lo, hi int) bool {
		aff, an := topologyCounts{}, topologyCounts{}
		for _, ni := range nodes[lo:hi] {
			nl := ni.Node().GetMetadata().GetLabels()
			for _, existing := range ni.Pods {
				if scanAffinity {
					countAffinity(aff, s.affinityTerms, existing, nl)
				}
				countAntiAffinity(an, scanAnti, existing, nl)
			}
		}
		if len(aff) > 0 || len(an) > 0 {
			mu.Lock()
			affinity.add(aff)
			anti.add(an)
			mu.Unlock()
		}
		return true
	})
	return affinity, anti
}

// countAffinity counts existing, on a node labelled nl, in the domain of
// each of terms when it matches them all.
func countAffinity(counts topologyCounts, terms []framework.AffinityTerm, existing *framework.PodInfo, nl map[string]string) {
	if !framework.MatchesAll(terms, existing.Pod, nil) {
		return
	}
	for i := range terms {
		if v, ok := nl[terms[i].TopologyKey]; ok {
			counts[topologyPair{terms[i].TopologyKey, v}]++
		}
	}
}

// countAntiAffinity counts existing, on a node labelled nl, in the domain
// of each of terms it matches.
func countAntiAffinity(counts topologyCounts, terms []framework.AffinityTerm, existing *framework.PodInfo, nl map[string]string) {
	for i := range terms {
		t := &terms[i]
		if v, ok := nl[t.TopologyKey]; ok && t.Matches(existing.Pod, nil) {
			counts[topologyPair{t.TopologyKey, v}]++
		}
	}
}

// forEachNode runs fn over nodes in parallel chunks, each with counts of
// its own, and adds them all to counts.
func (p *InterPodAffinityPlugin) forEachNode(nodes []*framework.NodeInfo, counts topologyCounts, fn func(*framework.NodeInfo, topologyCounts)) {
	var mu sync.Mutex
	p.h.Parallelizer().ForEachChunk(len(nodes), func(lo, hi int) bool {
		local := topologyCounts{}
		for _, ni := range nodes[lo:hi] {
			fn(ni, local)
		}
		if len(local) > 0 {
			mu.Lock()
			counts.add(local)
			mu.Unlock()
		}
		return true
	})
}

// Filter implements framework.FilterPlugin.
func (p *InterPodAffinityPlugin) Filter(_ context.Context, state *framework.CycleState, _ *framework.PodInfo, node *framework.NodeInfo) *framework.Status {
	s, ok := framework.ReadAs[*affinityFilterState](state, podAffinityFilterKey)
	if !ok {
		return framework.NewStatus(framework.Error, "InterPodAffinity: Filter without PreFilter")
	}
	nl := node.Node().GetMetadata().GetLabels()
	if !s.satisfiesAffinity(nl) {
		return framework.NewStatus(framework.UnschedulableAndUnresolvable, ReasonAffinityRulesNotMatch)
	}
	if !s.satisfiesAntiAffinity(nl) {
		return framework.NewStatus(framework.Unschedulable, ReasonAntiAffinityRulesNotMatch)
	}
	if !s.satisfiesExistingAntiAffinity(nl) {
		return framework.NewStatus(framework.Unschedulable, ReasonExistingAntiAffinityRulesNotMatch)
	}
	return nil
}

// satisfiesAffinity: every required affinity term has a matching pod in
// the node's domain; the node must have every term's key. A pod that
// matches its own terms may go anywhere with the keys when no pod
// matches anywhere (the first pod of a group).
func (s *affinityFilterState) satisfiesAffinity(nl map[string]string) bool {
	podsExist := true
	for i := range s.affinityTerms {
		k := s.affinityTerms[i].TopologyKey
		v, ok := nl[k]
		if !ok {
			return false
		}
		if s.affinityByKey.get(k, v) <= 0 {
			podsExist = false
		}
	}
	return podsExist || (len(s.affinityCounts) == 0 && s.selfMatch)
}

// satisfiesAntiAffinity: no required anti-affinity term has a matching
// pod in the node's domain.
func (s *affinityFilterState) satisfiesAntiAffinity(nl map[string]string) bool {
	return !s.antiAffinityByKey.anyIn(nl)
}

// satisfiesExistingAntiAffinity: no existing pod's required anti-affinity
// term that the pod matches covers one of the node's domains.
func (s *affinityFilterState) satisfiesExistingAntiAffinity(nl map[string]string) bool {
	return !s.existingAntiAffinityByKey.anyIn(nl)
}
