package replicaset

import (
	"slices"
	"time"

	corev1 "skiff.dev/proto/core/v1"
	"skiff.dev/services/controller-manager/controllerutil"
)

// phaseOrdinal orders pod phases for scale-down: the lower, the sooner
// deleted. Phases not listed (none, or anything unexpected) count as Pending.
var phaseOrdinal = map[string]int{"Pending": 0, "Unknown": 1, "Running": 2}

// deletionCost is what ranks a pod for deletion, extracted once per pod so
// that sorting compares plain values.
type deletionCost struct {
	scheduled bool
	phase     int
	ready     bool
	readyAt   time.Time // zero: ready since an unknown time
	restarts  int32
	created   time.Time // zero: unknown
	name      string    // the last tie-break, for a stable order
}

func costOf(p *corev1.Pod) deletionCost {
	c := deletionCost{
		scheduled: p.GetSpec().GetNodeName() != "",
		phase:     phaseOrdinal[p.GetStatus().GetPhase()],
		name:      p.GetMetadata().GetName(),
	}
	if rc := controllerutil.PodReadyCondition(p); rc.GetStatus() == "True" {
		c.ready = true
		if t := rc.GetLastTransitionTime(); t != nil {
			c.readyAt = t.AsTime()
		}
	}
	for _, s := range p.GetStatus().GetContainerStatuses() {
		c.restarts = max(c.restarts, s.GetRestartCount())
	}
	if t := p.GetMetadata().GetCreationTimestamp(); t != nil {
		c.created = t.AsTime()
	}
	return c
}

// compareForDeletion orders two pods as Kubernetes' ActivePods does for
// scale-down: a negative result means a goes first. In order:
//
//  1. unscheduled (no spec.nodeName) before scheduled;
//  2. Pending before Unknown before Running;
//  3. not ready before ready;
//  4. among ready pods, ready for less time first (an unknown ready time
//     first of all);
//  5. more container restarts (the highest of its containers) first;
//  6. newer (creationTimestamp) first, an unknown creation time first;
//  7. by name, so that the order is total.
func compareForDeletion(a, b deletionCost) int {
	if a.scheduled != b.scheduled {
		return boolFirst(!a.scheduled)
	}
	if a.phase != b.phase {
		return a.phase - b.phase
	}
	if a.ready != b.ready {
		return boolFirst(!a.ready)
	}
	if a.ready && !a.readyAt.Equal(b.readyAt) {
		return laterFirst(a.readyAt, b.readyAt)
	}
	if a.restarts != b.restarts {
		if a.restarts > b.restarts {
			return -1
		}
		return 1
	}
	if !a.created.Equal(b.created) {
		return laterFirst(a.created, b.created)
	}
	switch {
	case a.name < b.name:
		return -1
	case a.name > b.name:
		return 1
	}
	return 0
}

// boolFirst returns -1 when the first of two pods that differ wins the
// comparison (first is true), else 1.
func boolFirst(first bool) int {
	if first {
		return -1
	}
	return 1
}

// laterFirst orders the zero time first, then later times before earlier ones.
func laterFirst(a, b time.Time) int {
	switch {
	case a.IsZero():
		return -1
	case b.IsZero():
		return 1
	case a.After(b):
		return -1
	default:
		return 1
	}
}

// rankForDeletion returns pods in the order a scale-down deletes them (see
// compareForDeletion). It does not change pods.
func rankForDeletion(pods []*corev1.Pod) []*corev1.Pod {
	type ranked struct {
		cost deletionCost
		pod  *corev1.Pod
	}
	rs := make([]ranked, len(pods))
	for i, p := range pods {
		rs[i] = ranked{costOf(p), p}
	}
	slices.SortFunc(rs, func(a, b ranked) int { return compareForDeletion(a.cost, b.cost) })
	out := make([]*corev1.Pod, len(rs))
	for i, r := range rs {
		out[i] = r.pod
	}
	return out
}

// podsToDelete returns the n pods a scale-down deletes first (all of them
// when n >= len(pods)).
func podsToDelete(pods []*corev1.Pod, n int) []*corev1.Pod {
	if n <= 0 {
		return nil
	}
	ranked := rankForDeletion(pods)
	return ranked[:min(n, len(ranked))]
}
