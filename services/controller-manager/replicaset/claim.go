package replicaset

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"go.uber.org/zap"
	"google.golang.org/protobuf/proto"

	"skiff.dev/internal/apierrors"
	"skiff.dev/internal/labels"
	appsv1 "skiff.dev/proto/apps/v1"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/controller-manager/controllerutil"
)

// claims is the decision of which pods a ReplicaSet counts, adopts and
// releases, as Kubernetes' PodControllerRefManager.ClaimPods makes it.
type claims struct {
	owned   []*corev1.Pod // controlled by the ReplicaSet and matching its selector
	adopt   []*corev1.Pod // orphans that match: to get our controller reference
	release []*corev1.Pod // controlled by us but no longer matching: to lose it
}

// claimPods decides, for the active pods of the ReplicaSet's namespace that
// are either controlled by it or orphans, which it owns, adopts and
// releases. A ReplicaSet being deleted neither adopts nor releases. Pods
// controlled by someone else and pods being deleted are never adopted.
func claimPods(rs *appsv1.ReplicaSet, sel labels.Selector, pods []*corev1.Pod) claims {
	c := claims{owned: make([]*corev1.Pod, 0, len(pods))}
	uid := rs.GetMetadata().GetUid()
	deleting := rs.GetMetadata().GetDeletionTimestamp() != nil
	for _, p := range pods {
		m := p.GetMetadata()
		matches := sel.Matches(m.GetLabels())
		ref := controllerutil.ControllerOf(m)
		switch {
		case ref != nil && ref.GetUid() != uid:
			// Someone else's.
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

// withControllerRef returns a copy of p with ref added to its owner
// references.
func withControllerRef(p *corev1.Pod, ref *metav1.OwnerReference) *corev1.Pod {
	next := proto.Clone(p).(*corev1.Pod)
	next.Metadata.OwnerReferences = append(next.Metadata.OwnerReferences, ref)
	return next
}

// withoutOwner returns a copy of p without its owner references to uid.
func withoutOwner(p *corev1.Pod, uid string) *corev1.Pod {
	next := proto.Clone(p).(*corev1.Pod)
	next.Metadata.OwnerReferences = slices.DeleteFunc(next.Metadata.OwnerReferences,
		func(r *metav1.OwnerReference) bool { return r.GetUid() == uid })
	return next
}

// adopt adds rs's controller reference to each orphan, with an Update at the
// pod's resourceVersion, and returns the pods adopted. Before the first
// adoption it reads the ReplicaSet from the API (not the cache) to make
// sure it is not being deleted and is still the one the cache holds: a
// ReplicaSet being deleted must not take pods the garbage collector would
// then delete with it.
func (c *Controller) adopt(ctx context.Context, rs *appsv1.ReplicaSet, orphans []*corev1.Pod) ([]*corev1.Pod, error) {
	if len(orphans) == 0 {
		return nil, nil
	}
	m := rs.GetMetadata()
	fresh, err := c.rsClient.Get(ctx, m.GetNamespace(), m.GetName())
	if err != nil {
		return nil, fmt.Errorf("recheck before adopting: %w", err)
	}
	if fresh.GetMetadata().GetUid() != m.GetUid() {
		return nil, fmt.Errorf("recheck before adopting: uid is %s, the cache has %s", fresh.GetMetadata().GetUid(), m.GetUid())
	}
	if fresh.GetMetadata().GetDeletionTimestamp() != nil {
		return nil, nil
	}
	ref := controllerRef(rs)
	var adopted []*corev1.Pod
	var errs []error
	for _, p := range orphans {
		got, err := c.podClient.Update(ctx, withControllerRef(p, ref))
		switch {
		case err == nil:
			c.log.Info("adopted pod", zap.String("replicaset", keyOf(rs)), zap.String("pod", p.GetMetadata().GetName()))
			adopted = append(adopted, got)
		case apierrors.IsNotFound(err):
			// Gone: nothing to adopt.
		default:
			// A conflict: the pod changed; the informer brings the change
			// and the pod is considered again.
			errs = append(errs, fmt.Errorf("adopt pod %s: %w", p.GetMetadata().GetName(), err))
		}
	}
	return adopted, errors.Join(errs...)
}

// release removes rs's owner references from pods that stopped matching its
// selector.
func (c *Controller) release(ctx context.Context, rs *appsv1.ReplicaSet, pods []*corev1.Pod) error {
	var errs []error
	uid := rs.GetMetadata().GetUid()
	for _, p := range pods {
		_, err := c.podClient.Update(ctx, withoutOwner(p, uid))
		switch {
		case err == nil:
			c.log.Info("released pod", zap.String("replicaset", keyOf(rs)), zap.String("pod", p.GetMetadata().GetName()))
		case apierrors.IsNotFound(err):
		default:
			errs = append(errs, fmt.Errorf("release pod %s: %w", p.GetMetadata().GetName(), err))
		}
	}
	return errors.Join(errs...)
}
