package nodelifecycle

import (
	corev1 "skiff.dev/proto/core/v1"
)

// The NoSchedule taints that follow a node's pressure conditions, as
// Kubernetes' TaintNodesByCondition (nodeConditionToTaintKeyStatusMap): a
// node whose agent reports MemoryPressure, DiskPressure or PIDPressure True
// carries node.kubernetes.io/<memory|disk|pid>-pressure:NoSchedule, and
// loses it when the condition is False or Unknown. The scheduler then
// keeps pods that do not tolerate it away (the agent itself refuses
// BestEffort pods under memory pressure).
const (
	TaintNodeMemoryPressure = "node.kubernetes.io/memory-pressure"
	TaintNodeDiskPressure   = "node.kubernetes.io/disk-pressure"
	TaintNodePIDPressure    = "node.kubernetes.io/pid-pressure"
)

// conditionTaintKeys maps a pressure condition to its taint, in order.
var conditionTaintKeys = [...][2]string{
	{"MemoryPressure", TaintNodeMemoryPressure},
	{"DiskPressure", TaintNodeDiskPressure},
	{"PIDPressure", TaintNodePIDPressure},
}

// conditionTaints returns cur with the pressure taints conds call for
// (NoSchedule, one per condition True) and without the others, and
// whether that differs from cur. Other taints are kept as they are.
func conditionTaints(cur []*corev1.Taint, conds []*corev1.NodeCondition) ([]*corev1.Taint, bool) {
	want := map[string]bool{}
	for _, c := range conds {
		for _, ct := range conditionTaintKeys {
			if c.GetType() == ct[0] && c.GetStatus() == "True" {
				want[ct[1]] = true
			}
		}
	}
	out := make([]*corev1.Taint, 0, len(cur)+len(want))
	changed := false
	have := map[string]bool{}
	for _, t := range cur {
		if !isConditionTaint(t) {
			out = append(out, t)
			continue
		}
		if !want[t.GetKey()] || have[t.GetKey()] {
			changed = true // the condition cleared, or a duplicate
			continue
		}
		have[t.GetKey()] = true
		out = append(out, t)
	}
	for _, ct := range conditionTaintKeys {
		if want[ct[1]] && !have[ct[1]] {
			out = append(out, &corev1.Taint{Key: ct[1], Effect: EffectNoSchedule})
			changed = true
		}
	}
	return out, changed
}

// isConditionTaint reports whether t is a pressure taint this controller
// owns.
func isConditionTaint(t *corev1.Taint) bool {
	if t.GetEffect() != EffectNoSchedule {
		return false
	}
	for _, ct := range conditionTaintKeys {
		if t.GetKey() == ct[1] {
			return true
		}
	}
	return false
}
