package replicaset

import (
	"maps"

	"skiff.dev/internal/informer"
	appsv1 "skiff.dev/proto/apps/v1"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/controller-manager/controllerutil"
)

// orphanIndex indexes pods without a controller reference by namespace, so
// that a sync finds the orphans it could adopt without scanning every pod
// of the namespace (its own pods come from the owner index).
const orphanIndex = "replicaset.orphansByNamespace"

func orphanNamespace(p *corev1.Pod) []string {
	if controllerutil.ControllerOf(p.GetMetadata()) != nil {
		return nil
	}
	return []string{p.GetMetadata().GetNamespace()}
}

// The handlers below run on the informers' goroutines: they only map an
// event to the ReplicaSets it concerns, lower expectations, and enqueue.

func (c *Controller) addReplicaSet(rs *appsv1.ReplicaSet) { c.queue.Enqueue(keyOf(rs)) }

func (c *Controller) updateReplicaSet(old, cur *appsv1.ReplicaSet) {
	if old.GetMetadata().GetUid() != cur.GetMetadata().GetUid() {
		// Deleted and created again under the same name between two
		// events: what was known of the old one is void.
		c.forget(old)
	}
	c.queue.Enqueue(keyOf(cur))
}

func (c *Controller) deleteReplicaSet(rs *appsv1.ReplicaSet) {
	c.forget(rs)
	c.queue.Enqueue(keyOf(rs))
}

// forget drops everything the controller keeps of rs (gone, or replaced by
// another ReplicaSet of its name).
func (c *Controller) forget(rs *appsv1.ReplicaSet) {
	key, uid := keyOf(rs), rs.GetMetadata().GetUid()
	c.expectations.Delete(key)
	c.bursts.forget(key)
	c.selectors.Delete(uid)
	c.warm.Delete(uid)
	c.verified.Delete(uid)
}

// addPod observes a creation for the pod's controller, or wakes the
// ReplicaSets that could adopt an orphan.
func (c *Controller) addPod(p *corev1.Pod) {
	if p.GetMetadata().GetDeletionTimestamp() != nil {
		// Seen for the first time already being deleted (after a relist):
		// it must not count as a creation.
		c.deletePod(p)
		return
	}
	if ref := controllerutil.ControllerOf(p.GetMetadata()); ref != nil {
		if rs := c.resolve(p.GetMetadata().GetNamespace(), ref); rs != nil {
			key := keyOf(rs)
			c.expectations.CreationObserved(key)
			c.queue.Enqueue(key)
		}
		return
	}
	c.enqueueMatching(p)
}

// updatePod wakes the pod's controller, and its former one if the
// controller reference changed; an orphan whose labels changed wakes the
// ReplicaSets that could adopt it. A pod that got a deletionTimestamp is a
// deletion observed: it no longer counts.
func (c *Controller) updatePod(old, cur *corev1.Pod) {
	om, cm := old.GetMetadata(), cur.GetMetadata()
	if om.GetResourceVersion() == cm.GetResourceVersion() {
		return // a resync: nothing changed
	}
	oldRef, curRef := controllerutil.ControllerOf(om), controllerutil.ControllerOf(cm)
	refChanged := !sameRef(oldRef, curRef)
	if cm.GetDeletionTimestamp() != nil {
		c.deletePod(cur)
		if refChanged {
			c.deletePod(old)
		}
		return
	}
	if refChanged && oldRef != nil {
		if rs := c.resolve(om.GetNamespace(), oldRef); rs != nil {
			c.queue.Enqueue(keyOf(rs))
		}
	}
	if curRef != nil {
		if rs := c.resolve(cm.GetNamespace(), curRef); rs != nil {
			c.queue.Enqueue(keyOf(rs))
		}
		return
	}
	if refChanged || !maps.Equal(om.GetLabels(), cm.GetLabels()) {
		c.enqueueMatching(cur)
	}
}

// deletePod observes a deletion for the pod's controller.
func (c *Controller) deletePod(p *corev1.Pod) {
	ref := controllerutil.ControllerOf(p.GetMetadata())
	if ref == nil {
		return
	}
	if rs := c.resolve(p.GetMetadata().GetNamespace(), ref); rs != nil {
		key := keyOf(rs)
		c.expectations.DeletionObserved(key, informer.Key(p))
		c.queue.Enqueue(key)
	}
}

// resolve returns the ReplicaSet a controller reference points to, if the
// cache holds it (same name and uid).
func (c *Controller) resolve(namespace string, ref *metav1.OwnerReference) *appsv1.ReplicaSet {
	if ref.GetKind() != "ReplicaSet" {
		return nil
	}
	rs, ok := c.rss.Store().GetByName(namespace, ref.GetName())
	if !ok || rs.GetMetadata().GetUid() != ref.GetUid() {
		return nil
	}
	return rs
}

// enqueueMatching enqueues every ReplicaSet of the orphan's namespace whose
// selector matches its labels.
func (c *Controller) enqueueMatching(p *corev1.Pod) {
	for _, rs := range c.rss.Store().ByNamespace(p.GetMetadata().GetNamespace()) {
		sel, err := c.selectorOf(rs)
		if err != nil || sel.Empty() || !sel.Matches(p.GetMetadata().GetLabels()) {
			continue
		}
		c.queue.Enqueue(keyOf(rs))
	}
}

func sameRef(a, b *metav1.OwnerReference) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.GetUid() == b.GetUid()
}
