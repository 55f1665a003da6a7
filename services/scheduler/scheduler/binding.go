package scheduler

import (
	"context"
	"time"

	"go.uber.org/zap"

	"skiff.dev/internal/apierrors"

	"skiff.dev/internal/events"
	"skiff.dev/services/scheduler/framework"
	"skiff.dev/services/scheduler/queue"
)

// bind runs the PreBind then the bind plugins for a pod assumed on host, off the scheduling
// goroutine. On success the assumption waits for the watch to confirm it;
// on failure it is forgotten (freeing the node's allocation, which may let
// waiting pods fit) and the pod is retried after its backoff, unless it
// was bound elsewhere or deleted meanwhile.
func (s *Scheduler) bind(ctx context.Context, fwk *framework.Framework, state *framework.CycleState, qp *queue.QueuedPodInfo, cycle int64, host string, start time.Time) {
	defer func() {
		<-s.bindSem
		s.metrics.binding.Dec()
		s.wg.Done()
	}()
	st := fwk.RunPreBind(ctx, state, qp.PodInfo, host)
	if st.IsSuccess() {
		st = fwk.RunBind(ctx, state, qp.PodInfo, host)
	}
	if st.IsSuccess() {
		s.cache.FinishBinding(qp.PodInfo)
		s.queue.Done(qp.UID())
		s.metrics.attempt(resultScheduled, fwk.ProfileName(), time.Since(start))
		s.metrics.scheduled(qp.Attempts, time.Since(qp.InitialAttemptTimestamp))
		s.recorders[fwk.ProfileName()].Eventf(qp.Pod, events.EventTypeNormal, "Scheduled", "Successfully assigned %s to %s", qp.Key(), host)
		return
	}

	fwk.RunUnreserve(ctx, state, qp.PodInfo, host)
	if err := s.cache.ForgetPod(qp.PodInfo); err != nil {
		s.log.Debug("forgetting a pod whose bind failed", zap.String("pod", qp.Key()), zap.Error(err))
	}
	s.queue.MoveAllToActiveOrBackoff("BindFailed")
	s.metrics.attempt(resultError, fwk.ProfileName(), time.Since(start))
	err := st.AsError()
	if ctx.Err() != nil {
		s.queue.Done(qp.UID())
		return
	}
	if !s.stillOurs(ctx, qp, err) {
		// Bound by someone else, or deleted: nothing to retry.
		s.log.Debug("bind refused; the pod is no longer ours", zap.String("pod", qp.Key()), zap.Error(err))
		s.queue.Done(qp.UID())
		return
	}
	s.log.Info("bind failed; retrying after backoff", zap.String("pod", qp.Key()), zap.String("node", host), zap.Error(err))
	s.recorders[fwk.ProfileName()].Eventf(qp.Pod, events.EventTypeWarning, "FailedScheduling", "Binding rejected: %v", err)
	// A Conflict is no error of the pod's: it changed since its cycle
	// began (often by the scheduler's own status writes: PodScheduled,
	// nominatedNodeName), so it is retried as soon as the queue is idle,
	// not after an error's backoff (the move above sends it to backoffQ).
	s.queue.AddUnschedulableIfNotPresent(qp, cycle, apierrors.IsConflict(err)) // qp is the queue's from here on
}

// stillOurs reports whether the pod is still unbound and ours after its
// bind failed with err. After a Conflict the informer may lag behind what
// refused the bind, so the pod is read from the API.
func (s *Scheduler) stillOurs(ctx context.Context, qp *queue.QueuedPodInfo, err error) bool {
	m := qp.Pod.GetMetadata()
	cur, ok := s.pods.Store().GetByName(m.GetNamespace(), m.GetName())
	if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
		fresh, gerr := s.podsc.Get(ctx, m.GetNamespace(), m.GetName())
		switch {
		case gerr == nil:
			cur, ok = fresh, true
		case apierrors.IsNotFound(gerr):
			return false
		}
	}
	return ok && cur.GetMetadata().GetUid() == m.GetUid() && s.ours(cur)
}
