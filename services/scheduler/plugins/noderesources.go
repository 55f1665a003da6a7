package plugins

import (
	"context"
	"fmt"
	"slices"

	"skiff.dev/services/scheduler/config"
	"skiff.dev/services/scheduler/framework"
)

// Reasons of NodeResourcesFit, as Kubernetes words them.
const (
	ReasonTooManyPods = "Too many pods"
)

// InsufficientReason is the reason for a resource the node lacks
// ("Insufficient cpu").
func InsufficientReason(resource string) string { return "Insufficient " + resource }

// Fit is NodeResourcesFit: a node fits when, for every resource the pod
// requests, the node's allocatable minus what its pods already request
// covers the request, and the node has room for one more pod. It scores by
// the chosen strategy: LeastAllocated spreads pods (a node with more left
// over scores higher), MostAllocated packs them.
type Fit struct {
	score     func(requested, allocatable int64) int64
	resources []resourceRef
}

var (
	_ framework.FilterPlugin = (*Fit)(nil)
	_ framework.ScorePlugin  = (*Fit)(nil)
)

// NewFit builds NodeResourcesFit from *config.NodeResourcesFitArgs (nil:
// LeastAllocated over cpu and memory).
func NewFit(args any, _ framework.Handle) (framework.Plugin, error) {
	a, ok := args.(*config.NodeResourcesFitArgs)
	if args == nil || (ok && a == nil) {
		a, ok = config.DefaultNodeResourcesFitArgs(), true
	}
	if !ok {
		return nil, fmt.Errorf("want *config.NodeResourcesFitArgs, got %T", args)
	}
	f := &Fit{resources: resourceRefs(a.ScoringStrategy.Resources)}
	switch a.ScoringStrategy.Type {
	case config.LeastAllocated, "":
		f.score = leastRequestedScore
	case config.MostAllocated:
		f.score = mostRequestedScore
	default:
		return nil, fmt.Errorf("unknown scoring strategy %q", a.ScoringStrategy.Type)
	}
	return f, nil
}

// Name implements framework.Plugin.
func (f *Fit) Name() string { return config.NodeResourcesFit }

// Filter implements framework.FilterPlugin.
func (f *Fit) Filter(_ context.Context, _ *framework.CycleState, pod *framework.PodInfo, node *framework.NodeInfo) *framework.Status {
	reasons := InsufficientResources(pod, node)
	if len(reasons) == 0 {
		return nil
	}
	return framework.NewStatus(framework.Unschedulable, reasons...)
}

// InsufficientResources lists what node lacks for pod, one reason per
// resource, in a fixed order (pods, cpu, memory, ephemeral-storage, then
// extended resources).
func InsufficientResources(pod *framework.PodInfo, node *framework.NodeInfo) []string {
	var reasons []string
	alloc, used, req := &node.Allocatable, &node.Requested, &pod.Requests
	if int64(len(node.Pods))+1 > alloc.AllowedPodNumber {
		reasons = append(reasons, ReasonTooManyPods)
	}
	if req.MilliCPU > 0 && req.MilliCPU > alloc.MilliCPU-used.MilliCPU {
		reasons = append(reasons, InsufficientReason(framework.ResourceCPU))
	}
	if req.Memory > 0 && req.Memory > alloc.Memory-used.Memory {
		reasons = append(reasons, InsufficientReason(framework.ResourceMemory))
	}
	if req.EphemeralStorage > 0 && req.EphemeralStorage > alloc.EphemeralStorage-used.EphemeralStorage {
		reasons = append(reasons, InsufficientReason(framework.ResourceEphemeralStorage))
	}
	if len(req.Scalar) > 0 {
		var extra []string
		for name, v := range req.Scalar {
			if v > 0 && v > alloc.Scalar[name]-used.Scalar[name] {
				extra = append(extra, InsufficientReason(name))
			}
		}
		slices.Sort(extra)
		reasons = append(reasons, extra...)
	}
	return reasons
}

// Score implements framework.ScorePlugin: the weighted mean over the
// configured resources of the strategy's score, counting the pod as
// already placed. Resources the node does not have are left out.
func (f *Fit) Score(_ context.Context, _ *framework.CycleState, pod *framework.PodInfo, node *framework.NodeInfo) (int64, *framework.Status) {
	var sum, weights int64
	for _, r := range f.resources {
		alloc := r.allocatable(node)
		if alloc == 0 {
			continue
		}
		sum += f.score(r.requestedWithPod(pod, node, true), alloc) * r.weight
		weights += r.weight
	}
	if weights == 0 {
		return 0, nil
	}
	return sum / weights, nil
}

// ScoreExtensions implements framework.ScorePlugin: scores are already 0..100.
func (f *Fit) ScoreExtensions() framework.ScoreExtensions { return nil }

// resourceKind names the resources Resource holds in fields, so that
// scoring does not compare resource names per node.
type resourceKind uint8

const (
	kindScalar resourceKind = iota
	kindCPU
	kindMemory
	kindEphemeralStorage
	kindPods
)

// resourceRef is a configured resource with its weight, resolved once.
type resourceRef struct {
	kind   resourceKind
	name   string
	weight int64
}

func resourceRefs(specs []config.ResourceSpec) []resourceRef {
	if len(specs) == 0 {
		specs = config.DefaultResources()
	}
	out := make([]resourceRef, len(specs))
	for i, r := range specs {
		k := kindScalar
		switch r.Name {
		case framework.ResourceCPU:
			k = kindCPU
		case framework.ResourceMemory:
			k = kindMemory
		case framework.ResourceEphemeralStorage:
			k = kindEphemeralStorage
		case framework.ResourcePods:
			k = kindPods
		}
		out[i] = resourceRef{kind: k, name: r.Name, weight: max(r.Weight, 1)}
	}
	return out
}

func (r resourceRef) get(x *framework.Resource) int64 {
	switch r.kind {
	case kindCPU:
		return x.MilliCPU
	case kindMemory:
		return x.Memory
	case kindEphemeralStorage:
		return x.EphemeralStorage
	case kindPods:
		return x.AllowedPodNumber
	default:
		return x.Scalar[r.name]
	}
}

func (r resourceRef) allocatable(node *framework.NodeInfo) int64 { return r.get(&node.Allocatable) }

// requestedWithPod is what the node's pods request of the resource plus
// what pod requests; with nonZero, cpu and memory count the scoring
// defaults for pods that request none.
func (r resourceRef) requestedWithPod(pod *framework.PodInfo, node *framework.NodeInfo, nonZero bool) int64 {
	switch {
	case nonZero && r.kind == kindCPU:
		return node.NonZeroRequested.MilliCPU + pod.NonZeroCPU
	case nonZero && r.kind == kindMemory:
		return node.NonZeroRequested.Memory + pod.NonZeroMemory
	case r.kind == kindPods:
		return int64(len(node.Pods)) + 1
	default:
		return r.get(&node.Requested) + r.get(&pod.Requests)
	}
}

// leastRequestedScore: the share left free, 0..100; 0 when over-committed.
func leastRequestedScore(requested, capacity int64) int64 {
	if capacity == 0 || requested > capacity {
		return 0
	}
	return (capacity - requested) * framework.MaxNodeScore / capacity
}

// mostRequestedScore: the share used, 0..100 (over-commitment counts as full).
func mostRequestedScore(requested, capacity int64) int64 {
	if capacity == 0 {
		return 0
	}
	if requested > capacity {
		requested = capacity
	}
	return requested * framework.MaxNodeScore / capacity
}
