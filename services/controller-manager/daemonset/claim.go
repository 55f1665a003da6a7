package daemonset

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"google.golang.org/protobuf/proto"

	"skiff.dev/internal/apierrors"
	"skiff.dev/internal/informer"
	"skiff.dev/internal/labels"
	appsv1 "skiff.dev/proto/apps/v1"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/controller-manager/controllerutil"
)

// claims is which pods a DaemonSet counts, adopts and releases, as
// Kubernetes' PodControllerRefManager.ClaimPods decides.
type claims struct {
	owned   []*corev1.Pod // controlled by the DaemonSet and matching its selector
	adopt   []*corev1.Pod // orphans that match: to get its controller reference
	release []*corev1.Pod // controlled by it but no longer matching
}

// claimPods decides over the pods of the DaemonSet's namespace. One being
// deleted neither adopts nor releases; pods of another controller and pods
// being deleted are never adopted.
func claimPods(ds *appsv1.DaemonSet, sel labels.Selector, pods []*corev1.Pod) claims {
	var c claims
	uid := ds.GetMetadata().GetUid()
	deleting := ds.GetMetadata().GetDeletionTimestamp() != nil
	for _, p := range pods {
		m := p.GetMetadata()
		matches := sel.Matches(m.GetLabels())
		ref := controllerutil.ControllerOf(m)
		switch {
		case ref != nil && ref.GetUid() != uid:
		case ref != nil && matches:
			c.owned = append(c.owned, p)
		case ref != nil:
			if !deleting {
				c.release = append(c.release, p)
			}
		case matches && !deleting && m.GetDeletionTimestamp() == nil:
			c.adopt = append(c.adopt, p)
		}
	}
	return c
}

// candidates are ds's pods and the orphans of its namespace.
func (c *Controller) candidates(ds *appsv1.DaemonSet) []*corev1.Pod {
	uid := ds.GetMetadata().GetUid()
	var out []*corev1.Pod
	c.pods.Store().EachByIndex(informer.IndexNamespace, ds.GetMetadata().GetNamespace(), func(p *corev1.Pod) {
		ref := controllerutil.ControllerOf(p.GetMetadata())
		if ref == nil || ref.GetUid() == uid {
			out = append(out, p)
		}
	})
	return out
}

// claim adopts and releases as claimPods says and returns the pods ds
// controls. Before adopting it reads ds from the API: one being deleted
// must not take pods the garbage collector would delete with it.
func (c *Controller) claim(ctx context.Context, ds *appsv1.DaemonSet, sel labels.Selector) ([]*corev1.Pod, error) {
	cl := claimPods(ds, sel, c.candidates(ds))
	var errs []error
	uid := ds.GetMetadata().GetUid()
	for _, p := range cl.release {
		next := proto.Clone(p).(*corev1.Pod)
		next.Metadata.OwnerReferences = slices.DeleteFunc(next.Metadata.OwnerReferences, func(r *metav1.OwnerReference) bool { return r.GetUid() == uid })
		if _, err := c.podClient.Update(ctx, next); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("release pod %s: %w", p.GetMetadata().GetName(), err))
		}
	}
	if len(cl.adopt) > 0 {
		fresh, err := c.dsClient.Get(ctx, ds.GetMetadata().GetNamespace(), ds.GetMetadata().GetName())
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("recheck before adopting: %w", err))
		case fresh.GetMetadata().GetUid() != uid || fresh.GetMetadata().GetDeletionTimestamp() != nil:
		default:
			for _, p := range cl.adopt {
				next := proto.Clone(p).(*corev1.Pod)
				next.Metadata.OwnerReferences = append(next.Metadata.OwnerReferences, &metav1.OwnerReference{
					ApiVersion: "apps/v1", Kind: "DaemonSet", Name: ds.GetMetadata().GetName(), Uid: uid,
					Controller: proto.Bool(true), BlockOwnerDeletion: proto.Bool(true),
				})
				got, err := c.podClient.Update(ctx, next)
				switch {
				case err == nil:
					cl.owned = append(cl.owned, got)
				case apierrors.IsNotFound(err):
				default:
					errs = append(errs, fmt.Errorf("adopt pod %s: %w", p.GetMetadata().GetName(), err))
				}
			}
		}
	}
	return cl.owned, errors.Join(errs...)
}

// enqueueMatching wakes the DaemonSets of an orphan's namespace whose
// selector matches it.
func (c *Controller) enqueueMatching(p *corev1.Pod) {
	for _, ds := range c.dses.Store().ByNamespace(p.GetMetadata().GetNamespace()) {
		sel, err := controllerutil.Selector(ds.GetSpec().GetSelector())
		if err == nil && !sel.Empty() && sel.Matches(p.GetMetadata().GetLabels()) {
			c.enqueue(ds)
		}
	}
}
