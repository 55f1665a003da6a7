package plugins

import (
	"context"

	"skiff.dev/services/scheduler/config"
	"skiff.dev/services/scheduler/framework"
)

// ReasonNodeName is NodeName's rejection.
const ReasonNodeName = "node(s) didn't match the requested node name"

// NodeNamePlugin is NodeName: a pod whose spec.nodeName is set fits only
// that node. (The scheduler only sees pods without a node, so in practice
// it narrows nothing; PreFilter skips it then, so it costs nothing per
// node.)
type NodeNamePlugin struct{}

var (
	_ framework.PreFilterPlugin = NodeNamePlugin{}
	_ framework.FilterPlugin    = NodeNamePlugin{}
)

// NewNodeName builds NodeName (it takes no args).
func NewNodeName(any, framework.Handle) (framework.Plugin, error) { return NodeNamePlugin{}, nil }

// Name implements framework.Plugin.
func (NodeNamePlugin) Name() string { return config.NodeName }

// PreFilterExtensions implements framework.PreFilterPlugin: none (its
// PreFilter does not look at the other pods).
func (NodeNamePlugin) PreFilterExtensions() framework.PreFilterExtensions { return nil }

// PreFilter implements framework.PreFilterPlugin: Skip without a node name,
// else only that node.
func (NodeNamePlugin) PreFilter(_ context.Context, _ *framework.CycleState, pod *framework.PodInfo) (*framework.PreFilterResult, *framework.Status) {
	name := pod.Pod.GetSpec().GetNodeName()
	if name == "" {
		return nil, framework.NewStatus(framework.Skip)
	}
	return &framework.PreFilterResult{NodeNames: map[string]struct{}{name: {}}}, nil
}

// Filter implements framework.FilterPlugin.
func (NodeNamePlugin) Filter(_ context.Context, _ *framework.CycleState, pod *framework.PodInfo, node *framework.NodeInfo) *framework.Status {
	if FitsNodeName(pod, node) {
		return nil
	}
	return framework.NewStatus(framework.UnschedulableAndUnresolvable, ReasonNodeName)
}

// FitsNodeName reports whether pod names no node or node's name.
func FitsNodeName(pod *framework.PodInfo, node *framework.NodeInfo) bool {
	name := pod.Pod.GetSpec().GetNodeName()
	return name == "" || name == node.Name()
}
