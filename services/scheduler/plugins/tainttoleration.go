package plugins

import (
	"context"

	corev1 "skiff.dev/proto/core/v1"
	"skiff.dev/services/scheduler/config"
	"skiff.dev/services/scheduler/framework"
)

// Taint effects.
const (
	EffectNoSchedule       = "NoSchedule"
	EffectPreferNoSchedule = "PreferNoSchedule"
	EffectNoExecute        = "NoExecute"
)

// UntoleratedTaintReason is TaintToleration's rejection, naming the first
// taint the pod does not tolerate: "node(s) had untolerated taint {dedicated: gpu}".
func UntoleratedTaintReason(t *corev1.Taint) string {
	return "node(s) had untolerated taint {" + t.GetKey() + ": " + t.GetValue() + "}"
}

// TaintTolerationPlugin is TaintToleration: a node's NoSchedule and
// NoExecute taints keep off pods that do not tolerate them (Filter); its
// PreferNoSchedule taints make it score lower, the more of them the pod
// does not tolerate (Score).
type TaintTolerationPlugin struct{}

var (
	_ framework.FilterPlugin   = TaintTolerationPlugin{}
	_ framework.PreScorePlugin = TaintTolerationPlugin{}
	_ framework.ScorePlugin    = TaintTolerationPlugin{}
)

// NewTaintToleration builds TaintToleration (it takes no args).
func NewTaintToleration(any, framework.Handle) (framework.Plugin, error) {
	return TaintTolerationPlugin{}, nil
}

// Name implements framework.Plugin.
func (TaintTolerationPlugin) Name() string { return config.TaintToleration }

// Filter implements framework.FilterPlugin.
func (TaintTolerationPlugin) Filter(_ context.Context, _ *framework.CycleState, pod *framework.PodInfo, node *framework.NodeInfo) *framework.Status {
	if t := FirstUntoleratedTaint(node.Node().GetSpec().GetTaints(), pod.Pod.GetSpec().GetTolerations()); t != nil {
		return framework.NewStatus(framework.UnschedulableAndUnresolvable, UntoleratedTaintReason(t))
	}
	return nil
}

// FirstUntoleratedTaint returns the first NoSchedule or NoExecute taint
// that no toleration tolerates, or nil.
func FirstUntoleratedTaint(taints []*corev1.Taint, tolerations []*corev1.Toleration) *corev1.Taint {
	for _, t := range taints {
		if t.GetEffect() != EffectNoSchedule && t.GetEffect() != EffectNoExecute {
			continue
		}
		if !TolerationsTolerate(tolerations, t) {
			return t
		}
	}
	return nil
}

// TolerationsTolerate reports whether any of ts tolerates taint.
func TolerationsTolerate(ts []*corev1.Toleration, taint *corev1.Taint) bool {
	for _, t := range ts {
		if Tolerates(t, taint) {
			return true
		}
	}
	return false
}

// Tolerates reports whether toleration t tolerates taint, as Kubernetes
// decides: an empty effect matches every effect, an empty key (with
// Exists) every key; Exists ignores the value, Equal (or "") compares it.
func Tolerates(t *corev1.Toleration, taint *corev1.Taint) bool {
	if e := t.GetEffect(); e != "" && e != taint.GetEffect() {
		return false
	}
	if k := t.GetKey(); k != "" && k != taint.GetKey() {
		return false
	}
	switch t.GetOperator() {
	case "Exists":
		return true
	case "", "Equal":
		return t.GetValue() == taint.GetValue()
	default:
		return false
	}
}

const taintStateKey framework.StateKey = config.TaintToleration

// preferTolerations are the pod's tolerations that can tolerate a
// PreferNoSchedule taint.
type preferTolerations []*corev1.Toleration

// PreScore implements framework.PreScorePlugin: it keeps the tolerations
// that matter for PreferNoSchedule taints, and skips scoring when no
// feasible node has such a taint.
func (TaintTolerationPlugin) PreScore(_ context.Context, state *framework.CycleState, pod *framework.PodInfo, nodes []*framework.NodeInfo) *framework.Status {
	found := false
	for _, n := range nodes {
		for _, t := range n.Node().GetSpec().GetTaints() {
			if t.GetEffect() == EffectPreferNoSchedule {
				found = true
				break
			}
		}
		if found {
			break
		}
	}
	if !found {
		return framework.NewStatus(framework.Skip)
	}
	var ts preferTolerations
	for _, t := range pod.Pod.GetSpec().GetTolerations() {
		if e := t.GetEffect(); e == "" || e == EffectPreferNoSchedule {
			ts = append(ts, t)
		}
	}
	state.Write(taintStateKey, ts)
	return nil
}

// Score implements framework.ScorePlugin: the number of PreferNoSchedule
// taints not tolerated (lower is better; NormalizeScore reverses it).
func (TaintTolerationPlugin) Score(_ context.Context, state *framework.CycleState, _ *framework.PodInfo, node *framework.NodeInfo) (int64, *framework.Status) {
	ts, _ := framework.ReadAs[preferTolerations](state, taintStateKey)
	return int64(CountIntolerablePreferNoSchedule(node.Node().GetSpec().GetTaints(), ts)), nil
}

// CountIntolerablePreferNoSchedule counts the PreferNoSchedule taints that
// none of ts tolerates.
func CountIntolerablePreferNoSchedule(taints []*corev1.Taint, ts []*corev1.Toleration) int {
	n := 0
	for _, t := range taints {
		if t.GetEffect() == EffectPreferNoSchedule && !TolerationsTolerate(ts, t) {
			n++
		}
	}
	return n
}

// ScoreExtensions implements framework.ScorePlugin.
func (p TaintTolerationPlugin) ScoreExtensions() framework.ScoreExtensions { return p }

// NormalizeScore implements framework.ScoreExtensions: fewer intolerable
// taints score higher.
func (TaintTolerationPlugin) NormalizeScore(_ context.Context, _ *framework.CycleState, _ *framework.PodInfo, scores []framework.NodeScore) *framework.Status {
	framework.DefaultNormalizeScore(framework.MaxNodeScore, true, scores)
	return nil
}
