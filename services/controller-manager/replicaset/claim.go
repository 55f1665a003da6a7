package replicaset

import (
	"context"
	"errors"
	"fmt"

	"go.uber.org/zap"

	"skiff.dev/internal/apierrors"
	appsv1 "skiff.dev/proto/apps/v1"
	corev1 "skiff.dev/proto/core/v1"
	"skiff.dev/services/controller-manager/controllerutil"
)

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
		got, err := c.podClient.Update(ctx, controllerutil.WithControllerRef(p, ref))
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
		_, err := c.podClient.Update(ctx, controllerutil.WithoutOwner(p, uid))
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
