package replicaset

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"skiff.dev/internal/apierrors"
	"skiff.dev/internal/client"
	"skiff.dev/internal/labels"
	appsv1 "skiff.dev/proto/apps/v1"
	corev1 "skiff.dev/proto/core/v1"
	"skiff.dev/services/controller-manager/controllerutil"
)

// ReplicaFailure is the condition set while creating or deleting pods fails.
const ReplicaFailure = "ReplicaFailure"

// manageError is a failure to create or delete pods, with the condition
// reason it shows as (FailedCreate, FailedDelete).
type manageError struct {
	reason string
	err    error
}

func (e *manageError) Error() string { return e.err.Error() }
func (e *manageError) Unwrap() error { return e.err }

// calculateStatus computes the status of rs from its owned active pods at
// now, with the failure of this sync's pod creations or deletions (nil if
// none). It also returns how long until the next ready pod becomes
// available (0: none is waiting), when the status will change without any
// event. Conditions other than ReplicaFailure are kept.
func calculateStatus(rs *appsv1.ReplicaSet, pods []*corev1.Pod, failure *manageError, now time.Time) (*appsv1.ReplicaSetStatus, time.Duration) {
	minReady := rs.GetSpec().GetMinReadySeconds()
	// Parsed once: ranging over the template's label map for every pod
	// cost more than the lookups themselves.
	templateLabels := labels.SelectorFromSet(rs.GetSpec().GetTemplate().GetMetadata().GetLabels())
	st := &appsv1.ReplicaSetStatus{
		Replicas:           int32(len(pods)),
		ObservedGeneration: rs.GetMetadata().GetGeneration(),
	}
	var next time.Duration
	for _, p := range pods {
		if templateLabels.Matches(p.GetMetadata().GetLabels()) {
			st.FullyLabeledReplicas++
		}
		if !controllerutil.IsPodReady(p) {
			continue
		}
		st.ReadyReplicas++
		if controllerutil.IsPodAvailable(p, minReady, now) {
			st.AvailableReplicas++
		} else if d := controllerutil.AvailableIn(p, minReady, now); d > 0 && (next == 0 || d < next) {
			next = d
		}
	}
	st.Conditions = failureCondition(rs.GetStatus().GetConditions(), failure, now)
	return st, next
}

// failureCondition returns conds with the ReplicaFailure condition set
// while failure is not nil, and removed once it is (Kubernetes' rule): an
// existing True condition is kept as it is, so its transition time stays
// that of the first failure.
func failureCondition(conds []*appsv1.ReplicaSetCondition, failure *manageError, now time.Time) []*appsv1.ReplicaSetCondition {
	var out []*appsv1.ReplicaSetCondition
	var had bool
	for _, c := range conds {
		if c.GetType() == ReplicaFailure {
			had = true
			if failure == nil {
				continue
			}
		}
		out = append(out, c)
	}
	if failure != nil && !had {
		out = append(out, &appsv1.ReplicaSetCondition{
			Type:               ReplicaFailure,
			Status:             "True",
			LastTransitionTime: timestamppb.New(now),
			Reason:             failure.reason,
			Message:            failure.err.Error(),
		})
	}
	return out
}

// updateStatus writes st as rs's status unless it is what rs has already.
// On a conflict it reads the ReplicaSet from the API (the cache may hold the
// stale copy) and tries again, with client.RetryOnConflict's backoff.
func (c *Controller) updateStatus(ctx context.Context, rs *appsv1.ReplicaSet, st *appsv1.ReplicaSetStatus) error {
	m := rs.GetMetadata()
	cur := rs
	err := client.RetryOnConflict(ctx, client.DefaultRetry, func() error {
		if cur == nil {
			fresh, err := c.rsClient.Get(ctx, m.GetNamespace(), m.GetName())
			if err != nil {
				return err
			}
			if fresh.GetMetadata().GetUid() != m.GetUid() {
				return nil // another ReplicaSet of the same name: its own sync writes its status
			}
			cur = fresh
		}
		if proto.Equal(cur.GetStatus(), st) {
			return nil
		}
		next := proto.Clone(cur).(*appsv1.ReplicaSet)
		next.Status = st
		_, err := c.rsClient.UpdateStatus(ctx, next)
		if apierrors.IsConflict(err) {
			cur = nil
		}
		return err
	})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("update status: %w", err)
	}
	return nil
}
