package config

import "time"

// ExtensionPoint names a point of the scheduling cycle where plugins run,
// spelled as in the policy file.
type ExtensionPoint string

// The extension points Skiff runs, in cycle order. (NormalizeScore is part
// of each Score plugin; it is not configured separately.)
const (
	PreFilter  ExtensionPoint = "preFilter"
	Filter     ExtensionPoint = "filter"
	PostFilter ExtensionPoint = "postFilter"
	PreScore   ExtensionPoint = "preScore"
	Score      ExtensionPoint = "score"
	Reserve    ExtensionPoint = "reserve"
	PreBind    ExtensionPoint = "preBind"
	Bind       ExtensionPoint = "bind"
)

// ExtensionPoints lists them in cycle order.
var ExtensionPoints = []ExtensionPoint{PreFilter, Filter, PostFilter, PreScore, Score, Reserve, PreBind, Bind}

// Configuration is a loaded, defaulted and validated policy.
type Configuration struct {
	// Parallelism bounds the goroutines of each parallel step (filtering,
	// scoring).
	Parallelism int
	// PercentageOfNodesToScore: once this percentage of the nodes (at least
	// 100 nodes) is found feasible, the search stops and only those are
	// scored. 0 is adaptive: 50% minus 1% per 125 nodes, at least 5%.
	PercentageOfNodesToScore int32
	// PodInitialBackoff and PodMaxBackoff bound the per-pod exponential
	// backoff after a failed attempt.
	PodInitialBackoff time.Duration
	PodMaxBackoff     time.Duration
	// PodMaxInUnschedulablePodsDuration: an unschedulable pod is retried
	// after this long even if nothing that could help happened.
	PodMaxInUnschedulablePodsDuration time.Duration
	LeaderElection                    LeaderElection
	// Profiles, one per schedulerName.
	Profiles []Profile
}

// LeaderElection is the policy's leaderElection section. Zero fields are
// left to the program's flags.
type LeaderElection struct {
	LeaderElect       *bool
	LeaseDuration     time.Duration
	RenewDeadline     time.Duration
	RetryPeriod       time.Duration
	ResourceNamespace string
	ResourceName      string
}

// Profile is the plugins that schedule the pods of one schedulerName.
type Profile struct {
	SchedulerName string
	// PercentageOfNodesToScore overrides the configuration's when set.
	PercentageOfNodesToScore *int32
	// Plugins per extension point, in the order they run, after merging the
	// defaults with what the file enabled and disabled.
	Plugins map[ExtensionPoint][]PluginRef
	// PluginArgs holds typed args (e.g. *NodeResourcesFitArgs) by plugin
	// name, defaulted; plugins without args are absent.
	PluginArgs map[string]any
}

// PluginRef is a plugin enabled at an extension point; Weight only matters
// for Score (at least 1 there).
type PluginRef struct {
	Name   string
	Weight int32
}

// Enabled reports whether the named plugin runs at point.
func (p *Profile) Enabled(point ExtensionPoint, name string) bool {
	for _, r := range p.Plugins[point] {
		if r.Name == name {
			return true
		}
	}
	return false
}

// Names of the built-in plugins.
const (
	NodeResourcesFit                = "NodeResourcesFit"
	NodeResourcesBalancedAllocation = "NodeResourcesBalancedAllocation"
	NodeName                        = "NodeName"
	NodeUnschedulable               = "NodeUnschedulable"
	NodeAffinity                    = "NodeAffinity"
	TaintToleration                 = "TaintToleration"
	PodTopologySpread               = "PodTopologySpread"
	InterPodAffinity                = "InterPodAffinity"
	SchedulingGates                 = "SchedulingGates"
	VolumeBinding                   = "VolumeBinding"
	DefaultBinder                   = "DefaultBinder"
	DefaultPreemption               = "DefaultPreemption"
)

// Scoring strategies of NodeResourcesFit.
const (
	LeastAllocated = "LeastAllocated"
	MostAllocated  = "MostAllocated"
)

// ResourceSpec is a resource and its weight in a resource score.
type ResourceSpec struct {
	Name   string
	Weight int64
}

// ScoringStrategy is how NodeResourcesFit scores nodes.
type ScoringStrategy struct {
	Type      string // LeastAllocated (default) or MostAllocated
	Resources []ResourceSpec
}

// NodeResourcesFitArgs are NodeResourcesFit's args.
type NodeResourcesFitArgs struct {
	ScoringStrategy ScoringStrategy
}

// NodeResourcesBalancedAllocationArgs are NodeResourcesBalancedAllocation's args.
type NodeResourcesBalancedAllocationArgs struct {
	Resources []ResourceSpec
}

// DefaultResources are cpu and memory with weight 1 each.
func DefaultResources() []ResourceSpec {
	return []ResourceSpec{{Name: "cpu", Weight: 1}, {Name: "memory", Weight: 1}}
}

// DefaultNodeResourcesFitArgs: LeastAllocated over cpu and memory.
func DefaultNodeResourcesFitArgs() *NodeResourcesFitArgs {
	return &NodeResourcesFitArgs{ScoringStrategy: ScoringStrategy{Type: LeastAllocated, Resources: DefaultResources()}}
}

// DefaultNodeResourcesBalancedAllocationArgs: cpu and memory.
func DefaultNodeResourcesBalancedAllocationArgs() *NodeResourcesBalancedAllocationArgs {
	return &NodeResourcesBalancedAllocationArgs{Resources: DefaultResources()}
}

// DefaultPlugins is the default profile's plugins, in the order they run
// at each point they implement, with the score weights Kubernetes uses.
func DefaultPlugins() []PluginRef {
	return []PluginRef{
		{Name: NodeUnschedulable},
		{Name: NodeName},
		{Name: TaintToleration, Weight: 3},
		{Name: NodeAffinity, Weight: 2},
		{Name: NodeResourcesFit, Weight: 1},
		{Name: VolumeBinding},
		{Name: PodTopologySpread, Weight: 2},
		{Name: InterPodAffinity, Weight: 2},
		{Name: DefaultPreemption},
		{Name: NodeResourcesBalancedAllocation, Weight: 1},
		{Name: DefaultBinder},
	}
}

// Defaults of the configuration.
const (
	DefaultSchedulerName                     = "default-scheduler"
	DefaultParallelism                       = 16
	DefaultPodInitialBackoff                 = time.Second
	DefaultPodMaxBackoff                     = 10 * time.Second
	DefaultPodMaxInUnschedulablePodsDuration = 5 * time.Minute
)

// KnownPlugins tells the loader which plugins exist and at which extension
// points each can run (the scheduler derives it from its plugin registry).
type KnownPlugins map[string][]ExtensionPoint

func (k KnownPlugins) implements(name string, point ExtensionPoint) bool {
	for _, p := range k[name] {
		if p == point {
			return true
		}
	}
	return false
}
