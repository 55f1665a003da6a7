package framework

import (
	"context"
	"sync/atomic"
	"time"

	"skiff.dev/services/scheduler/config"
)

// Sampling bounds, as in Kubernetes: whatever the percentage, at least
// MinFeasibleNodesToFind nodes (or all, when fewer) are looked for, and the
// adaptive percentage never drops below MinFeasibleNodesPercentageToFind.
const (
	MinFeasibleNodesToFind           = 100
	MinFeasibleNodesPercentageToFind = 5
)

// NumFeasibleNodesToFind is how many feasible nodes the search for a pod
// stops at, out of numAllNodes, for a percentageOfNodesToScore (0:
// adaptive, 50% minus 1% per 125 nodes). Scoring fewer nodes in a big
// cluster trades a slightly worse placement for a much faster cycle.
func NumFeasibleNodesToFind(percentage int32, numAllNodes int) int {
	if numAllNodes < MinFeasibleNodesToFind || percentage >= 100 {
		return numAllNodes
	}
	p := int(percentage)
	if p <= 0 {
		p = 50 - numAllNodes/125
		if p < MinFeasibleNodesPercentageToFind {
			p = MinFeasibleNodesPercentageToFind
		}
	}
	n := numAllNodes * p / 100
	if n < MinFeasibleNodesToFind {
		return MinFeasibleNodesToFind
	}
	return n
}

// scratch holds the buffers one cycle uses, reused by the next.
type scratch struct {
	statuses []*Status
	feasible []*NodeInfo
	scores   [][]NodeScore
	totals   []NodeScore
	// Per plugin timed calls, in sampled cycles.
	filterTimes []callTimes
	scoreTimes  []callTimes
}

// FindFeasible runs the Filter plugins over nodes, in parallel, starting at
// index start and wrapping around, until NumFeasibleNodesToFind feasible
// nodes are found or every node was tried. It returns the feasible nodes
// (valid until the next cycle), how many nodes were looked at (the next
// search should start that much further on, so that pods spread over the
// whole cluster), and records every rejection in d. A plugin Error aborts
// the search with that status.
func (f *Framework) FindFeasible(ctx context.Context, state *CycleState, pod *PodInfo, nodes []*NodeInfo, start int, d *Diagnosis) (feasible []*NodeInfo, processed int, status *Status) {
	t0 := time.Now()
	defer func() { f.observePoint(config.Filter, status, t0) }()
	n := len(nodes)
	if n == 0 {
		return nil, 0, nil
	}
	start %= n
	want := NumFeasibleNodesToFind(f.percentage, n)
	nFilters := len(f.filter)
	if state.filtersSet {
		nFilters = len(state.activeFilters)
	}
	if state.RecordPluginMetrics {
		defer f.observeMeans(config.Filter, func(i int) string { return f.filter[i].Name() }, f.scratch.filterTimes)
	}
	if nFilters == 0 {
		out := f.scratch.feasible[:0]
		for i := 0; i < want; i++ {
			out = append(out, nodes[(start+i)%n])
		}
		f.scratch.feasible = out
		return out, want, nil
	}

	if cap(f.scratch.statuses) < n {
		f.scratch.statuses = make([]*Status, n)
	}
	statuses := f.scratch.statuses[:n]
	clear(statuses)
	if cap(f.scratch.feasible) < want {
		f.scratch.feasible = make([]*NodeInfo, want)
	}
	found := f.scratch.feasible[:want]
	var nFound, nProcessed atomic.Int64
	var failed atomic.Pointer[Status]
	sampled := state.RecordPluginMetrics

	f.parallelizer.ForEachChunk(n, func(lo, hi int) bool {
		var buf [maxChunk]*NodeInfo
		local := buf[:0]
		i := lo
	nodes:
		for ; i < hi; i++ {
			idx := (start + i) % n
			node := nodes[idx]
			s := f.runFilterWithNominated(ctx, state, pod, node, sampled && i%timedNodeEvery == 0)
			switch {
			case s.IsSuccess():
				local = append(local, node)
				if len(local)+int(nFound.Load()) >= want {
					i++
					break nodes
				}
			case s.Code() == Error:
				nProcessed.Add(int64(i + 1 - lo))
				failed.CompareAndSwap(nil, s)
				return false
			default:
				statuses[idx] = s
			}
		}
		nProcessed.Add(int64(i - lo))
		if len(local) == 0 {
			return true
		}
		// Publish this chunk's feasible nodes (those past want are dropped).
		end := int(nFound.Add(int64(len(local))))
		for j, node := range local {
			if k := end - len(local) + j; k < want {
				found[k] = node
			}
		}
		return end < want
	})
	if s := failed.Load(); s != nil {
		return nil, int(nProcessed.Load()), s
	}
	feasible = found[:min(int(nFound.Load()), want)]
	if len(feasible) == 0 {
		d.record(nodes, statuses)
	}
	return feasible, int(nProcessed.Load()), nil
}

// record fills d from the statuses of rejected nodes.
func (d *Diagnosis) record(nodes []*NodeInfo, statuses []*Status) {
	if d.NodeToStatus == nil {
		d.NodeToStatus = make(map[string]*Status, len(nodes))
	}
	for i, s := range statuses {
		if s == nil {
			continue
		}
		d.NodeToStatus[nodes[i].Name()] = s
		d.addPlugin(s.Plugin())
	}
}

func (d *Diagnosis) addPlugin(name string) {
	if name == "" {
		return
	}
	if d.UnschedulablePlugins == nil {
		d.UnschedulablePlugins = map[string]struct{}{}
	}
	d.UnschedulablePlugins[name] = struct{}{}
}
