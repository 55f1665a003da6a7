package deployment

import (
	"fmt"
	"math"
	"slices"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	appsv1 "skiff.dev/proto/apps/v1"
)

// Condition types and reasons, as Kubernetes' deployment/util names them.
const (
	ConditionAvailable      = "Available"
	ConditionProgressing    = "Progressing"
	ConditionReplicaFailure = "ReplicaFailure"

	ReasonMinimumReplicasAvailable   = "MinimumReplicasAvailable"
	ReasonMinimumReplicasUnavailable = "MinimumReplicasUnavailable"
	ReasonNewReplicaSetCreated       = "NewReplicaSetCreated"
	ReasonFoundNewReplicaSet         = "FoundNewReplicaSet"
	ReasonReplicaSetUpdated          = "ReplicaSetUpdated"
	ReasonNewReplicaSetAvailable     = "NewReplicaSetAvailable"
	ReasonProgressDeadlineExceeded   = "ProgressDeadlineExceeded"
	ReasonReplicaSetCreateError      = "ReplicaSetCreateError"
	ReasonDeploymentPaused           = "DeploymentPaused"
	ReasonDeploymentResumed          = "DeploymentResumed"
)

// This file computes Deployment status, pure: counts from the ReplicaSets,
// the Available condition, and the Progressing condition's estimate of
// progress against progressDeadlineSeconds (Kubernetes' sync.go
// calculateStatus and progress.go).

// hasProgressDeadline reports whether d has a progress deadline (Kubernetes
// treats MaxInt32 as none).
func hasProgressDeadline(d *appsv1.Deployment) bool {
	p := d.GetSpec().ProgressDeadlineSeconds
	return p != nil && *p != math.MaxInt32
}

// getCondition returns st's condition of type typ, or nil.
func getCondition(st *appsv1.DeploymentStatus, typ string) *appsv1.DeploymentCondition {
	for _, c := range st.GetConditions() {
		if c.GetType() == typ {
			return c
		}
	}
	return nil
}

// newCondition is a condition that changed at now.
func newCondition(typ, status, reason, msg string, now time.Time) *appsv1.DeploymentCondition {
	ts := timestamppb.New(now)
	return &appsv1.DeploymentCondition{Type: typ, Status: status, Reason: reason, Message: msg, LastUpdateTime: ts, LastTransitionTime: proto.Clone(ts).(*timestamppb.Timestamp)}
}

// setCondition sets c in st unless a condition of its type with the same
// status and reason is there already; a condition that keeps its status
// keeps its lastTransitionTime.
func setCondition(st *appsv1.DeploymentStatus, c *appsv1.DeploymentCondition) {
	cur := getCondition(st, c.Type)
	if cur != nil && cur.GetStatus() == c.Status && cur.GetReason() == c.Reason {
		return
	}
	if cur != nil && cur.GetStatus() == c.Status {
		c.LastTransitionTime = cur.LastTransitionTime
	}
	removeCondition(st, c.Type)
	st.Conditions = append(st.Conditions, c)
}

func removeCondition(st *appsv1.DeploymentStatus, typ string) {
	st.Conditions = slices.DeleteFunc(st.Conditions, func(c *appsv1.DeploymentCondition) bool { return c.GetType() == typ })
}

// calculateStatus is d's status from its ReplicaSets (all includes newRS,
// which may be nil): counts, observedGeneration, collisionCount and the
// Available condition; the other conditions are d's current ones.
func calculateStatus(d *appsv1.Deployment, all []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet, b bounds, now time.Time) *appsv1.DeploymentStatus {
	st := &appsv1.DeploymentStatus{
		ObservedGeneration: d.GetMetadata().GetGeneration(),
		CollisionCount:     d.GetStatus().CollisionCount,
	}
	var total int32
	for _, rs := range all {
		if rs == nil {
			continue
		}
		total += rsReplicas(rs)
		st.Replicas += rs.GetStatus().GetReplicas()
		st.ReadyReplicas += rs.GetStatus().GetReadyReplicas()
		st.AvailableReplicas += rs.GetStatus().GetAvailableReplicas()
	}
	if newRS != nil {
		st.UpdatedReplicas = newRS.GetStatus().GetReplicas()
	}
	st.UnavailableReplicas = max(total-st.AvailableReplicas, 0)
	for _, c := range d.GetStatus().GetConditions() {
		st.Conditions = append(st.Conditions, proto.Clone(c).(*appsv1.DeploymentCondition))
	}
	if st.AvailableReplicas >= b.MinAvailable() {
		setCondition(st, newCondition(ConditionAvailable, "True", ReasonMinimumReplicasAvailable, "Deployment has minimum availability.", now))
	} else {
		setCondition(st, newCondition(ConditionAvailable, "False", ReasonMinimumReplicasUnavailable, "Deployment does not have minimum availability.", now))
	}
	return st
}

// complete reports whether st shows d fully rolled out: every replica
// updated and available, no old one left.
func complete(d *appsv1.Deployment, st *appsv1.DeploymentStatus) bool {
	r := replicasOf(d)
	return st.GetUpdatedReplicas() == r && st.GetReplicas() == r && st.GetAvailableReplicas() == r &&
		st.GetObservedGeneration() >= d.GetMetadata().GetGeneration()
}

// progressing reports whether st shows progress since d's status: more
// updated, ready or available replicas, or fewer old ones.
func progressing(d *appsv1.Deployment, st *appsv1.DeploymentStatus) bool {
	old := d.GetStatus()
	oldOld := old.GetReplicas() - old.GetUpdatedReplicas()
	newOld := st.GetReplicas() - st.GetUpdatedReplicas()
	return st.GetUpdatedReplicas() > old.GetUpdatedReplicas() || newOld < oldOld ||
		st.GetReadyReplicas() > old.GetReadyReplicas() || st.GetAvailableReplicas() > old.GetAvailableReplicas()
}

// timedOut reports whether the last progress recorded in st's Progressing
// condition is more than progressDeadlineSeconds before now.
func timedOut(d *appsv1.Deployment, st *appsv1.DeploymentStatus, now time.Time) bool {
	if !hasProgressDeadline(d) {
		return false
	}
	c := getCondition(st, ConditionProgressing)
	if c == nil {
		return false
	}
	switch c.GetReason() {
	case ReasonNewReplicaSetAvailable:
		return false
	case ReasonProgressDeadlineExceeded:
		return true
	}
	if c.GetLastUpdateTime() == nil {
		return false
	}
	deadline := c.GetLastUpdateTime().AsTime().Add(time.Duration(*d.Spec.ProgressDeadlineSeconds) * time.Second)
	return deadline.Before(now)
}

// rolloutStatus is calculateStatus plus the Progressing condition of a
// rollout in progress (Kubernetes' syncRolloutStatus) and the
// ReplicaFailure condition. checkAfter, when positive, is when to look
// again for a deadline that may pass without any event.
func rolloutStatus(d *appsv1.Deployment, all []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet, b bounds, now time.Time) (st *appsv1.DeploymentStatus, checkAfter time.Duration) {
	st = calculateStatus(d, all, newRS, b, now)
	name := d.GetMetadata().GetName()
	if !hasProgressDeadline(d) {
		removeCondition(st, ConditionProgressing)
	}
	cur := getCondition(d.GetStatus(), ConditionProgressing)
	isComplete := st.Replicas == st.UpdatedReplicas && cur != nil && cur.GetReason() == ReasonNewReplicaSetAvailable
	if hasProgressDeadline(d) && !isComplete {
		subject := fmt.Sprintf("Deployment %q", name)
		if newRS != nil {
			subject = fmt.Sprintf("ReplicaSet %q", newRS.GetMetadata().GetName())
		}
		switch {
		case complete(d, st):
			setCondition(st, newCondition(ConditionProgressing, "True", ReasonNewReplicaSetAvailable, subject+" has successfully progressed.", now))
		case progressing(d, st):
			// Progress refreshes lastUpdateTime even with the same reason.
			c := newCondition(ConditionProgressing, "True", ReasonReplicaSetUpdated, subject+" is progressing.", now)
			if cur != nil {
				if cur.GetStatus() == "True" {
					c.LastTransitionTime = cur.LastTransitionTime
				}
				removeCondition(st, ConditionProgressing)
			}
			setCondition(st, c)
		case timedOut(d, st, now):
			setCondition(st, newCondition(ConditionProgressing, "False", ReasonProgressDeadlineExceeded, subject+" has timed out progressing.", now))
		}
	}
	if f := replicaFailure(all, newRS); f != nil {
		setCondition(st, f)
	} else {
		removeCondition(st, ConditionReplicaFailure)
	}
	return st, progressCheckAfter(d, st, now)
}

// progressCheckAfter is how long until d's rollout would pass its progress
// deadline without further progress (0: no check needed), so that the
// controller looks again then (Kubernetes' requeueStuckDeployment).
func progressCheckAfter(d *appsv1.Deployment, st *appsv1.DeploymentStatus, now time.Time) time.Duration {
	c := getCondition(st, ConditionProgressing)
	if !hasProgressDeadline(d) || c == nil || complete(d, st) {
		return 0
	}
	switch c.GetReason() {
	case ReasonProgressDeadlineExceeded, ReasonNewReplicaSetAvailable, ReasonDeploymentPaused:
		return 0
	}
	if c.GetLastUpdateTime() == nil {
		return 0
	}
	deadline := c.GetLastUpdateTime().AsTime().Add(time.Duration(*d.Spec.ProgressDeadlineSeconds) * time.Second)
	// A little past the deadline: timedOut wants it strictly passed.
	return max(deadline.Sub(now), 0) + 10*time.Millisecond
}

// replicaFailure turns a ReplicaSet's ReplicaFailure condition (the new
// ReplicaSet's first) into the Deployment's.
func replicaFailure(all []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet) *appsv1.DeploymentCondition {
	rses := all
	if newRS != nil {
		rses = append([]*appsv1.ReplicaSet{newRS}, all...)
	}
	for _, rs := range rses {
		for _, c := range rs.GetStatus().GetConditions() {
			if c.GetType() == ConditionReplicaFailure && c.GetStatus() == "True" {
				return &appsv1.DeploymentCondition{
					Type: ConditionReplicaFailure, Status: "True", Reason: c.GetReason(), Message: c.GetMessage(),
					LastUpdateTime: c.GetLastTransitionTime(), LastTransitionTime: c.GetLastTransitionTime(),
				}
			}
		}
	}
	return nil
}

// pausedCondition updates the Progressing condition of a Deployment that
// was paused or resumed (Kubernetes' checkPausedConditions), so that the
// time spent paused does not count against the progress deadline; it
// reports whether st changed. A timed-out rollout keeps its condition.
func pausedCondition(d *appsv1.Deployment, st *appsv1.DeploymentStatus, now time.Time) bool {
	if !hasProgressDeadline(d) {
		return false
	}
	c := getCondition(st, ConditionProgressing)
	if c.GetReason() == ReasonProgressDeadlineExceeded {
		return false
	}
	pausedCond := c.GetReason() == ReasonDeploymentPaused
	switch paused := d.GetSpec().GetPaused(); {
	case paused && !pausedCond:
		setCondition(st, newCondition(ConditionProgressing, "Unknown", ReasonDeploymentPaused, "Deployment is paused", now))
		return true
	case !paused && pausedCond:
		setCondition(st, newCondition(ConditionProgressing, "Unknown", ReasonDeploymentResumed, "Deployment is resumed", now))
		return true
	}
	return false
}
