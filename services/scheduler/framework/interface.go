package framework

import (
	"context"

	"google.golang.org/grpc"

	policyv1 "skiff.dev/proto/policy/v1"
	"skiff.dev/services/scheduler/config"
)

// Score bounds: each Score plugin's normalized scores are 0..MaxNodeScore;
// the node's total is the weighted sum.
const (
	MinNodeScore int64 = 0
	MaxNodeScore int64 = 100
)

// Plugin is what every plugin is.
type Plugin interface {
	Name() string
}

// PreFilterResult narrows the nodes worth filtering; nil means all nodes.
type PreFilterResult struct {
	// NodeNames: only these nodes may fit.
	NodeNames map[string]struct{}
}

// PreFilterPlugin runs once per pod before filtering.
type PreFilterPlugin interface {
	Plugin
	// PreFilter may store state for Filter in state, narrow the nodes, reject
	// the pod, or return Skip so its Filter is not called for this pod.
	PreFilter(ctx context.Context, state *CycleState, pod *PodInfo) (*PreFilterResult, *Status)
	// PreFilterExtensions is nil when the plugin's PreFilter state does
	// not depend on the other pods (nothing to update when one is added
	// or removed).
	PreFilterExtensions() PreFilterExtensions
}

// PreFilterExtensions keep a plugin's PreFilter state true to a node that
// differs from the snapshot's by one pod: after AddPod (or RemovePod) the
// state is what PreFilter would have computed had the pod been on (or off)
// the node, so Filter judges the changed node right. Preemption's dry runs
// remove victims with them, and filtering adds the pods nominated to a
// node; both on a clone of the cycle's state (CycleState.Clone), which
// only these calls change. node already holds the change.
type PreFilterExtensions interface {
	AddPod(ctx context.Context, state *CycleState, podToSchedule, podToAdd *PodInfo, node *NodeInfo) *Status
	RemovePod(ctx context.Context, state *CycleState, podToSchedule, podToRemove *PodInfo, node *NodeInfo) *Status
}

// FilterPlugin says whether a pod may run on a node. Filter is called
// concurrently for different nodes of the same cycle: it must only read
// state written by PreFilter.
type FilterPlugin interface {
	Plugin
	Filter(ctx context.Context, state *CycleState, pod *PodInfo, node *NodeInfo) *Status
}

// PostFilterPlugin runs when no node fits (e.g. preemption). A Success with
// a nominated node name asks the scheduler to retry the pod there later.
type PostFilterPlugin interface {
	Plugin
	PostFilter(ctx context.Context, state *CycleState, pod *PodInfo, d *Diagnosis) (nominatedNode string, s *Status)
}

// PreScorePlugin runs once per pod over the feasible nodes before scoring;
// Skip means its Score is not called for this pod.
type PreScorePlugin interface {
	Plugin
	PreScore(ctx context.Context, state *CycleState, pod *PodInfo, nodes []*NodeInfo) *Status
}

// ScorePlugin ranks a feasible node. Score is called concurrently for
// different nodes.
type ScorePlugin interface {
	Plugin
	Score(ctx context.Context, state *CycleState, pod *PodInfo, node *NodeInfo) (int64, *Status)
	// ScoreExtensions is nil when the scores are already 0..MaxNodeScore.
	ScoreExtensions() ScoreExtensions
}

// ScoreExtensions normalizes one plugin's scores over all scored nodes.
type ScoreExtensions interface {
	NormalizeScore(ctx context.Context, state *CycleState, pod *PodInfo, scores []NodeScore) *Status
}

// NodeScore is one node's score from one plugin (or the total).
type NodeScore struct {
	Name  string
	Score int64
}

// ReservePlugin is told when a pod is assumed on a node (Reserve) and when
// that assumption is undone (Unreserve, which must not fail).
type ReservePlugin interface {
	Plugin
	Reserve(ctx context.Context, state *CycleState, pod *PodInfo, nodeName string) *Status
	Unreserve(ctx context.Context, state *CycleState, pod *PodInfo, nodeName string)
}

// PreBindPlugin prepares what the pod needs on its node before it is
// bound (VolumeBinding annotates claims with the chosen node). PreBind
// runs off the scheduling goroutine, in the binding cycle; a failure
// undoes the assumption and retries the pod, as a failed Bind does.
type PreBindPlugin interface {
	Plugin
	PreBind(ctx context.Context, state *CycleState, pod *PodInfo, nodeName string) *Status
}

// BindPlugin writes the decision. Skip hands the pod to the next bind
// plugin. Bind runs off the scheduling goroutine.
type BindPlugin interface {
	Plugin
	Bind(ctx context.Context, state *CycleState, pod *PodInfo, nodeName string) *Status
}

// Handle is what plugins get from the framework at construction.
type Handle interface {
	// Snapshot is the cluster state of the current scheduling cycle. It may
	// only be read during a cycle (PreFilter to Reserve).
	Snapshot() *Snapshot
	// Conn reaches the apiserver.
	Conn() grpc.ClientConnInterface
	// Parallelizer runs work over nodes in parallel.
	Parallelizer() Parallelizer
	// Volumes reads claims, persistent volumes and storage classes from
	// the scheduler's informers (nil when the scheduler has none).
	Volumes() VolumeLister
	// Namespaces reads namespaces' labels from the scheduler's informer
	// (nil when the scheduler has none).
	Namespaces() NamespaceLister
	// PDBs lists the PodDisruptionBudgets (none when the scheduler has no
	// informer of them); shared, read only.
	PDBs() []*policyv1.PodDisruptionBudget
	// Preempter carries out preemptions (nil: none can be).
	Preempter() Preempter
	// RunFilterWithNominatedPods runs the Filter plugins on a node (which
	// may be a changed copy of the snapshot's), counting the pods
	// nominated there that pod must leave room for (preemption's dry runs).
	RunFilterWithNominatedPods(ctx context.Context, state *CycleState, pod *PodInfo, node *NodeInfo) *Status
	// RunPreFilterExtensionAddPod and RunPreFilterExtensionRemovePod run
	// the PreFilter plugins' extensions (those PreFilter did not skip) on
	// state, a clone of the cycle's, after podToAdd was added to node
	// (podToRemove removed from it). A failure is an Error.
	RunPreFilterExtensionAddPod(ctx context.Context, state *CycleState, podToSchedule, podToAdd *PodInfo, node *NodeInfo) *Status
	RunPreFilterExtensionRemovePod(ctx context.Context, state *CycleState, podToSchedule, podToRemove *PodInfo, node *NodeInfo) *Status
}

// PluginFactory builds a plugin from its args (the typed args of
// config.Profile.PluginArgs, or nil for the defaults).
type PluginFactory func(args any, h Handle) (Plugin, error)

// Registry maps plugin names to factories.
type Registry map[string]PluginFactory

// ExtensionPointsOf lists the extension points p implements, in cycle order.
func ExtensionPointsOf(p Plugin) []config.ExtensionPoint {
	var out []config.ExtensionPoint
	if _, ok := p.(PreFilterPlugin); ok {
		out = append(out, config.PreFilter)
	}
	if _, ok := p.(FilterPlugin); ok {
		out = append(out, config.Filter)
	}
	if _, ok := p.(PostFilterPlugin); ok {
		out = append(out, config.PostFilter)
	}
	if _, ok := p.(PreScorePlugin); ok {
		out = append(out, config.PreScore)
	}
	if _, ok := p.(ScorePlugin); ok {
		out = append(out, config.Score)
	}
	if _, ok := p.(ReservePlugin); ok {
		out = append(out, config.Reserve)
	}
	if _, ok := p.(PreBindPlugin); ok {
		out = append(out, config.PreBind)
	}
	if _, ok := p.(BindPlugin); ok {
		out = append(out, config.Bind)
	}
	return out
}
