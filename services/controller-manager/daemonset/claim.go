package daemonset

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/protobuf/proto"

	"skiff.dev/internal/apierrors"
	"skiff.dev/internal/informer"
	"skiff.dev/internal/labels"
	appsv1 "skiff.dev/proto/apps/v1"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/controller-manager/controllerutil"
)

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
	cl := controllerutil.ClaimPods(ds.GetMetadata(), sel, c.candidates(ds))
	var errs []error
	uid := ds.GetMetadata().GetUid()
	for _, p := range cl.Release {
		if _, err := c.podClient.Update(ctx, controllerutil.WithoutOwner(p, uid)); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("release pod %s: %w", p.GetMetadata().GetName(), err))
		}
	}
	if len(cl.Adopt) > 0 {
		fresh, err := c.dsClient.Get(ctx, ds.GetMetadata().GetNamespace(), ds.GetMetadata().GetName())
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("recheck before adopting: %w", err))
		case fresh.GetMetadata().GetUid() != uid || fresh.GetMetadata().GetDeletionTimestamp() != nil:
		default:
			ref := &metav1.OwnerReference{
				ApiVersion: "apps/v1", Kind: "DaemonSet", Name: ds.GetMetadata().GetName(), Uid: uid,
				Controller: proto.Bool(true), BlockOwnerDeletion: proto.Bool(true),
			}
			for _, p := range cl.Adopt {
				got, err := c.podClient.Update(ctx, controllerutil.WithControllerRef(p, ref))
				switch {
				case err == nil:
					cl.Owned = append(cl.Owned, got)
				case apierrors.IsNotFound(err):
				default:
					errs = append(errs, fmt.Errorf("adopt pod %s: %w", p.GetMetadata().GetName(), err))
				}
			}
		}
	}
	return cl.Owned, errors.Join(errs...)
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
