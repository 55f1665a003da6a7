package plugins

import (
	"context"

	corev1 "skiff.dev/proto/core/v1"
	"skiff.dev/services/scheduler/config"
	"skiff.dev/services/scheduler/framework"
)

// ReasonNodeUnschedulable is NodeUnschedulable's rejection.
const ReasonNodeUnschedulable = "node(s) were unschedulable"

// TaintNodeUnschedulable is the taint a pod must tolerate to go to a node
// marked spec.unschedulable (as Kubernetes' cordon adds it).
var TaintNodeUnschedulable = &corev1.Taint{Key: "node.kubernetes.io/unschedulable", Effect: "NoSchedule"}

// NodeUnschedulablePlugin is NodeUnschedulable: a cordoned node
// (spec.unschedulable) takes only pods that tolerate
// node.kubernetes.io/unschedulable:NoSchedule.
type NodeUnschedulablePlugin struct{}

var _ framework.FilterPlugin = NodeUnschedulablePlugin{}

// NewNodeUnschedulable builds NodeUnschedulable (it takes no args).
func NewNodeUnschedulable(any, framework.Handle) (framework.Plugin, error) {
	return NodeUnschedulablePlugin{}, nil
}

// Name implements framework.Plugin.
func (NodeUnschedulablePlugin) Name() string { return config.NodeUnschedulable }

// Filter implements framework.FilterPlugin.
func (NodeUnschedulablePlugin) Filter(_ context.Context, _ *framework.CycleState, pod *framework.PodInfo, node *framework.NodeInfo) *framework.Status {
	if !node.Node().GetSpec().GetUnschedulable() {
		return nil
	}
	if TolerationsTolerate(pod.Pod.GetSpec().GetTolerations(), TaintNodeUnschedulable) {
		return nil
	}
	return framework.NewStatus(framework.UnschedulableAndUnresolvable, ReasonNodeUnschedulable)
}
