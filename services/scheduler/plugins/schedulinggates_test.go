package plugins

import (
	"testing"

	corev1 "skiff.dev/proto/core/v1"
	"skiff.dev/services/scheduler/framework"
)

func TestSchedulingGatesPreEnqueue(t *testing.T) {
	gated := pod("gated", "", "")
	gated.Spec.SchedulingGates = []*corev1.PodSchedulingGate{{Name: "example.com/wait"}}
	if got := statusString(SchedulingGatesPlugin{}.PreEnqueue(framework.NewPodInfo(gated))); got != "UnschedulableAndUnresolvable: "+ReasonSchedulingGated {
		t.Errorf("gated pod: %q", got)
	}
	if st := (SchedulingGatesPlugin{}).PreEnqueue(framework.NewPodInfo(pod("free", "", ""))); !st.IsSuccess() {
		t.Errorf("pod without gates: %v", st)
	}
}
