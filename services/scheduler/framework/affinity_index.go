package framework

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"

	"skiff.dev/internal/labels"
	corev1 "skiff.dev/proto/core/v1"
)

// HardPodAffinityWeight is the score an existing pod's required affinity
// term gives the nodes near it when the pod being placed matches it
// (Kubernetes' InterPodAffinityArgs.hardPodAffinityWeight default).
const HardPodAffinityWeight = 1

// LabelPair is one label, key=value.
type LabelPair struct{ Key, Value string }

// requiredPairs lists the key=value pairs every label set sel matches must
// hold: its "=" requirements and its "in" requirements of one value.
func requiredPairs(sel labels.Selector) []LabelPair {
	var out []LabelPair
	for _, r := range sel.Requirements() {
		switch vs := r.Values(); {
		case r.Operator() == labels.Equals, r.Operator() == labels.In && len(vs) == 1:
			out = append(out, LabelPair{r.Key(), vs[0]})
		}
	}
	return out
}

// termKey is a canonical form of t: two terms with the same key select
// the same pods over the same topology key (the same set of namespaces,
// namespace selector, label selector and topology key).
func termKey(t *AffinityTerm) string {
	if t.key != "" {
		return t.key
	}
	ns := slices.Compact(slices.Sorted(slices.Values(t.Namespaces)))
	var b strings.Builder
	b.WriteString(t.TopologyKey)
	b.WriteByte(0)
	b.WriteString(strings.Join(ns, ","))
	b.WriteByte(0)
	b.WriteString(t.NamespaceSelector.String())
	b.WriteByte(0)
	b.WriteString(t.Selector.String())
	return b.String()
}

// AffinityIndex indexes a snapshot's pods for InterPodAffinity, so that a
// scheduling cycle looks only at the pods and terms that may match
// instead of at every pod:
//
//   - the pods' required anti-affinity terms, each distinct term (by
//     termKey) kept once with the number of its instances per value of
//     its topology key on the nodes of the pods that have it, filed under
//     one of the label pairs its selector requires (the pair with the
//     fewest terms when the term was first indexed), or among the
//     unpaired terms when it requires none: the terms that may select a
//     pod are those filed under one of the pod's labels, and the unpaired
//     ones;
//   - likewise the terms Score matches the pod being placed against
//     (required affinity, preferred affinity and anti-affinity), with
//     also the sum of their weights per value;
//   - every pod by namespace and label pair, with its node: the pods a
//     term may select are those of its namespaces having the rarest of
//     the pairs its selector requires.
//
// The snapshot keeps it in step with its NodeInfos as the cache updates
// them (Snapshot.CopyNodeInfo, IndexNodeInfo, UnindexNodeInfo). Like the
// snapshot, it is written by one goroutine between cycles and only read
// during a cycle (possibly in parallel).
type AffinityIndex struct {
	// anti holds the required anti-affinity terms; scoringTerms the terms
	// Score matches the pod being placed against (required affinity with
	// weight HardPodAffinityWeight, preferred affinity with its weight,
	// preferred anti-affinity with minus its weight).
	anti, scoringTerms termIndex
	// pods: namespace -> label pair -> pod -> its node.
	pods map[string]map[LabelPair]map[*PodInfo]*NodeInfo
	// scoring counts the pods with scoring terms.
	scoring int
	// scratch counts a node's pods while CopyNodeInfo diffs them.
	scratch map[*PodInfo]int
}

// termIndex holds distinct terms (by termKey), each filed under one of
// the label pairs its selector requires (the pair with the fewest terms
// when the term was first indexed), or among the unpaired terms.
type termIndex struct {
	terms    map[string]*indexedTerm
	byPair   map[LabelPair][]*indexedTerm
	unpaired []*indexedTerm
}

// indexedTerm is one distinct term.
type indexedTerm struct {
	term   AffinityTerm
	key    string
	pair   LabelPair
	paired bool
	// refs is the number of instances (pod, term) indexed; counts those
	// on nodes with the topology key, per value, and weights the sum of
	// their weights (scoring terms only).
	refs    int
	counts  map[string]int64
	weights map[string]int64
}

func newTermIndex() termIndex {
	return termIndex{terms: map[string]*indexedTerm{}, byPair: map[LabelPair][]*indexedTerm{}}
}

// add indexes an instance of t, of weight w, on a node labelled nl.
func (ti *termIndex) add(t *AffinityTerm, nl map[string]string, w int64) {
	key := termKey(t)
	it := ti.terms[key]
	if it == nil {
		it = &indexedTerm{term: *t, key: key, counts: map[string]int64{}}
		best := -1
		for _, lp := range t.pairs {
			if n := len(ti.byPair[lp]); best < 0 || n < best {
				it.pair, it.paired, best = lp, true, n
			}
		}
		if it.paired {
			ti.byPair[it.pair] = append(ti.byPair[it.pair], it)
		} else {
			ti.unpaired = append(ti.unpaired, it)
		}
		ti.terms[key] = it
	}
	it.refs++
	if v, ok := nl[t.TopologyKey]; ok {
		it.counts[v]++
		if w != 0 {
			if it.weights == nil {
				it.weights = map[string]int64{}
			}
			it.weights[v] += w
		}
	}
}

// remove undoes add(t, nl, w).
func (ti *termIndex) remove(t *AffinityTerm, nl map[string]string, w int64) {
	it := ti.terms[termKey(t)]
	if it == nil {
		return
	}
	if v, ok := nl[t.TopologyKey]; ok {
		if it.counts[v]--; it.counts[v] <= 0 {
			delete(it.counts, v)
			delete(it.weights, v)
		} else if w != 0 {
			it.weights[v] -= w
		}
	}
	if it.refs--; it.refs > 0 {
		return
	}
	delete(ti.terms, it.key)
	if !it.paired {
		ti.unpaired = removeTerm(ti.unpaired, it)
		return
	}
	if list := removeTerm(ti.byPair[it.pair], it); len(list) > 0 {
		ti.byPair[it.pair] = list
	} else {
		delete(ti.byPair, it.pair)
	}
}

// forEach calls fn for each term that may select a pod labelled ls:
// those filed under one of its labels, and the unpaired ones.
func (ti *termIndex) forEach(ls map[string]string, fn func(*indexedTerm)) {
	if len(ti.terms) == 0 {
		return
	}
	for k, v := range ls {
		for _, it := range ti.byPair[LabelPair{k, v}] {
			fn(it)
		}
	}
	for _, it := range ti.unpaired {
		fn(it)
	}
}

// NewAffinityIndex returns an empty index.
func NewAffinityIndex() *AffinityIndex {
	return &AffinityIndex{
		anti:         newTermIndex(),
		scoringTerms: newTermIndex(),
		pods:         map[string]map[LabelPair]map[*PodInfo]*NodeInfo{},
		scratch:      map[*PodInfo]int{},
	}
}

// hasScoringTerms reports whether pi has a term InterPodAffinity's Score
// matches other pods against.
func hasScoringTerms(pi *PodInfo) bool {
	return len(pi.RequiredAffinityTerms)+len(pi.PreferredAffinityTerms)+len(pi.PreferredAntiAffinityTerms) > 0
}

// addPod indexes pi, on node ni.
func (x *AffinityIndex) addPod(pi *PodInfo, ni *NodeInfo) {
	m := pi.Pod.GetMetadata()
	if ls := m.GetLabels(); len(ls) > 0 {
		byPair := x.pods[m.GetNamespace()]
		if byPair == nil {
			byPair = map[LabelPair]map[*PodInfo]*NodeInfo{}
			x.pods[m.GetNamespace()] = byPair
		}
		for k, v := range ls {
			lp := LabelPair{k, v}
			set := byPair[lp]
			if set == nil {
				set = map[*PodInfo]*NodeInfo{}
				byPair[lp] = set
			}
			set[pi] = ni
		}
	}
	x.forEachTerm(pi, ni, (*termIndex).add)
	if hasScoringTerms(pi) {
		x.scoring++
	}
}

// forEachTerm calls op with each of pi's required anti-affinity and
// scoring terms, its index and weight, and the labels of pi's node ni.
func (x *AffinityIndex) forEachTerm(pi *PodInfo, ni *NodeInfo, op func(*termIndex, *AffinityTerm, map[string]string, int64)) {
	if !pi.HasAffinity() {
		return
	}
	nl := ni.Node().GetMetadata().GetLabels()
	for i := range pi.RequiredAntiAffinityTerms {
		op(&x.anti, &pi.RequiredAntiAffinityTerms[i], nl, 0)
	}
	for i := range pi.RequiredAffinityTerms {
		op(&x.scoringTerms, &pi.RequiredAffinityTerms[i], nl, HardPodAffinityWeight)
	}
	for i := range pi.PreferredAffinityTerms {
		t := &pi.PreferredAffinityTerms[i]
		op(&x.scoringTerms, &t.AffinityTerm, nl, int64(t.Weight))
	}
	for i := range pi.PreferredAntiAffinityTerms {
		t := &pi.PreferredAntiAffinityTerms[i]
		op(&x.scoringTerms, &t.AffinityTerm, nl, -int64(t.Weight))
	}
}

// removePod undoes addPod(pi, ni); ni's node must have the labels it had
// then.
func (x *AffinityIndex) removePod(pi *PodInfo, ni *NodeInfo) {
	m := pi.Pod.GetMetadata()
	if ls := m.GetLabels(); len(ls) > 0 {
		byPair := x.pods[m.GetNamespace()]
		for k, v := range ls {
			lp := LabelPair{k, v}
			if set := byPair[lp]; set != nil {
				delete(set, pi)
				if len(set) == 0 {
					delete(byPair, lp)
				}
			}
		}
		if len(byPair) == 0 {
			delete(x.pods, m.GetNamespace())
		}
	}
	x.forEachTerm(pi, ni, (*termIndex).remove)
	if hasScoringTerms(pi) {
		x.scoring--
	}
}

func removeTerm(list []*indexedTerm, it *indexedTerm) []*indexedTerm {
	if i := slices.Index(list, it); i >= 0 {
		last := len(list) - 1
		list[i] = list[last]
		list[last] = nil
		return list[:last]
	}
	return list
}

func (x *AffinityIndex) addNode(ni *NodeInfo) {
	for _, p := range ni.Pods {
		x.addPod(p, ni)
	}
}

func (x *AffinityIndex) removeNode(ni *NodeInfo) {
	for _, p := range ni.Pods {
		x.removePod(p, ni)
	}
}

// copyNode is src.CopyTo(dst) for dst indexed: when the node's labels
// stay the same, only the pods that differ are re-indexed.
func (x *AffinityIndex) copyNode(src, dst *NodeInfo) {
	if !maps.Equal(src.Node().GetMetadata().GetLabels(), dst.Node().GetMetadata().GetLabels()) {
		x.removeNode(dst)
		src.CopyTo(dst)
		x.addNode(dst)
		return
	}
	for _, p := range dst.Pods {
		x.scratch[p]++
	}
	src.CopyTo(dst)
	for _, p := range dst.Pods {
		if x.scratch[p] > 0 {
			x.scratch[p]--
		} else {
			x.addPod(p, dst)
		}
	}
	for p, n := range x.scratch {
		for range n {
			x.removePod(p, dst)
		}
	}
	clear(x.scratch)
}

// HasScoringPods reports whether some pod has a required affinity term
// or a preferred term (those Score matches the pod being placed against).
func (x *AffinityIndex) HasScoringPods() bool { return x.scoring > 0 }

// ForEachAntiAffinityTerm calls fn for each distinct required
// anti-affinity term of the indexed pods that may select pod (the caller
// checks with Matches), with the term's instances per value of its
// topology key. counts must not be changed.
func (x *AffinityIndex) ForEachAntiAffinityTerm(pod *corev1.Pod, fn func(t *AffinityTerm, counts map[string]int64)) {
	x.anti.forEach(pod.GetMetadata().GetLabels(), func(it *indexedTerm) { fn(&it.term, it.counts) })
}

// ForEachScoringTerm calls fn for each distinct scoring term of the
// indexed pods (required affinity, preferred affinity and anti-affinity)
// that may select pod (the caller checks with Matches), with, per value
// of its topology key, its instances and the sum of their weights (minus
// for preferred anti-affinity, HardPodAffinityWeight for required
// affinity). The maps must not be changed.
func (x *AffinityIndex) ForEachScoringTerm(pod *corev1.Pod, fn func(t *AffinityTerm, counts, weights map[string]int64)) {
	x.scoringTerms.forEach(pod.GetMetadata().GetLabels(), func(it *indexedTerm) { fn(&it.term, it.counts, it.weights) })
}

// ForEachCandidatePod calls fn for each indexed pod, with its node, that
// may match every one of terms (the caller checks with Matches): the pods
// of one term's namespaces having the pair, among those its selector
// requires, held by the fewest pods. It reports false, calling nothing,
// when no term requires a label pair (the caller looks at every pod).
func (x *AffinityIndex) ForEachCandidatePod(terms []AffinityTerm, fn func(*PodInfo, *NodeInfo)) bool {
	var best *AffinityTerm
	var bestPair LabelPair
	bestN := -1
	for i := range terms {
		t := &terms[i]
		if t.Selector.IsNothing() {
			return true // matches no pod
		}
		for _, lp := range t.pairs {
			n := 0
			x.forEachNamespace(t, func(byPair map[LabelPair]map[*PodInfo]*NodeInfo) {
				n += len(byPair[lp])
			})
			if bestN < 0 || n < bestN {
				best, bestPair, bestN = t, lp, n
			}
		}
	}
	if best == nil {
		return false
	}
	if bestN == 0 {
		return true
	}
	x.forEachNamespace(best, func(byPair map[LabelPair]map[*PodInfo]*NodeInfo) {
		for p, ni := range byPair[bestPair] {
			fn(p, ni)
		}
	})
	return true
}

// forEachNamespace calls fn with the index of each namespace t may select
// pods in, once each.
func (x *AffinityIndex) forEachNamespace(t *AffinityTerm, fn func(map[LabelPair]map[*PodInfo]*NodeInfo)) {
	if !t.NamespaceSelector.IsNothing() {
		// {} (every namespace), or a selector not resolved to names.
		for _, byPair := range x.pods {
			fn(byPair)
		}
		return
	}
	for i, ns := range t.Namespaces {
		if slices.Contains(t.Namespaces[:i], ns) {
			continue
		}
		if byPair := x.pods[ns]; byPair != nil {
			fn(byPair)
		}
	}
}

// CopyNodeInfo makes dst, a node of s, a copy of src (src.CopyTo(dst)),
// keeping s's affinity index in step.
func (s *Snapshot) CopyNodeInfo(src, dst *NodeInfo) {
	if s.AffinityIndex == nil {
		src.CopyTo(dst)
		return
	}
	s.AffinityIndex.copyNode(src, dst)
}

// IndexNodeInfo adds ni's pods to s's affinity index (ni being added to
// s's nodes).
func (s *Snapshot) IndexNodeInfo(ni *NodeInfo) {
	if s.AffinityIndex != nil {
		s.AffinityIndex.addNode(ni)
	}
}

// UnindexNodeInfo removes ni's pods from s's affinity index (ni being
// removed from s's nodes).
func (s *Snapshot) UnindexNodeInfo(ni *NodeInfo) {
	if s.AffinityIndex != nil {
		s.AffinityIndex.removeNode(ni)
	}
}

// EnsureAffinityIndex builds s's affinity index from its nodes if it has
// none.
func (s *Snapshot) EnsureAffinityIndex() {
	if s.AffinityIndex != nil {
		return
	}
	s.AffinityIndex = NewAffinityIndex()
	for _, ni := range s.NodeInfoMap {
		s.AffinityIndex.addNode(ni)
	}
}

// String describes the index in a canonical order (for tests and
// debugging): each distinct anti-affinity term with its instances and
// its counts per domain (not the pair it is filed under, which depends
// on the order terms came in); each namespace's label pairs with their
// pods and nodes; the number of pods with scoring terms.
func (x *AffinityIndex) String() string {
	var b strings.Builder
	for _, ti := range []struct {
		name string
		*termIndex
	}{{"anti", &x.anti}, {"scoring", &x.scoringTerms}} {
		for _, key := range slices.Sorted(maps.Keys(ti.terms)) {
			it := ti.terms[key]
			fmt.Fprintf(&b, "%s %q refs=%d", ti.name, strings.ReplaceAll(key, "\x00", " | "), it.refs)
			for _, v := range slices.Sorted(maps.Keys(it.counts)) {
				fmt.Fprintf(&b, " %s:%d", v, it.counts[v])
				if ti.name != "anti" {
					fmt.Fprintf(&b, "(w%d)", it.weights[v])
				}
			}
			b.WriteByte('\n')
		}
	}
	for _, ns := range slices.Sorted(maps.Keys(x.pods)) {
		byPair := x.pods[ns]
		pairs := slices.SortedFunc(maps.Keys(byPair), func(a, b LabelPair) int {
			return cmp.Or(strings.Compare(a.Key, b.Key), strings.Compare(a.Value, b.Value))
		})
		for _, lp := range pairs {
			var pods []string
			for p, ni := range byPair[lp] {
				pods = append(pods, p.Pod.GetMetadata().GetName()+"@"+ni.Name())
			}
			slices.Sort(pods)
			fmt.Fprintf(&b, "pods %s %s=%s %v\n", ns, lp.Key, lp.Value, pods)
		}
	}
	fmt.Fprintf(&b, "scoring %d\n", x.scoring)
	return b.String()
}
