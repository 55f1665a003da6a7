package statefulset

import (
	"maps"
	"strings"

	"skiff.dev/internal/informer"
	appsv1 "skiff.dev/proto/apps/v1"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/controller-manager/controllerutil"
)

// The handlers run on the informers' goroutines: they map an event to the
// StatefulSets it concerns, mark expectations seen, and enqueue.

func (c *Controller) addSet(set *appsv1.StatefulSet) { c.queue.Enqueue(keyOf(set)) }

func (c *Controller) updateSet(old, cur *appsv1.StatefulSet) {
	if old.GetMetadata().GetUid() != cur.GetMetadata().GetUid() {
		c.expectations.forget(keyOf(old))
	}
	c.queue.Enqueue(keyOf(cur))
}

func (c *Controller) deleteSet(set *appsv1.StatefulSet) {
	c.expectations.forget(keyOf(set))
	c.queue.Enqueue(keyOf(set))
}

func (c *Controller) addPod(p *corev1.Pod) {
	if isTerminating(p) {
		c.deletePod(p)
		return
	}
	if ref := controllerutil.ControllerOf(p.GetMetadata()); ref != nil {
		if set := c.resolve(p.GetMetadata().GetNamespace(), ref); set != nil {
			c.expectations.created(keyOf(set), p.GetMetadata().GetName())
			c.queue.Enqueue(keyOf(set))
		}
		return
	}
	c.enqueueMatching(p)
}

func (c *Controller) updatePod(old, cur *corev1.Pod) {
	om, cm := old.GetMetadata(), cur.GetMetadata()
	if om.GetResourceVersion() == cm.GetResourceVersion() {
		return
	}
	if isTerminating(cur) {
		c.deletePod(cur)
	}
	oldRef, curRef := controllerutil.ControllerOf(om), controllerutil.ControllerOf(cm)
	if oldRef != nil && (curRef == nil || oldRef.GetUid() != curRef.GetUid()) {
		if set := c.resolve(om.GetNamespace(), oldRef); set != nil {
			c.queue.Enqueue(keyOf(set))
		}
	}
	if curRef != nil {
		if set := c.resolve(cm.GetNamespace(), curRef); set != nil {
			c.queue.Enqueue(keyOf(set))
		}
		return
	}
	if oldRef != nil || !maps.Equal(om.GetLabels(), cm.GetLabels()) {
		c.enqueueMatching(cur)
	}
}

func (c *Controller) deletePod(p *corev1.Pod) {
	ref := controllerutil.ControllerOf(p.GetMetadata())
	if ref == nil {
		return
	}
	if set := c.resolve(p.GetMetadata().GetNamespace(), ref); set != nil {
		c.expectations.deleted(keyOf(set), p.GetMetadata().GetName())
		c.queue.Enqueue(keyOf(set))
	}
}

// resolve returns the StatefulSet a controller reference points to, if the
// cache holds it (same name and uid).
func (c *Controller) resolve(namespace string, ref *metav1.OwnerReference) *appsv1.StatefulSet {
	if ref.GetKind() != "StatefulSet" {
		return nil
	}
	set, ok := c.sets.Store().GetByName(namespace, ref.GetName())
	if !ok || set.GetMetadata().GetUid() != ref.GetUid() {
		return nil
	}
	return set
}

// enqueueMatching enqueues the StatefulSets of the orphan's namespace that
// could adopt it: their selector matches and the pod's name is one of
// theirs.
func (c *Controller) enqueueMatching(p *corev1.Pod) {
	for _, set := range c.sets.Store().ByNamespace(p.GetMetadata().GetNamespace()) {
		sel, err := controllerutil.Selector(set.GetSpec().GetSelector())
		if err != nil || sel.Empty() || !sel.Matches(p.GetMetadata().GetLabels()) || !isMemberOf(set, p) {
			continue
		}
		c.queue.Enqueue(informer.Key(set))
	}
}

// claimChanged wakes the sets whose claims the claim could be
// (<template>-<set>-<ordinal>): a sync waiting for a stale claim to go
// (whenScaled Delete, scaled up again before the garbage collector
// deleted it) goes on once it is gone, and a claim whose owners someone
// changed gets them fixed.
func (c *Controller) claimChanged(claim *corev1.PersistentVolumeClaim) {
	name := claim.GetMetadata().GetName()
	for _, set := range c.sets.Store().ByNamespace(claim.GetMetadata().GetNamespace()) {
		for _, t := range set.GetSpec().GetVolumeClaimTemplates() {
			prefix := t.GetMetadata().GetName() + "-" + set.GetMetadata().GetName() + "-"
			if rest, ok := strings.CutPrefix(name, prefix); ok && rest != "" && strings.Trim(rest, "0123456789") == "" {
				c.queue.Enqueue(keyOf(set))
				break
			}
		}
	}
}
