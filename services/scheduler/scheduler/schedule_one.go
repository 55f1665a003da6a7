package scheduler

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"

	"skiff.dev/services/scheduler/framework"
	"skiff.dev/services/scheduler/queue"
)

// scheduleOne runs one scheduling cycle for a popped pod: it either
// assumes the pod on a node and starts its bind, or hands it back to the
// queue with an explanation.
func (s *Scheduler) scheduleOne(ctx context.Context, qp *queue.QueuedPodInfo) {
	uid := qp.UID()
	fwk, ok := s.profiles[schedulerName(qp.Pod)]
	if !ok || s.skip(qp) {
		s.queue.Done(uid)
		return
	}
	start := time.Now()
	cycle := s.queue.SchedulingCycle()
	state := framework.NewCycleState()
	state.RecordPluginMetrics = s.rand.IntN(100) < pluginMetricsSamplePercent
	fwk.NominatedPodsForCycle(state)

	s.cache.UpdateSnapshot(s.snapshot)
	host, err := s.schedulePod(ctx, fwk, state, qp.PodInfo)
	if err != nil {
		s.failed(ctx, fwk, qp, cycle, err, start)
		return
	}

	// Assume: the next cycle sees the pod on host, bind or no bind yet.
	if err := s.cache.AssumePod(qp.PodInfo, host); err != nil {
		s.failed(ctx, fwk, qp, cycle, fmt.Errorf("assuming the pod on %s: %w", host, err), start)
		return
	}
	if st := fwk.RunReserve(ctx, state, qp.PodInfo, host); !st.IsSuccess() {
		fwk.RunUnreserve(ctx, state, qp.PodInfo, host)
		_ = s.cache.ForgetPod(qp.PodInfo)
		s.failed(ctx, fwk, qp, cycle, fmt.Errorf("reserving %s: %w", host, st.AsError()), start)
		return
	}
	if ce := s.log.Check(zap.DebugLevel, "assumed"); ce != nil {
		ce.Write(zap.String("pod", qp.Key()), zap.String("node", host), zap.Duration("took", time.Since(start)))
	}

	select {
	case s.bindSem <- struct{}{}:
	case <-ctx.Done():
		fwk.RunUnreserve(ctx, state, qp.PodInfo, host)
		_ = s.cache.ForgetPod(qp.PodInfo)
		s.queue.Done(uid)
		return
	}
	s.metrics.binding.Inc()
	s.wg.Add(1)
	go s.bind(ctx, fwk, state, qp, cycle, host, start)
}

// skip reports a popped pod that is no longer ours to schedule: deleted,
// replaced, bound meanwhile, or already counted in the cache.
func (s *Scheduler) skip(qp *queue.QueuedPodInfo) bool {
	m := qp.Pod.GetMetadata()
	cur, ok := s.pods.Store().GetByName(m.GetNamespace(), m.GetName())
	if !ok || cur.GetMetadata().GetUid() != m.GetUid() || !s.ours(cur) {
		return true
	}
	return s.cache.Has(m.GetUid())
}

// schedulePod finds the best node for pod in the snapshot, or returns a
// *framework.FitError explaining why none fits (or another error).
func (s *Scheduler) schedulePod(ctx context.Context, fwk *framework.Framework, state *framework.CycleState, pod *framework.PodInfo) (string, error) {
	nodes := s.snapshot.List()
	if len(nodes) == 0 {
		return "", &framework.FitError{Pod: pod}
	}
	var diag framework.Diagnosis
	pre, st := fwk.RunPreFilter(ctx, state, pod)
	if !st.IsSuccess() {
		if st.IsRejected() {
			diag.PreFilterMsg = st.Message()
			diag.NoteRejectedAll(nodes, st)
			return "", &framework.FitError{Pod: pod, NumAllNodes: len(nodes), Diagnosis: diag}
		}
		return "", fmt.Errorf("running PreFilter: %w", st.AsError())
	}

	candidates, rotate := nodes, true
	if pre != nil && pre.NodeNames != nil {
		// PreFilter named the only nodes worth trying (a node name, a
		// metadata.name affinity).
		candidates, rotate = nil, false
		for _, n := range nodes {
			if _, ok := pre.NodeNames[n.Name()]; ok {
				candidates = append(candidates, n)
			}
		}
	}

	feasible, processed, st := fwk.FindFeasible(ctx, state, pod, candidates, s.nextStart, &diag)
	if rotate && len(nodes) > 0 {
		s.nextStart = (s.nextStart + processed) % len(nodes)
	}
	if !st.IsSuccess() {
		return "", fmt.Errorf("running Filter: %w", st.AsError())
	}
	if len(feasible) == 0 {
		if pre != nil && pre.NodeNames != nil {
			for _, n := range nodes {
				if _, ok := pre.NodeNames[n.Name()]; !ok {
					if diag.NodeToStatus == nil {
						diag.NodeToStatus = map[string]*framework.Status{}
					}
					diag.NodeToStatus[n.Name()] = framework.NewStatus(framework.UnschedulableAndUnresolvable, "node(s) didn't match the nodes PreFilter chose")
				}
			}
		}
		if _, pst := fwk.RunPostFilter(ctx, state, pod, &diag); pst.Code() == framework.Error {
			return "", fmt.Errorf("running PostFilter: %w", pst.AsError())
		} else if msg := pst.Message(); msg != "" {
			diag.PostFilterMsg = msg
		}
		return "", &framework.FitError{Pod: pod, NumAllNodes: len(nodes), Diagnosis: diag}
	}
	if len(feasible) == 1 {
		return feasible[0].Name(), nil
	}
	if st := fwk.RunPreScore(ctx, state, pod, feasible); !st.IsSuccess() {
		return "", fmt.Errorf("running PreScore: %w", st.AsError())
	}
	totals, st := fwk.RunScore(ctx, state, pod, feasible)
	if !st.IsSuccess() {
		return "", fmt.Errorf("running Score: %w", st.AsError())
	}
	return s.selectHost(totals), nil
}

// selectHost picks the highest total, uniformly at random among ties.
func (s *Scheduler) selectHost(totals []framework.NodeScore) string {
	best, ties := 0, 1
	for i := 1; i < len(totals); i++ {
		switch {
		case totals[i].Score > totals[best].Score:
			best, ties = i, 1
		case totals[i].Score == totals[best].Score:
			ties++
			if s.rand.IntN(ties) == 0 {
				best = i
			}
		}
	}
	return totals[best].Name
}

// failed hands a pod that got no node back to the queue, and explains.
func (s *Scheduler) failed(ctx context.Context, fwk *framework.Framework, qp *queue.QueuedPodInfo, cycle int64, err error, start time.Time) {
	var fitErr *framework.FitError
	unschedulable := errors.As(err, &fitErr)
	result := resultError
	if unschedulable {
		result = resultUnschedulable
		qp.UnschedulablePlugins = qp.UnschedulablePlugins[:0]
		for p := range fitErr.Diagnosis.UnschedulablePlugins {
			qp.UnschedulablePlugins = append(qp.UnschedulablePlugins, p)
		}
	}
	s.metrics.attempt(result, fwk.ProfileName(), time.Since(start))
	s.log.Debug("pod did not get a node", zap.String("pod", qp.Key()), zap.Int("attempts", qp.Attempts), zap.Error(err))
	pod := qp.PodInfo
	s.queue.AddUnschedulableIfNotPresent(qp, cycle, unschedulable) // qp is the queue's from here on
	s.explain(ctx, fwk, pod, unschedulable, err.Error())
}
