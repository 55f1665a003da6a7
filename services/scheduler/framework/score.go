package framework

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"skiff.dev/services/scheduler/config"
)

// RunScore scores the feasible nodes: every Score plugin (but those
// PreScore skipped) on every node in parallel, then each plugin's
// NormalizeScore over its scores, then the weighted sum per node. The
// totals are in the order of nodes and valid until the next cycle.
func (f *Framework) RunScore(ctx context.Context, state *CycleState, pod *PodInfo, nodes []*NodeInfo) (totals []NodeScore, status *Status) {
	t0 := time.Now()
	defer func() { f.observePoint(config.Score, status, t0) }()
	n := len(nodes)
	if len(f.scratch.scores) < len(f.score) {
		f.scratch.scores = make([][]NodeScore, len(f.score))
	}
	active := make([]int, 0, len(f.score))
	for p, pl := range f.score {
		if contains(state.skipScore, pl.Name()) {
			continue
		}
		active = append(active, p)
		if cap(f.scratch.scores[p]) < n {
			f.scratch.scores[p] = make([]NodeScore, n)
		}
		f.scratch.scores[p] = f.scratch.scores[p][:n]
	}
	scores := f.scratch.scores
	if state.RecordPluginMetrics {
		defer f.observeMeans(config.Score, func(i int) string { return f.score[i].Name() }, f.scratch.scoreTimes)
	}

	var failed atomic.Pointer[Status]
	f.parallelizer.ForEach(n, func(i int) bool {
		node := nodes[i]
		name := node.Name()
		timed := state.RecordPluginMetrics && i%timedNodeEvery == 0
		for _, p := range active {
			pl := f.score[p]
			var v int64
			var s *Status
			if timed {
				t := time.Now()
				v, s = pl.Score(ctx, state, pod, node)
				f.scratch.scoreTimes[p].add(time.Since(t))
			} else {
				v, s = pl.Score(ctx, state, pod, node)
			}
			if !s.IsSuccess() {
				failed.CompareAndSwap(nil, s.WithPlugin(pl.Name()))
				return false
			}
			scores[p][i] = NodeScore{Name: name, Score: v}
		}
		return true
	})
	if s := failed.Load(); s != nil {
		return nil, s
	}

	for _, p := range active {
		pl := f.score[p]
		if ext := pl.ScoreExtensions(); ext != nil {
			t := f.pluginStart(state)
			s := ext.NormalizeScore(ctx, state, pod, scores[p])
			f.observePlugin("normalizeScore", pl.Name(), s, t)
			if !s.IsSuccess() {
				return nil, s.WithPlugin(pl.Name())
			}
		}
		for _, ns := range scores[p] {
			if ns.Score < MinNodeScore || ns.Score > MaxNodeScore {
				return nil, NewStatus(Error, fmt.Sprintf("plugin %q scored node %q %d, outside [%d, %d]",
					pl.Name(), ns.Name, ns.Score, MinNodeScore, MaxNodeScore)).WithPlugin(pl.Name())
			}
		}
	}

	if cap(f.scratch.totals) < n {
		f.scratch.totals = make([]NodeScore, n)
	}
	totals = f.scratch.totals[:n]
	for i, node := range nodes {
		var sum int64
		for _, p := range active {
			sum += scores[p][i].Score * f.scoreWeights[p]
		}
		totals[i] = NodeScore{Name: node.Name(), Score: sum}
	}
	return totals, nil
}

// DefaultNormalizeScore scales scores to 0..maxPriority by the largest
// score (all 0 stays 0); with reverse, a lower raw score is better.
func DefaultNormalizeScore(maxPriority int64, reverse bool, scores []NodeScore) {
	var maxCount int64
	for _, s := range scores {
		maxCount = max(maxCount, s.Score)
	}
	if maxCount == 0 {
		if reverse {
			for i := range scores {
				scores[i].Score = maxPriority
			}
		}
		return
	}
	for i := range scores {
		s := scores[i].Score * maxPriority / maxCount
		if reverse {
			s = maxPriority - s
		}
		scores[i].Score = s
	}
}
