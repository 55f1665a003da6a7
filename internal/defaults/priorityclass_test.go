package defaults_test

import (
	"testing"

	"skiff.dev/internal/defaults"
	schedulingv1 "skiff.dev/proto/scheduling/v1"
)

func TestPriorityClass(t *testing.T) {
	pc := &schedulingv1.PriorityClass{}
	defaults.PriorityClass(pc)
	if pc.GetPreemptionPolicy() != "PreemptLowerPriority" {
		t.Errorf("preemptionPolicy defaulted to %q, want PreemptLowerPriority", pc.GetPreemptionPolicy())
	}
	never := "Never"
	pc = &schedulingv1.PriorityClass{PreemptionPolicy: &never}
	defaults.PriorityClass(pc)
	if pc.GetPreemptionPolicy() != "Never" {
		t.Errorf("a set preemptionPolicy changed: %q", pc.GetPreemptionPolicy())
	}
	defaults.PriorityClass(nil)

	got := map[string]int32{}
	for _, c := range defaults.SystemPriorityClasses() {
		got[c.GetMetadata().GetName()] = c.GetValue()
		if c.GetGlobalDefault() {
			t.Errorf("%s is a global default", c.GetMetadata().GetName())
		}
	}
	if len(got) != 2 || got["system-cluster-critical"] != 2000000000 || got["system-node-critical"] != 2000001000 {
		t.Errorf("system classes: %v", got)
	}
}
