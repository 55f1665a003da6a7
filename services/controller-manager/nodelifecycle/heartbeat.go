package nodelifecycle

import (
	"sync"
	"time"

	coordinationv1 "skiff.dev/proto/coordination/v1"
	corev1 "skiff.dev/proto/core/v1"
)

// heartbeats remembers, per node, the last Lease renewTime seen and when
// (by the controller's clock) it was first seen. As in Kubernetes, a node is
// judged by when the controller saw its Lease change, never by the
// renewTime the agent wrote: clocks of nodes and controller need not agree,
// and a controller that starts (or takes over leadership) gives every node
// with a Lease a full grace period before judging it.
type heartbeats struct {
	mu   sync.Mutex
	seen map[string]sighting // by node name
}

// sighting is one Lease renewal as the controller saw it.
type sighting struct {
	renew time.Time // the Lease's spec.renewTime (zero if unset)
	at    time.Time // when the controller first saw that renewTime
}

func newHeartbeats() *heartbeats { return &heartbeats{seen: map[string]sighting{}} }

// observe records lease (of node) as seen at now and returns the node's
// last heartbeat: now if the renewTime changed (or the Lease is the first
// seen), else when the renewTime was first seen. A nil lease changes
// nothing.
func (h *heartbeats) observe(node string, lease *coordinationv1.Lease, now time.Time) (time.Time, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	prev, ok := h.seen[node]
	if lease == nil {
		return prev.at, ok
	}
	next := nextSighting(prev, ok, lease, now)
	h.seen[node] = next
	return next.at, true
}

// heartbeat returns the node's last heartbeat at now: when its Lease was
// last seen renewed, or, for a node whose Lease the controller never saw,
// its creationTimestamp.
func (h *heartbeats) heartbeat(node *corev1.Node, lease *coordinationv1.Lease, now time.Time) time.Time {
	if at, ok := h.observe(node.GetMetadata().GetName(), lease, now); ok {
		return at
	}
	return node.GetMetadata().GetCreationTimestamp().AsTime()
}

// forget drops what is known of a node that is gone.
func (h *heartbeats) forget(node string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.seen, node)
}

// nextSighting is the sighting after seeing lease at now, given the
// previous one (if ok): any change of renewTime is a heartbeat, even one
// back in time (an agent whose clock stepped back is still alive).
func nextSighting(prev sighting, ok bool, lease *coordinationv1.Lease, now time.Time) sighting {
	var renew time.Time
	if rt := lease.GetSpec().GetRenewTime(); rt != nil {
		renew = rt.AsTime()
	}
	if ok && renew.Equal(prev.renew) {
		return prev
	}
	return sighting{renew: renew, at: now}
}
