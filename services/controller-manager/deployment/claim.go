package deployment

import (
	"context"
	"fmt"
	"slices"

	"go.uber.org/zap"
	"google.golang.org/protobuf/proto"

	"skiff.dev/internal/apierrors"
	"skiff.dev/internal/labels"
	appsv1 "skiff.dev/proto/apps/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/controller-manager/controllerutil"
)

// claimAction is what a Deployment does with a ReplicaSet of its namespace.
type claimAction int

const (
	ignore  claimAction = iota // another controller's, or not selected
	keep                       // ours and selected
	adopt                      // an orphan the selector matches
	release                    // ours but no longer selected
)

func (a claimAction) String() string {
	return [...]string{"ignore", "keep", "adopt", "release"}[a]
}

// claim decides, as Kubernetes' ControllerRefManager.ClaimObject, what the
// Deployment with uid (being deleted or not) and selector sel does with rs.
func claim(uid string, deleting bool, sel labels.Selector, rs *appsv1.ReplicaSet) claimAction {
	m := rs.GetMetadata()
	matches := sel.Matches(m.GetLabels())
	if ref := controllerutil.ControllerOf(m); ref != nil {
		switch {
		case ref.GetUid() != uid:
			return ignore
		case matches:
			return keep
		case deleting:
			return ignore // a Deployment being deleted lets go of nothing
		}
		return release
	}
	if deleting || !matches || m.GetDeletionTimestamp() != nil {
		return ignore
	}
	return adopt
}

// claim returns the Deployment's ReplicaSets, adopting the orphans its
// selector matches and releasing its own that it no longer matches.
func (s *syncer) claim(ctx context.Context, sel labels.Selector) ([]*appsv1.ReplicaSet, error) {
	d := s.d
	dm := d.GetMetadata()
	var out []*appsv1.ReplicaSet
	var canAdopt *bool
	for _, rs := range s.c.rses.Store().ByNamespace(dm.GetNamespace()) {
		switch claim(dm.GetUid(), dm.GetDeletionTimestamp() != nil, sel, rs) {
		case keep:
			out = append(out, rs)
		case adopt:
			if canAdopt == nil {
				ok, err := s.canAdopt(ctx)
				if err != nil {
					return nil, err
				}
				canAdopt = &ok
			}
			if !*canAdopt {
				continue
			}
			adopted, err := s.updateOwners(ctx, rs, func(refs []*metav1.OwnerReference) []*metav1.OwnerReference {
				return append(refs, controllerutil.NewControllerRef(d))
			})
			if apierrors.IsNotFound(err) {
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("adopting replicaset %q: %w", rs.GetMetadata().GetName(), err)
			}
			s.log.Info("adopted replicaset", zap.String("replicaset", rs.GetMetadata().GetName()))
			out = append(out, adopted)
		case release:
			_, err := s.updateOwners(ctx, rs, func(refs []*metav1.OwnerReference) []*metav1.OwnerReference {
				return slices.DeleteFunc(refs, func(r *metav1.OwnerReference) bool { return r.GetUid() == dm.GetUid() })
			})
			if err != nil && !apierrors.IsNotFound(err) {
				return nil, fmt.Errorf("releasing replicaset %q: %w", rs.GetMetadata().GetName(), err)
			}
			s.log.Info("released replicaset", zap.String("replicaset", rs.GetMetadata().GetName()))
		}
	}
	return out, nil
}

// canAdopt checks with the API, not the cache, that the Deployment is not
// being deleted, before it adopts anything.
func (s *syncer) canAdopt(ctx context.Context) (bool, error) {
	m := s.d.GetMetadata()
	fresh, err := s.c.dClient.Get(ctx, m.GetNamespace(), m.GetName())
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return fresh.GetMetadata().GetUid() == m.GetUid() && fresh.GetMetadata().GetDeletionTimestamp() == nil, nil
}

// updateOwners writes rs with its ownerReferences changed by edit.
func (s *syncer) updateOwners(ctx context.Context, rs *appsv1.ReplicaSet, edit func([]*metav1.OwnerReference) []*metav1.OwnerReference) (*appsv1.ReplicaSet, error) {
	next := proto.Clone(rs).(*appsv1.ReplicaSet)
	next.Metadata.OwnerReferences = edit(next.Metadata.OwnerReferences)
	return s.c.rsClient.Update(ctx, next)
}
