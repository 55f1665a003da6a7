package nodelifecycle

import (
	"sync"
	"time"

	corev1 "skiff.dev/proto/core/v1"
)

// podsSeen remembers, per node, when the controller first saw each of the
// node's pods while the node carried NoExecute taints. A pod's tolerations
// count from then, or from the taint's timeAdded if that is later, as
// Kubernetes' taint manager starts a pod's eviction timer when it first
// processes the pod on the tainted node: a pod bound to a node tainted long
// ago gets its full tolerationSeconds instead of being evicted at once.
//
// The record is kept in memory only, as Kubernetes keeps it: a controller
// that starts (a restart, or another copy taking over leadership) sees every
// pod anew, and the pods of nodes tainted before get their full toleration
// again from then.
type podsSeen struct {
	mu     sync.Mutex
	byNode map[string]map[string]time.Time // node -> pod uid -> first seen
}

func newPodsSeen() *podsSeen { return &podsSeen{byNode: map[string]map[string]time.Time{}} }

// observe records pods, all the pods bound to node, as seen at now unless
// seen before, forgets the node's pods no longer among them, and returns
// when each was first seen, by uid. The map returned is never changed
// afterwards (the next observe of the node builds a new one).
func (s *podsSeen) observe(node string, pods []*corev1.Pod, now time.Time) map[string]time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	prev := s.byNode[node]
	next := make(map[string]time.Time, len(pods))
	for _, p := range pods {
		uid := p.GetMetadata().GetUid()
		if at, ok := prev[uid]; ok {
			next[uid] = at
		} else {
			next[uid] = now
		}
	}
	s.byNode[node] = next
	return next
}

// forget drops what is known of a node's pods: the node is gone, or
// carries no NoExecute taint any more (when it does again, its pods' timers
// start anew).
func (s *podsSeen) forget(node string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.byNode, node)
}
