package plugins

import (
	"skiff.dev/services/scheduler/config"
	"skiff.dev/services/scheduler/framework"
)

// NewRegistry returns the built-in plugins by name.
func NewRegistry() framework.Registry {
	return framework.Registry{
		config.NodeResourcesFit:                NewFit,
		config.NodeResourcesBalancedAllocation: NewBalancedAllocation,
		config.NodeName:                        NewNodeName,
		config.NodeUnschedulable:               NewNodeUnschedulable,
		config.NodeAffinity:                    NewNodeAffinity,
		config.TaintToleration:                 NewTaintToleration,
		config.PodTopologySpread:               NewPodTopologySpread,
		config.InterPodAffinity:                NewInterPodAffinity,
		config.VolumeBinding:                   NewVolumeBinding,
		config.DefaultBinder:                   NewDefaultBinder,
		config.DefaultPreemption:               NewDefaultPreemption,
	}
}

// Known describes the plugins of r for the policy loader: the extension
// points each implements. Each plugin is built once with its default args
// and no handle to find out.
func Known(r framework.Registry) (config.KnownPlugins, error) {
	out := config.KnownPlugins{}
	for name, factory := range r {
		p, err := factory(nil, nil)
		if err != nil {
			return nil, err
		}
		out[name] = framework.ExtensionPointsOf(p)
	}
	return out, nil
}
