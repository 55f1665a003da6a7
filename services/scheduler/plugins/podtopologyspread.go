package plugins

import (
	"context"
	"fmt"
	"math"
	"sync/atomic"

	"skiff.dev/internal/labels"
	corev1 "skiff.dev/proto/core/v1"
	"skiff.dev/services/scheduler/config"
	"skiff.dev/services/scheduler/framework"
)

// Reasons of PodTopologySpread, as Kubernetes words them.
const (
	ReasonTopologyLabelMissing = "node(s) didn't match pod topology spread constraints (missing required label)"
	ReasonTopologySkew         = "node(s) didn't match pod topology spread constraints"
)

// whenUnsatisfiable values.
const (
	DoNotSchedule  = "DoNotSchedule"
	ScheduleAnyway = "ScheduleAnyway"
)

// PodTopologySpreadPlugin is PodTopologySpread. For each of a pod's
// topologySpreadConstraints, the nodes are grouped into domains by the
// value of the constraint's topologyKey label, and the pods matching the
// constraint's labelSelector (in the pod's namespace) are counted per
// domain, over the nodes the pod's node selector and required affinity
// allow. A DoNotSchedule constraint rejects a node where placing the pod
// would make its domain's count exceed the smallest domain's by more than
// maxSkew (Filter); a ScheduleAnyway constraint favours nodes in domains
// with fewer matching pods (Score).
type PodTopologySpreadPlugin struct {
	h framework.Handle
}

var (
	_ framework.PreFilterPlugin = (*PodTopologySpreadPlugin)(nil)
	_ framework.FilterPlugin    = (*PodTopologySpreadPlugin)(nil)
	_ framework.PreScorePlugin  = (*PodTopologySpreadPlugin)(nil)
	_ framework.ScorePlugin     = (*PodTopologySpreadPlugin)(nil)
)

// NewPodTopologySpread builds PodTopologySpread (it takes no args).
func NewPodTopologySpread(_ any, h framework.Handle) (framework.Plugin, error) {
	return &PodTopologySpreadPlugin{h: h}, nil
}

// Name implements framework.Plugin.
func (p *PodTopologySpreadPlugin) Name() string { return config.PodTopologySpread }

const (
	spreadFilterKey framework.StateKey = config.PodTopologySpread + "/filter"
	spreadScoreKey  framework.StateKey = config.PodTopologySpread + "/score"
)

// Constraint is a topology spread constraint ready to evaluate.
type Constraint struct {
	MaxSkew     int32
	TopologyKey string
	Selector    labels.Selector
	MinDomains  int32
	// SelfMatch is 1 when the pod being placed matches the selector.
	SelfMatch int
}

// Constraints compiles pod's constraints with the given whenUnsatisfiable.
func Constraints(pod *corev1.Pod, when string) ([]Constraint, error) {
	var out []Constraint
	for i, c := range pod.GetSpec().GetTopologySpreadConstraints() {
		w := c.GetWhenUnsatisfiable()
		if w == "" {
			w = DoNotSchedule
		}
		if w != when {
			continue
		}
		sel, err := labels.FromProto(c.GetLabelSelector())
		if err != nil {
			return nil, fmt.Errorf("topologySpreadConstraints[%d]: %w", i, err)
		}
		self := 0
		if sel.Matches(pod.GetMetadata().GetLabels()) {
			self = 1
		}
		out = append(out, Constraint{
			MaxSkew: c.GetMaxSkew(), TopologyKey: c.GetTopologyKey(), Selector: sel,
			MinDomains: c.GetMinDomains(), SelfMatch: self,
		})
	}
	return out, nil
}

// SpreadCounts is, per constraint, the number of matching pods per domain
// (topology value).
type SpreadCounts []map[string]int

// CountSpread counts, for each constraint, the pods in namespace matching
// its selector per value of its topology key, over the nodes that pass
// affinity and carry every constraint's key. Terminating pods do not count.
func CountSpread(nodes []*framework.NodeInfo, cs []Constraint, namespace string, affinity RequiredNodeAffinity) SpreadCounts {
	counts := make(SpreadCounts, len(cs))
	for i := range counts {
		counts[i] = map[string]int{}
	}
	for _, ni := range nodes {
		node := ni.Node()
		if !affinity.Match(node) {
			continue
		}
		nl := node.GetMetadata().GetLabels()
		if !hasAllKeys(nl, cs) {
			continue
		}
		for i, c := range cs {
			counts[i][nl[c.TopologyKey]] += countMatching(ni.Pods, c.Selector, namespace)
		}
	}
	return counts
}

func hasAllKeys(nl map[string]string, cs []Constraint) bool {
	for _, c := range cs {
		if _, ok := nl[c.TopologyKey]; !ok {
			return false
		}
	}
	return true
}

func countMatching(pods []*framework.PodInfo, sel labels.Selector, namespace string) int {
	n := 0
	for _, p := range pods {
		m := p.Pod.GetMetadata()
		if m.GetNamespace() != namespace || m.GetDeletionTimestamp() != nil {
			continue
		}
		if sel.Matches(m.GetLabels()) {
			n++
		}
	}
	return n
}

// spreadFilterState is what PreFilter computes for Filter; AddPod and
// RemovePod (podtopologyspread_extensions.go) keep its counts true to a
// node with a pod more or less.
type spreadFilterState struct {
	constraints []Constraint
	// namespace and affinity: the pods counted are the namespace's, on
	// the nodes affinity (the pod's required node affinity) allows.
	namespace string
	affinity  RequiredNodeAffinity
	*spreadTally
}

// spreadTally is the counts of a spreadFilterState, which its clones
// share until one of them changes them (spreadFilterState.mutable).
type spreadTally struct {
	counts SpreadCounts
	// minMatch is, per constraint, the smallest domain's count (0 when
	// there are fewer domains than minDomains).
	minMatch []int
	// shared is set once a clone of the state shares the tally.
	shared atomic.Bool
}

// PreFilter implements framework.PreFilterPlugin: Skip without
// DoNotSchedule constraints; else count the matching pods per domain.
func (p *PodTopologySpreadPlugin) PreFilter(_ context.Context, state *framework.CycleState, pod *framework.PodInfo) (*framework.PreFilterResult, *framework.Status) {
	cs, err := Constraints(pod.Pod, DoNotSchedule)
	if err != nil {
		return nil, framework.NewStatus(framework.UnschedulableAndUnresolvable, err.Error())
	}
	if len(cs) == 0 {
		return nil, framework.NewStatus(framework.Skip)
	}
	ns, affinity := pod.Pod.GetMetadata().GetNamespace(), GetRequiredNodeAffinity(pod.Pod)
	counts := CountSpread(p.h.Snapshot().List(), cs, ns, affinity)
	state.Write(spreadFilterKey, &spreadFilterState{
		constraints: cs, namespace: ns, affinity: affinity,
		spreadTally: &spreadTally{counts: counts, minMatch: MinMatch(cs, counts)},
	})
	return nil, nil
}

// MinMatch is, per constraint, the count of its least loaded domain, or 0
// when there are fewer domains than the constraint's minDomains.
func MinMatch(cs []Constraint, counts SpreadCounts) []int {
	out := make([]int, len(cs))
	for i, c := range cs {
		out[i] = minMatchOf(c, counts[i])
	}
	return out
}

// minMatchOf is MinMatch of one constraint.
func minMatchOf(c Constraint, counts map[string]int) int {
	if c.MinDomains > 0 && len(counts) < int(c.MinDomains) {
		return 0
	}
	m, first := 0, true
	for _, n := range counts {
		if first || n < m {
			m, first = n, false
		}
	}
	return m
}

// Filter implements framework.FilterPlugin.
func (p *PodTopologySpreadPlugin) Filter(_ context.Context, state *framework.CycleState, _ *framework.PodInfo, node *framework.NodeInfo) *framework.Status {
	s, ok := framework.ReadAs[*spreadFilterState](state, spreadFilterKey)
	if !ok {
		return framework.NewStatus(framework.Error, "PodTopologySpread: Filter without PreFilter")
	}
	return spreadFits(s, node.Node().GetMetadata().GetLabels())
}

func spreadFits(s *spreadFilterState, nl map[string]string) *framework.Status {
	for i, c := range s.constraints {
		v, ok := nl[c.TopologyKey]
		if !ok {
			return framework.NewStatus(framework.UnschedulableAndUnresolvable, ReasonTopologyLabelMissing)
		}
		skew := s.counts[i][v] + c.SelfMatch - s.minMatch[i]
		if skew > int(c.MaxSkew) {
			return framework.NewStatus(framework.Unschedulable, ReasonTopologySkew)
		}
	}
	return nil
}

// spreadScoreState is what PreScore computes for Score.
type spreadScoreState struct {
	constraints []Constraint
	counts      SpreadCounts
	weights     []float64
}

// PreScore implements framework.PreScorePlugin: Skip without
// ScheduleAnyway constraints.
func (p *PodTopologySpreadPlugin) PreScore(_ context.Context, state *framework.CycleState, pod *framework.PodInfo, _ []*framework.NodeInfo) *framework.Status {
	cs, err := Constraints(pod.Pod, ScheduleAnyway)
	if err != nil {
		return framework.AsStatus(err)
	}
	if len(cs) == 0 {
		return framework.NewStatus(framework.Skip)
	}
	counts := CountSpread(p.h.Snapshot().List(), cs, pod.Pod.GetMetadata().GetNamespace(), GetRequiredNodeAffinity(pod.Pod))
	weights := make([]float64, len(cs))
	for i := range cs {
		// More domains: each pod moves the balance less, so weigh more.
		weights[i] = math.Log(float64(len(counts[i]) + 2))
	}
	state.Write(spreadScoreKey, &spreadScoreState{constraints: cs, counts: counts, weights: weights})
	return nil
}

// ignoredScore marks a node without the constraints' keys; it normalizes to 0.
const ignoredScore = -1

// Score implements framework.ScorePlugin: the weighted matching pods in
// the node's domains (fewer is better; NormalizeScore reverses it).
func (p *PodTopologySpreadPlugin) Score(_ context.Context, state *framework.CycleState, _ *framework.PodInfo, node *framework.NodeInfo) (int64, *framework.Status) {
	s, ok := framework.ReadAs[*spreadScoreState](state, spreadScoreKey)
	if !ok {
		return 0, framework.NewStatus(framework.Error, "PodTopologySpread: Score without PreScore")
	}
	nl := node.Node().GetMetadata().GetLabels()
	if !hasAllKeys(nl, s.constraints) {
		return ignoredScore, nil
	}
	var score float64
	for i, c := range s.constraints {
		score += float64(s.counts[i][nl[c.TopologyKey]])*s.weights[i] + float64(c.MaxSkew-1)
	}
	return int64(math.Round(score)), nil
}

// ScoreExtensions implements framework.ScorePlugin.
func (p *PodTopologySpreadPlugin) ScoreExtensions() framework.ScoreExtensions { return p }

// NormalizeScore implements framework.ScoreExtensions: the node in the
// emptiest domains gets 100, nodes without the keys 0.
func (p *PodTopologySpreadPlugin) NormalizeScore(_ context.Context, _ *framework.CycleState, _ *framework.PodInfo, scores []framework.NodeScore) *framework.Status {
	NormalizeSpreadScores(scores)
	return nil
}

// NormalizeSpreadScores maps raw spread scores (lower is better,
// ignoredScore for nodes without the keys) to 0..100.
func NormalizeSpreadScores(scores []framework.NodeScore) {
	var lo, hi int64 = math.MaxInt64, 0
	for _, s := range scores {
		if s.Score == ignoredScore {
			continue
		}
		lo, hi = min(lo, s.Score), max(hi, s.Score)
	}
	for i := range scores {
		switch s := scores[i].Score; {
		case s == ignoredScore:
			scores[i].Score = 0
		case hi == 0:
			scores[i].Score = framework.MaxNodeScore
		default:
			scores[i].Score = framework.MaxNodeScore * (hi + lo - s) / hi
		}
	}
}
