package podgc

import (
	"cmp"
	"slices"

	"skiff.dev/internal/quota"
	corev1 "skiff.dev/proto/core/v1"
)

// Reasons a pod is deleted for: the metrics' reason label, with
// Kubernetes' values.
const (
	ReasonTerminated  = "terminated"
	ReasonOrphaned    = "orphaned"
	ReasonUnscheduled = "unscheduled"
)

// Plan is what one pass deletes; no pod is in two of its sets.
type Plan struct {
	// Terminated are the terminated pods beyond the threshold, in the order
	// they go.
	Terminated []*corev1.Pod
	// Orphaned are, by node name, the pods bound to a node the cache does
	// not have. They go once the node's quarantine is over and the API
	// confirms the node is gone.
	Orphaned map[string][]*corev1.Pod
	// Unscheduled are the terminating pods bound to no node.
	Unscheduled []*corev1.Pod
}

// Decide computes a pass's Plan from every pod and a lookup of the node
// cache. threshold is how many terminated pods (phase Succeeded or Failed)
// may stay; 0 or less: any number. Pods a force delete can do nothing more
// for (finished and deleted with grace period 0 already: a finalizer holds
// them) are left out, and not counted against the threshold.
func Decide(pods []*corev1.Pod, nodeCached func(name string) bool, threshold int) Plan {
	p := Plan{Orphaned: map[string][]*corev1.Pod{}}
	var terminated []*corev1.Pod
	if threshold > 0 {
		for _, pod := range pods {
			if quota.Terminal(pod) && !settled(pod) {
				terminated = append(terminated, pod)
			}
		}
	}
	var doomed map[*corev1.Pod]bool
	if n := len(terminated) - threshold; n > 0 {
		slices.SortFunc(terminated, collectFirst)
		p.Terminated = terminated[:n]
		doomed = make(map[*corev1.Pod]bool, n)
		for _, pod := range p.Terminated {
			doomed[pod] = true
		}
	}
	for _, pod := range pods {
		if doomed[pod] || settled(pod) {
			continue
		}
		switch node := pod.GetSpec().GetNodeName(); {
		case node == "":
			if pod.GetMetadata().GetDeletionTimestamp() != nil {
				p.Unscheduled = append(p.Unscheduled, pod)
			}
		case !nodeCached(node):
			p.Orphaned[node] = append(p.Orphaned[node], pod)
		}
	}
	return p
}

// collectFirst orders terminated pods as Kubernetes collects them: evicted
// by their agent first, then by creationTimestamp, then by namespace and
// name.
func collectFirst(a, b *corev1.Pod) int {
	if ea, eb := evicted(a), evicted(b); ea != eb {
		if ea {
			return -1
		}
		return 1
	}
	am, bm := a.GetMetadata(), b.GetMetadata()
	if c := am.GetCreationTimestamp().AsTime().Compare(bm.GetCreationTimestamp().AsTime()); c != 0 {
		return c
	}
	return cmp.Or(cmp.Compare(am.GetNamespace(), bm.GetNamespace()), cmp.Compare(am.GetName(), bm.GetName()))
}

// evicted reports whether the pod's agent evicted it (node pressure).
func evicted(p *corev1.Pod) bool {
	return p.GetStatus().GetPhase() == "Failed" && p.GetStatus().GetReason() == "Evicted"
}

// settled reports whether the pod is finished and was deleted with grace
// period 0: only the finalizers still on it keep it.
func settled(p *corev1.Pod) bool {
	m := p.GetMetadata()
	return quota.Terminal(p) && m.GetDeletionTimestamp() != nil && m.DeletionGracePeriodSeconds != nil && m.GetDeletionGracePeriodSeconds() == 0
}
