package framework

import "slices"

// StateKey names a plugin's data in a CycleState.
type StateKey string

// CycleState carries what plugins compute for one pod in one scheduling
// cycle (PreFilter for Filter, PreScore for Score). It is written only by
// the one-per-pod extension points (PreFilter, PreScore), which run on the
// scheduling goroutine before the parallel ones that read it, so it needs
// no lock. The PreFilter extensions change only clones of it (Clone), each
// used by one goroutine.
type CycleState struct {
	data map[StateKey]any
	// skipFilter and skipScore list plugins that asked (with Skip) not to
	// run their Filter or Score for this pod.
	skipFilter []string
	skipScore  []string
	// activeFilters are the indexes of the Filter plugins PreFilter did
	// not skip (filtersSet once RunPreFilter has computed them).
	activeFilters []int
	filtersSet    bool
	// nominated holds the pods nominated to nodes, read once per cycle
	// (NominatedPodsForCycle; nil: none).
	nominated map[string][]*PodInfo
	// RecordPluginMetrics says whether this cycle measures each plugin's
	// duration (a sample of cycles do: timing every call costs).
	RecordPluginMetrics bool
}

// StateData is plugin data that PreFilterExtensions change after
// PreFilter: a cloned CycleState holds a Clone of it, which the clone's
// changes must not reach the original through. Data that is not
// StateData is shared by the clones (read only after PreFilter).
type StateData interface {
	Clone() StateData
}

// NewCycleState returns an empty state.
func NewCycleState() *CycleState { return &CycleState{} }

// Clone returns a copy of c for a changed node (preemption's dry run on
// one node, a node with nominated pods added): its StateData is cloned,
// the rest shared. Clone only reads c: several goroutines may clone the
// same state at once.
func (c *CycleState) Clone() *CycleState {
	out := &CycleState{
		skipFilter:          slices.Clone(c.skipFilter),
		skipScore:           slices.Clone(c.skipScore),
		activeFilters:       slices.Clone(c.activeFilters),
		filtersSet:          c.filtersSet,
		nominated:           c.nominated,
		RecordPluginMetrics: c.RecordPluginMetrics,
	}
	if len(c.data) > 0 {
		out.data = make(map[StateKey]any, len(c.data))
		for k, v := range c.data {
			if sd, ok := v.(StateData); ok {
				v = sd.Clone()
			}
			out.data[k] = v
		}
	}
	return out
}

// Write stores data under key.
func (c *CycleState) Write(key StateKey, data any) {
	if c.data == nil {
		c.data = make(map[StateKey]any, 4)
	}
	c.data[key] = data
}

// Read returns the data under key.
func (c *CycleState) Read(key StateKey) (any, bool) {
	v, ok := c.data[key]
	return v, ok
}

// ReadAs returns the data under key as a T.
func ReadAs[T any](c *CycleState, key StateKey) (T, bool) {
	v, ok := c.data[key]
	if !ok {
		var zero T
		return zero, false
	}
	t, ok := v.(T)
	return t, ok
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
