package nodelifecycle

import (
	"slices"
	"testing"
	"time"
)

const memNS = TaintNodeMemoryPressure + ":NoSchedule"

func TestConditionTaints(t *testing.T) {
	for _, tc := range []struct {
		name    string
		conds   []string
		taints  []string
		want    []string
		changed bool
	}{
		{"no pressure, no taint", []string{"MemoryPressure=False", "Ready=True"}, nil, []string{}, false},
		{"memory pressure brings its taint", []string{"MemoryPressure=True", "Ready=True"}, []string{"dedicated:NoSchedule"},
			[]string{"dedicated:NoSchedule", memNS}, true},
		{"kept while it lasts", []string{"MemoryPressure=True"}, []string{memNS}, []string{memNS}, false},
		{"every pressure condition", []string{"PIDPressure=True", "DiskPressure=True", "MemoryPressure=True"}, nil,
			[]string{memNS, TaintNodeDiskPressure + ":NoSchedule", TaintNodePIDPressure + ":NoSchedule"}, true},
		{"gone with the condition", []string{"MemoryPressure=False"}, []string{memNS, "dedicated:NoSchedule"}, []string{"dedicated:NoSchedule"}, true},
		{"Unknown is not pressure", []string{"MemoryPressure=Unknown"}, []string{memNS}, []string{}, true},
		{"a NoExecute taint of that key is someone else's", []string{"MemoryPressure=False"},
			[]string{TaintNodeMemoryPressure + ":NoExecute"}, []string{TaintNodeMemoryPressure + ":NoExecute"}, false},
		{"a duplicate goes", []string{"MemoryPressure=True"}, []string{memNS, memNS}, []string{memNS}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := node(tc.conds, tc.taints...)
			got, changed := conditionTaints(n.GetSpec().GetTaints(), n.GetStatus().GetConditions())
			if !slices.Equal(showTaints(got), tc.want) || changed != tc.changed {
				t.Errorf("taints %v changed %v, want %v changed %v", showTaints(got), changed, tc.want, tc.changed)
			}
		})
	}
}

// Assess adds the pressure taints in every state, and an unreachable
// node's pressure (made Unknown) loses its taint.
func TestAssessPressureTaints(t *testing.T) {
	const grace = 40 * time.Second
	a := Assess(node([]string{"MemoryPressure=True", "Ready=True"}), at(-10), at(0), grace)
	if a.State != StateReady || !a.TaintsChanged || !slices.Equal(showTaints(a.Taints), []string{memNS}) {
		t.Errorf("ready under pressure: %v %v changed %v", a.State, showTaints(a.Taints), a.TaintsChanged)
	}
	a = Assess(node([]string{"MemoryPressure=True", "Ready=True"}, memNS), at(-60), at(0), grace)
	if a.State != StateUnreachable || slices.Contains(showTaints(a.Taints), memNS) {
		t.Errorf("unreachable: %v %v, want the pressure taint gone with the condition Unknown", a.State, showTaints(a.Taints))
	}
}
