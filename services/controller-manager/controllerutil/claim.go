package controllerutil

import (
	"slices"

	"google.golang.org/protobuf/proto"

	"skiff.dev/internal/labels"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
)

// Claims is which pods a controller counts, adopts and releases, as
// Kubernetes' PodControllerRefManager.ClaimPods decides.
type Claims struct {
	Owned   []*corev1.Pod // controlled by the owner and matching its selector
	Adopt   []*corev1.Pod // orphans that match: to get its controller reference
	Release []*corev1.Pod // controlled by it but no longer matching: to lose it
}

// ClaimPods decides, for pods of owner's namespace, which owner owns,
// adopts and releases. An owner being deleted neither adopts nor releases;
// pods controlled by someone else and pods being deleted are never adopted.
// The adoption and release writes (and the recheck of the owner before
// adopting) are the caller's.
func ClaimPods(owner *metav1.ObjectMeta, sel labels.Selector, pods []*corev1.Pod) Claims {
	c := Claims{Owned: make([]*corev1.Pod, 0, len(pods))}
	uid := owner.GetUid()
	deleting := owner.GetDeletionTimestamp() != nil
	for _, p := range pods {
		m := p.GetMetadata()
		matches := sel.Matches(m.GetLabels())
		ref := ControllerOf(m)
		switch {
		case ref != nil && ref.GetUid() != uid:
			// Someone else's.
		case ref != nil && matches:
			c.Owned = append(c.Owned, p)
		case ref != nil:
			if !deleting {
				c.Release = append(c.Release, p)
			}
		case matches && !deleting && m.GetDeletionTimestamp() == nil:
			c.Adopt = append(c.Adopt, p)
		}
	}
	return c
}

// WithControllerRef returns a copy of p with ref added to its owner
// references (an adoption's update).
func WithControllerRef(p *corev1.Pod, ref *metav1.OwnerReference) *corev1.Pod {
	next := proto.Clone(p).(*corev1.Pod)
	if next.Metadata == nil {
		next.Metadata = &metav1.ObjectMeta{}
	}
	next.Metadata.OwnerReferences = append(next.Metadata.OwnerReferences, ref)
	return next
}

// WithoutOwner returns a copy of p without its owner references to uid (a
// release's update).
func WithoutOwner(p *corev1.Pod, uid string) *corev1.Pod {
	next := proto.Clone(p).(*corev1.Pod)
	if next.Metadata == nil {
		next.Metadata = &metav1.ObjectMeta{}
	}
	next.Metadata.OwnerReferences = slices.DeleteFunc(next.Metadata.OwnerReferences,
		func(r *metav1.OwnerReference) bool { return r.GetUid() == uid })
	return next
}
