package plugins

import (
	"skiff.dev/services/scheduler/config"
	"skiff.dev/services/scheduler/framework"
)

// ReasonSchedulingGated is SchedulingGates' rejection, as Kubernetes words
// the PodScheduled condition the apiserver gives a gated pod.
const ReasonSchedulingGated = "Scheduling is blocked due to non-empty scheduling gates"

// SchedulingGatesPlugin is SchedulingGates: a pod with spec.schedulingGates
// is not queued until an update removes the last gate (the gates can only
// be removed, never added, after create).
type SchedulingGatesPlugin struct{}

var _ framework.PreEnqueuePlugin = SchedulingGatesPlugin{}

// Name implements framework.Plugin.
func (SchedulingGatesPlugin) Name() string { return config.SchedulingGates }

// PreEnqueue implements framework.PreEnqueuePlugin.
func (SchedulingGatesPlugin) PreEnqueue(pod *framework.PodInfo) *framework.Status {
	if len(pod.Pod.GetSpec().GetSchedulingGates()) == 0 {
		return nil
	}
	return framework.NewStatus(framework.UnschedulableAndUnresolvable, ReasonSchedulingGated)
}
