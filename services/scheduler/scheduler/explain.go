package scheduler

import (
	"context"

	"go.uber.org/zap"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"skiff.dev/internal/apierrors"
	"skiff.dev/internal/client"
	"skiff.dev/internal/events"
	corev1 "skiff.dev/proto/core/v1"
	"skiff.dev/services/scheduler/framework"
)

// Condition of a pod the scheduler writes, and its reasons.
const (
	conditionPodScheduled = "PodScheduled"
	reasonUnschedulable   = "Unschedulable"
	reasonSchedulerError  = "SchedulerError"
)

// explain tells the pod's owner why it got no node: a FailedScheduling
// event, and PodScheduled=False with the same message (written only when
// it changes).
func (s *Scheduler) explain(ctx context.Context, fwk *framework.Framework, pod *framework.PodInfo, unschedulable bool, msg string) {
	reason := reasonSchedulerError
	if unschedulable {
		reason = reasonUnschedulable
	}
	s.recorders[fwk.ProfileName()].Event(pod.Pod, events.EventTypeWarning, "FailedScheduling", msg)
	if hasCondition(pod.Pod, "False", reason, msg) {
		return
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.setUnscheduledCondition(ctx, pod.Pod, reason, msg)
	}()
}

func (s *Scheduler) setUnscheduledCondition(ctx context.Context, pod *corev1.Pod, reason, msg string) {
	m := pod.GetMetadata()
	first := true
	err := client.RetryOnConflict(ctx, client.DefaultRetry, func() error {
		var cur *corev1.Pod
		if first {
			first = false
			c, ok := s.pods.Store().GetByName(m.GetNamespace(), m.GetName())
			if !ok {
				return nil
			}
			cur = c
		} else {
			c, err := s.podsc.Get(ctx, m.GetNamespace(), m.GetName())
			if err != nil {
				return err
			}
			cur = c
		}
		if cur.GetMetadata().GetUid() != m.GetUid() || assigned(cur) || hasCondition(cur, "False", reason, msg) {
			return nil
		}
		next := proto.Clone(cur).(*corev1.Pod)
		setCondition(next, &corev1.PodCondition{
			Type: conditionPodScheduled, Status: "False", Reason: reason, Message: msg,
			LastTransitionTime: timestamppb.Now(),
		})
		_, err := s.podsc.UpdateStatus(ctx, next)
		return err
	})
	if err != nil && !apierrors.IsNotFound(err) && ctx.Err() == nil {
		s.log.Warn("writing PodScheduled=False", zap.String("pod", m.GetNamespace()+"/"+m.GetName()), zap.Error(err))
	}
}

// hasCondition reports whether pod's PodScheduled condition already says so.
func hasCondition(pod *corev1.Pod, status, reason, msg string) bool {
	for _, c := range pod.GetStatus().GetConditions() {
		if c.GetType() == conditionPodScheduled {
			return c.GetStatus() == status && c.GetReason() == reason && c.GetMessage() == msg
		}
	}
	return false
}

// setCondition sets c on pod, keeping the transition time when the status
// does not change.
func setCondition(pod *corev1.Pod, c *corev1.PodCondition) {
	if pod.Status == nil {
		pod.Status = &corev1.PodStatus{}
	}
	for i, old := range pod.Status.Conditions {
		if old.GetType() == c.GetType() {
			if old.GetStatus() == c.GetStatus() {
				c.LastTransitionTime = old.GetLastTransitionTime()
			}
			pod.Status.Conditions[i] = c
			return
		}
	}
	pod.Status.Conditions = append(pod.Status.Conditions, c)
}
