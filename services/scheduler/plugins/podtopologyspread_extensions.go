package plugins

import (
	"context"
	"maps"
	"slices"

	corev1 "skiff.dev/proto/core/v1"
	"skiff.dev/services/scheduler/framework"
)

// PodTopologySpread's PreFilterExtensions: AddPod and RemovePod change
// the PreFilter counts by the one pod, as Kubernetes' updateWithPod: a pod
// of the placed pod's namespace, on a node that has every constraint's
// key and that the placed pod's required node affinity allows, counts in
// its node's domain of each constraint whose selector it matches; the
// smallest domain's count follows. (Kubernetes keeps the two smallest
// domains, which can miss the new minimum after a few changes; Skiff
// rescans the domains when the smallest one grows, so the minimum stays
// exact.) A terminating pod counts neither way, as in PreFilter.

var _ framework.StateData = (*spreadFilterState)(nil)

// PreFilterExtensions implements framework.PreFilterPlugin.
func (p *PodTopologySpreadPlugin) PreFilterExtensions() framework.PreFilterExtensions { return p }

// AddPod implements framework.PreFilterExtensions.
func (p *PodTopologySpreadPlugin) AddPod(_ context.Context, state *framework.CycleState, _, podToAdd *framework.PodInfo, node *framework.NodeInfo) *framework.Status {
	return updateSpreadState(state, podToAdd, node, 1)
}

// RemovePod implements framework.PreFilterExtensions.
func (p *PodTopologySpreadPlugin) RemovePod(_ context.Context, state *framework.CycleState, _, podToRemove *framework.PodInfo, node *framework.NodeInfo) *framework.Status {
	return updateSpreadState(state, podToRemove, node, -1)
}

func updateSpreadState(state *framework.CycleState, changed *framework.PodInfo, node *framework.NodeInfo, delta int) *framework.Status {
	s, ok := framework.ReadAs[*spreadFilterState](state, spreadFilterKey)
	if !ok {
		return framework.NewStatus(framework.Error, "PodTopologySpread: no PreFilter state to update")
	}
	if n := node.Node(); n != nil {
		s.updateWithPod(changed.Pod, n, delta)
	}
	return nil
}

// Clone implements framework.StateData: the clone shares the counts until
// it (or s) changes them.
func (s *spreadFilterState) Clone() framework.StateData {
	s.shared.Store(true)
	c := *s
	return &c
}

// updateWithPod adds delta (1 or -1) to the counts for pod, on node.
func (s *spreadFilterState) updateWithPod(pod *corev1.Pod, node *corev1.Node, delta int) {
	m := pod.GetMetadata()
	if m.GetNamespace() != s.namespace || m.GetDeletionTimestamp() != nil {
		return
	}
	nl := node.GetMetadata().GetLabels()
	if !hasAllKeys(nl, s.constraints) || !s.affinity.Match(node) {
		return
	}
	for i, c := range s.constraints {
		if c.Selector.Matches(m.GetLabels()) {
			s.mutable().add(i, c, nl[c.TopologyKey], delta)
		}
	}
}

// mutable returns s's tally, first copied when a clone shares it.
func (s *spreadFilterState) mutable() *spreadTally {
	if s.shared.Load() {
		t := &spreadTally{counts: make(SpreadCounts, len(s.counts)), minMatch: slices.Clone(s.minMatch)}
		for i := range s.counts {
			t.counts[i] = maps.Clone(s.counts[i])
		}
		s.spreadTally = t
	}
	return s.spreadTally
}

// add adds delta to constraint i's count of domain value, and keeps its
// minimum: a count that falls can only lower it, one above it that rises
// leaves it; else (the smallest domain grew, a new domain) the domains
// are looked at again.
func (t *spreadTally) add(i int, c Constraint, value string, delta int) {
	old, had := t.counts[i][value]
	n := old + delta
	t.counts[i][value] = n
	switch {
	case had && delta < 0:
		t.minMatch[i] = min(t.minMatch[i], n)
	case had && old > t.minMatch[i]:
	default:
		t.minMatch[i] = minMatchOf(c, t.counts[i])
	}
}
