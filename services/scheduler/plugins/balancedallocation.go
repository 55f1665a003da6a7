package plugins

import (
	"context"
	"fmt"
	"math"

	"skiff.dev/services/scheduler/config"
	"skiff.dev/services/scheduler/framework"
)

// BalancedAllocation is NodeResourcesBalancedAllocation: it favours nodes
// whose resources would be used evenly with the pod placed (cpu 50% and
// memory 50% beats cpu 90% and memory 10%), so that no resource is
// stranded. The score is (1 - standard deviation of the used fractions)
// * 100.
type BalancedAllocation struct {
	resources []resourceRef
}

var (
	_ framework.PreScorePlugin = (*BalancedAllocation)(nil)
	_ framework.ScorePlugin    = (*BalancedAllocation)(nil)
)

// NewBalancedAllocation builds the plugin from
// *config.NodeResourcesBalancedAllocationArgs (nil: cpu and memory).
func NewBalancedAllocation(args any, _ framework.Handle) (framework.Plugin, error) {
	a, ok := args.(*config.NodeResourcesBalancedAllocationArgs)
	if args == nil || (ok && a == nil) {
		a, ok = config.DefaultNodeResourcesBalancedAllocationArgs(), true
	}
	if !ok {
		return nil, fmt.Errorf("want *config.NodeResourcesBalancedAllocationArgs, got %T", args)
	}
	return &BalancedAllocation{resources: resourceRefs(a.Resources)}, nil
}

// Name implements framework.Plugin.
func (b *BalancedAllocation) Name() string { return config.NodeResourcesBalancedAllocation }

// PreScore implements framework.PreScorePlugin: a pod that requests none
// of the resources changes no balance, so its scoring is skipped.
func (b *BalancedAllocation) PreScore(_ context.Context, _ *framework.CycleState, pod *framework.PodInfo, _ []*framework.NodeInfo) *framework.Status {
	for _, r := range b.resources {
		if r.kind != kindPods && r.get(&pod.Requests) > 0 {
			return nil
		}
	}
	return framework.NewStatus(framework.Skip)
}

// Score implements framework.ScorePlugin.
func (b *BalancedAllocation) Score(_ context.Context, _ *framework.CycleState, pod *framework.PodInfo, node *framework.NodeInfo) (int64, *framework.Status) {
	var fractions [8]float64
	fs := fractions[:0]
	for _, r := range b.resources {
		alloc := r.allocatable(node)
		if alloc == 0 {
			continue
		}
		f := float64(r.requestedWithPod(pod, node, false)) / float64(alloc)
		if f > 1 {
			f = 1
		}
		fs = append(fs, f)
	}
	return balancedScore(fs), nil
}

// balancedScore is (1 - std(fractions)) * MaxNodeScore.
func balancedScore(fs []float64) int64 {
	var std float64
	switch len(fs) {
	case 0, 1:
		std = 0
	case 2:
		std = math.Abs(fs[0]-fs[1]) / 2
	default:
		var mean float64
		for _, f := range fs {
			mean += f
		}
		mean /= float64(len(fs))
		var v float64
		for _, f := range fs {
			v += (f - mean) * (f - mean)
		}
		std = math.Sqrt(v / float64(len(fs)))
	}
	return int64((1 - std) * float64(framework.MaxNodeScore))
}

// ScoreExtensions implements framework.ScorePlugin.
func (b *BalancedAllocation) ScoreExtensions() framework.ScoreExtensions { return nil }
