package plugins

import (
	"context"
	"maps"

	corev1 "skiff.dev/proto/core/v1"
	"skiff.dev/services/scheduler/framework"
)

// InterPodAffinity's PreFilterExtensions: AddPod and RemovePod change the
// PreFilter counts by the one pod, as Kubernetes' updateWithPod: the
// pod's required anti-affinity terms that the pod being placed matches
// (existing anti-affinity), and the pod itself where it matches all the
// placed pod's required affinity terms or one of its anti-affinity terms,
// each in the domains of the node's labels. Preemption's dry run clones
// the state for every node it tries and most leave the counts alone, so
// a clone shares them until it changes them.

var _ framework.StateData = (*affinityFilterState)(nil)

// PreFilterExtensions implements framework.PreFilterPlugin.
func (p *InterPodAffinityPlugin) PreFilterExtensions() framework.PreFilterExtensions { return p }

// AddPod implements framework.PreFilterExtensions.
func (p *InterPodAffinityPlugin) AddPod(_ context.Context, state *framework.CycleState, podToSchedule, podToAdd *framework.PodInfo, node *framework.NodeInfo) *framework.Status {
	return updateAffinityState(state, podToSchedule, podToAdd, node, 1)
}

// RemovePod implements framework.PreFilterExtensions.
func (p *InterPodAffinityPlugin) RemovePod(_ context.Context, state *framework.CycleState, podToSchedule, podToRemove *framework.PodInfo, node *framework.NodeInfo) *framework.Status {
	return updateAffinityState(state, podToSchedule, podToRemove, node, -1)
}

func updateAffinityState(state *framework.CycleState, podToSchedule, changed *framework.PodInfo, node *framework.NodeInfo, delta int64) *framework.Status {
	s, ok := framework.ReadAs[*affinityFilterState](state, podAffinityFilterKey)
	if !ok {
		return framework.NewStatus(framework.Error, "InterPodAffinity: no PreFilter state to update")
	}
	if n := node.Node(); n != nil {
		s.updateWithPod(podToSchedule.Pod, changed, n, delta)
	}
	return nil
}

// Clone implements framework.StateData: the clone shares the counts until
// it (or s) changes them.
func (s *affinityFilterState) Clone() framework.StateData {
	s.shared.Store(true)
	c := *s
	return &c
}

// updateWithPod adds delta (1 or -1) to the counts for changed, a pod on
// node, where pod is the one being placed.
func (s *affinityFilterState) updateWithPod(pod *corev1.Pod, changed *framework.PodInfo, node *corev1.Node, delta int64) {
	nl := node.GetMetadata().GetLabels()
	for i := range changed.RequiredAntiAffinityTerms {
		t := &changed.RequiredAntiAffinityTerms[i]
		if t.Matches(pod, s.namespaceLabels) {
			s.update(existingAntiAffinity, t.TopologyKey, nl, delta)
		}
	}
	// The placed pod's terms had their namespace selectors resolved:
	// changed's namespace labels are not needed.
	if framework.MatchesAll(s.affinityTerms, changed.Pod, nil) {
		for i := range s.affinityTerms {
			s.update(incomingAffinity, s.affinityTerms[i].TopologyKey, nl, delta)
		}
	}
	for i := range s.antiAffinityTerms {
		t := &s.antiAffinityTerms[i]
		if t.Matches(changed.Pod, nil) {
			s.update(incomingAntiAffinity, t.TopologyKey, nl, delta)
		}
	}
}

// Which counts an update changes.
type affinityCount int

const (
	incomingAffinity affinityCount = iota
	incomingAntiAffinity
	existingAntiAffinity
)

// update adds delta to count's domain (key, nl[key]) when the node has
// the key, dropping a domain whose count falls to zero (Filter's first
// pod of a group looks for no domain at all).
func (s *affinityFilterState) update(count affinityCount, key string, nl map[string]string, delta int64) {
	value, ok := nl[key]
	if !ok {
		return
	}
	t := s.mutable()
	counts, byKey := t.affinityCounts, &t.affinityByKey
	switch count {
	case incomingAntiAffinity:
		counts, byKey = t.antiAffinityCounts, &t.antiAffinityByKey
	case existingAntiAffinity:
		counts, byKey = t.existingAntiAffinityCounts, &t.existingAntiAffinityByKey
	}
	pair := topologyPair{key, value}
	n := counts[pair] + delta
	if n == 0 {
		delete(counts, pair)
	} else {
		counts[pair] = n
	}
	byKey.set(key, value, n)
}

// mutable returns s's tally, first copied when a clone shares it.
func (s *affinityFilterState) mutable() *affinityTally {
	if s.shared.Load() {
		s.affinityTally = s.affinityTally.clone()
	}
	return s.affinityTally
}

// clone deep-copies t (not shared).
func (t *affinityTally) clone() *affinityTally {
	return &affinityTally{
		affinityCounts:             maps.Clone(t.affinityCounts),
		antiAffinityCounts:         maps.Clone(t.antiAffinityCounts),
		existingAntiAffinityCounts: maps.Clone(t.existingAntiAffinityCounts),
		affinityByKey:              t.affinityByKey.clone(),
		antiAffinityByKey:          t.antiAffinityByKey.clone(),
		existingAntiAffinityByKey:  t.existingAntiAffinityByKey.clone(),
	}
}

func (kc keyedCounts) clone() keyedCounts {
	if kc == nil {
		return nil
	}
	out := make(keyedCounts, len(kc))
	for i := range kc {
		out[i] = keyCounts{key: kc[i].key, values: maps.Clone(kc[i].values)}
	}
	return out
}

// set makes (key, value)'s count n, keeping only positive counts as
// byKey does.
func (kc *keyedCounts) set(key, value string, n int64) {
	for i := range *kc {
		if (*kc)[i].key != key {
			continue
		}
		if n > 0 {
			(*kc)[i].values[value] = n
		} else {
			delete((*kc)[i].values, value)
		}
		return
	}
	if n > 0 {
		*kc = append(*kc, keyCounts{key: key, values: map[string]int64{value: n}})
	}
}
