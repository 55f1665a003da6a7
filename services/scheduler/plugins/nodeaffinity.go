package plugins

import (
	"context"

	"skiff.dev/internal/nodeaffinity"
	corev1 "skiff.dev/proto/core/v1"
	"skiff.dev/services/scheduler/config"
	"skiff.dev/services/scheduler/framework"
)

// ReasonNodeAffinity is NodeAffinity's rejection.
const ReasonNodeAffinity = "node(s) didn't match Pod's node affinity/selector"

// NodeAffinityPlugin is NodeAffinity: a node fits when its labels match the
// pod's spec.nodeSelector (every pair) and its required node affinity (any
// term, each term all its expressions and fields); among feasible nodes,
// the sum of the weights of the preferred terms a node matches ranks it.
type NodeAffinityPlugin struct{}

var (
	_ framework.PreFilterPlugin = NodeAffinityPlugin{}
	_ framework.FilterPlugin    = NodeAffinityPlugin{}
	_ framework.PreScorePlugin  = NodeAffinityPlugin{}
	_ framework.ScorePlugin     = NodeAffinityPlugin{}
)

// NewNodeAffinity builds NodeAffinity (it takes no args).
func NewNodeAffinity(any, framework.Handle) (framework.Plugin, error) {
	return NodeAffinityPlugin{}, nil
}

// Name implements framework.Plugin.
func (NodeAffinityPlugin) Name() string { return config.NodeAffinity }

const (
	affinityFilterKey framework.StateKey = config.NodeAffinity + "/filter"
	affinityScoreKey  framework.StateKey = config.NodeAffinity + "/score"
)

// PreFilterExtensions implements framework.PreFilterPlugin: none (its
// PreFilter does not look at the other pods).
func (NodeAffinityPlugin) PreFilterExtensions() framework.PreFilterExtensions { return nil }

// PreFilter implements framework.PreFilterPlugin: Skip when the pod has
// neither a node selector nor required affinity; narrow the nodes when
// every required term names nodes by metadata.name.
func (NodeAffinityPlugin) PreFilter(_ context.Context, state *framework.CycleState, pod *framework.PodInfo) (*framework.PreFilterResult, *framework.Status) {
	r := GetRequiredNodeAffinity(pod.Pod)
	if r.Empty() {
		return nil, framework.NewStatus(framework.Skip)
	}
	state.Write(affinityFilterKey, r)
	return r.nodeNames(), nil
}

// Filter implements framework.FilterPlugin.
func (NodeAffinityPlugin) Filter(_ context.Context, state *framework.CycleState, pod *framework.PodInfo, node *framework.NodeInfo) *framework.Status {
	r, ok := framework.ReadAs[RequiredNodeAffinity](state, affinityFilterKey)
	if !ok {
		r = GetRequiredNodeAffinity(pod.Pod)
	}
	if r.Match(node.Node()) {
		return nil
	}
	return framework.NewStatus(framework.UnschedulableAndUnresolvable, ReasonNodeAffinity)
}

// PreScore implements framework.PreScorePlugin: Skip without preferred terms.
func (NodeAffinityPlugin) PreScore(_ context.Context, state *framework.CycleState, pod *framework.PodInfo, _ []*framework.NodeInfo) *framework.Status {
	prefs := pod.Pod.GetSpec().GetAffinity().GetNodeAffinity().GetPreferredDuringSchedulingIgnoredDuringExecution()
	if len(prefs) == 0 {
		return framework.NewStatus(framework.Skip)
	}
	state.Write(affinityScoreKey, prefs)
	return nil
}

// Score implements framework.ScorePlugin: the sum of the weights of the
// preferred terms the node matches.
func (NodeAffinityPlugin) Score(_ context.Context, state *framework.CycleState, pod *framework.PodInfo, node *framework.NodeInfo) (int64, *framework.Status) {
	prefs, ok := framework.ReadAs[[]*corev1.PreferredSchedulingTerm](state, affinityScoreKey)
	if !ok {
		prefs = pod.Pod.GetSpec().GetAffinity().GetNodeAffinity().GetPreferredDuringSchedulingIgnoredDuringExecution()
	}
	return PreferredAffinityScore(prefs, node.Node()), nil
}

// PreferredAffinityScore sums the weights of the terms node matches.
func PreferredAffinityScore(prefs []*corev1.PreferredSchedulingTerm, node *corev1.Node) int64 {
	var sum int64
	for _, p := range prefs {
		if p.GetWeight() != 0 && nodeaffinity.MatchTerm(node, p.GetPreference()) {
			sum += int64(p.GetWeight())
		}
	}
	return sum
}

// ScoreExtensions implements framework.ScorePlugin.
func (p NodeAffinityPlugin) ScoreExtensions() framework.ScoreExtensions { return p }

// NormalizeScore implements framework.ScoreExtensions: the best node gets 100.
func (NodeAffinityPlugin) NormalizeScore(_ context.Context, _ *framework.CycleState, _ *framework.PodInfo, scores []framework.NodeScore) *framework.Status {
	framework.DefaultNormalizeScore(framework.MaxNodeScore, false, scores)
	return nil
}

// RequiredNodeAffinity is what a pod requires of its node's labels: its
// nodeSelector and its required node affinity.
type RequiredNodeAffinity struct {
	selector map[string]string
	terms    []*corev1.NodeSelectorTerm
	hasTerms bool
}

// GetRequiredNodeAffinity reads pod's node selector and required affinity.
func GetRequiredNodeAffinity(pod *corev1.Pod) RequiredNodeAffinity {
	spec := pod.GetSpec()
	r := RequiredNodeAffinity{selector: spec.GetNodeSelector()}
	if req := spec.GetAffinity().GetNodeAffinity().GetRequiredDuringSchedulingIgnoredDuringExecution(); req != nil {
		r.terms, r.hasTerms = req.GetNodeSelectorTerms(), true
	}
	return r
}

// Empty reports a pod that may go to any node as far as labels go.
func (r RequiredNodeAffinity) Empty() bool { return len(r.selector) == 0 && !r.hasTerms }

// Match reports whether node satisfies r.
func (r RequiredNodeAffinity) Match(node *corev1.Node) bool {
	return nodeaffinity.MatchLabels(node, r.selector) && (!r.hasTerms || nodeaffinity.MatchTerms(node, r.terms))
}

// nodeNames is the set of nodes r's terms name with metadata.name In,
// when every term names some; nil otherwise.
func (r RequiredNodeAffinity) nodeNames() *framework.PreFilterResult {
	if !r.hasTerms || len(r.terms) == 0 {
		return nil
	}
	names := map[string]struct{}{}
	for _, t := range r.terms {
		named := false
		for _, f := range t.GetMatchFields() {
			if f.GetKey() == "metadata.name" && f.GetOperator() == "In" {
				for _, v := range f.GetValues() {
					names[v] = struct{}{}
				}
				named = true
				break
			}
		}
		if !named {
			return nil
		}
	}
	return &framework.PreFilterResult{NodeNames: names}
}
