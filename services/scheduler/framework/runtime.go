package framework

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"

	"skiff.dev/services/scheduler/config"
)

// Metrics receives the framework's timings; the scheduler implements it
// with Prometheus histograms. A nil Metrics records nothing.
type Metrics interface {
	// ObserveExtensionPoint times one run of an extension point for a pod.
	ObserveExtensionPoint(point config.ExtensionPoint, profile string, code Code, d time.Duration)
	// ObservePlugin times one plugin call (only in sampled cycles).
	ObservePlugin(point config.ExtensionPoint, plugin string, code Code, d time.Duration)
}

// Options are what a Framework is built with besides its profile.
type Options struct {
	// Snapshot is the snapshot the scheduler refreshes before each cycle.
	Snapshot *Snapshot
	Conn     grpc.ClientConnInterface
	// Parallelism bounds the goroutines of Filter and Score.
	Parallelism int
	// PercentageOfNodesToScore is the configuration-wide value; the
	// profile's, when set, wins.
	PercentageOfNodesToScore int32
	Metrics                  Metrics
	// PDBs, Nominator and Preempter serve preemption (nil: no budgets,
	// no nominations, no preemption).
	PDBs      PDBLister
	Nominator Nominator
	Preempter Preempter
	// Volumes reads claims, volumes and classes (nil: none).
	Volumes VolumeLister
	// Namespaces reads namespaces' labels (nil: none).
	Namespaces NamespaceLister
}

// Framework runs one profile's plugins. Its cycle methods (RunPreFilter
// to RunReserve) must be called by one goroutine at a time: they reuse
// buffers between cycles. RunBind and RunUnreserve may run concurrently
// with cycles.
type Framework struct {
	profile    string
	percentage int32

	preFilter    []PreFilterPlugin
	preFilterExt []preFilterExt
	filter       []FilterPlugin
	postFilter   []PostFilterPlugin
	preScore     []PreScorePlugin
	score        []ScorePlugin
	scoreWeights []int64
	reserve      []ReservePlugin
	preBind      []PreBindPlugin
	bind         []BindPlugin

	snapshot     *Snapshot
	volumes      VolumeLister
	namespaces   NamespaceLister
	conn         grpc.ClientConnInterface
	parallelizer Parallelizer
	pdbs         PDBLister
	nominator    Nominator
	preempter    Preempter
	metrics      Metrics

	scratch scratch
}

var _ Handle = (*Framework)(nil)

// NewFramework builds the plugins of profile p from registry r. Each
// plugin is built once, with its args, whatever the number of extension
// points it runs at.
func NewFramework(r Registry, p *config.Profile, o Options) (*Framework, error) {
	if o.Snapshot == nil {
		o.Snapshot = NewEmptySnapshot()
	}
	f := &Framework{
		profile:      p.SchedulerName,
		percentage:   o.PercentageOfNodesToScore,
		snapshot:     o.Snapshot,
		conn:         o.Conn,
		parallelizer: NewParallelizer(o.Parallelism),
		pdbs:         o.PDBs,
		nominator:    o.Nominator,
		preempter:    o.Preempter,
		metrics:      o.Metrics,
		volumes:      o.Volumes,
		namespaces:   o.Namespaces,
	}
	if p.PercentageOfNodesToScore != nil {
		f.percentage = *p.PercentageOfNodesToScore
	}
	built := map[string]Plugin{}
	get := func(name string) (Plugin, error) {
		if pl, ok := built[name]; ok {
			return pl, nil
		}
		factory, ok := r[name]
		if !ok {
			return nil, fmt.Errorf("profile %q: unknown plugin %q", p.SchedulerName, name)
		}
		pl, err := factory(p.PluginArgs[name], f)
		if err != nil {
			return nil, fmt.Errorf("profile %q: plugin %q: %w", p.SchedulerName, name, err)
		}
		built[name] = pl
		return pl, nil
	}
	for _, point := range config.ExtensionPoints {
		for _, ref := range p.Plugins[point] {
			pl, err := get(ref.Name)
			if err != nil {
				return nil, err
			}
			if err := f.add(point, pl, ref.Weight); err != nil {
				return nil, fmt.Errorf("profile %q: %w", p.SchedulerName, err)
			}
		}
	}
	if len(f.bind) == 0 {
		return nil, fmt.Errorf("profile %q: no bind plugin enabled", p.SchedulerName)
	}
	for _, pl := range f.preFilter {
		if ext := pl.PreFilterExtensions(); ext != nil {
			f.preFilterExt = append(f.preFilterExt, preFilterExt{name: pl.Name(), ext: ext})
		}
	}
	f.scratch.filterTimes = make([]callTimes, len(f.filter))
	f.scratch.scoreTimes = make([]callTimes, len(f.score))
	return f, nil
}

func (f *Framework) add(point config.ExtensionPoint, pl Plugin, weight int32) error {
	var ok bool
	switch point {
	case config.PreFilter:
		ok = appendAs(&f.preFilter, pl)
	case config.Filter:
		ok = appendAs(&f.filter, pl)
	case config.PostFilter:
		ok = appendAs(&f.postFilter, pl)
	case config.PreScore:
		ok = appendAs(&f.preScore, pl)
	case config.Score:
		if ok = appendAs(&f.score, pl); ok {
			f.scoreWeights = append(f.scoreWeights, int64(max(weight, 1)))
		}
	case config.Reserve:
		ok = appendAs(&f.reserve, pl)
	case config.PreBind:
		ok = appendAs(&f.preBind, pl)
	case config.Bind:
		ok = appendAs(&f.bind, pl)
	default:
		return fmt.Errorf("unknown extension point %q", point)
	}
	if !ok {
		return fmt.Errorf("plugin %q does not implement %s", pl.Name(), point)
	}
	return nil
}

// appendAs appends pl to list when it implements the list's extension
// point, and reports whether it does.
func appendAs[P Plugin](list *[]P, pl Plugin) bool {
	x, ok := pl.(P)
	if ok {
		*list = append(*list, x)
	}
	return ok
}

// ProfileName is the schedulerName the framework serves.
func (f *Framework) ProfileName() string { return f.profile }

// PercentageOfNodesToScore is the profile's effective percentage (0: adaptive).
func (f *Framework) PercentageOfNodesToScore() int32 { return f.percentage }

// Snapshot implements Handle.
func (f *Framework) Snapshot() *Snapshot { return f.snapshot }

// Conn implements Handle.
func (f *Framework) Conn() grpc.ClientConnInterface { return f.conn }

// Parallelizer implements Handle.
func (f *Framework) Parallelizer() Parallelizer { return f.parallelizer }

// Volumes implements Handle.
func (f *Framework) Volumes() VolumeLister { return f.volumes }

// Namespaces implements Handle.
func (f *Framework) Namespaces() NamespaceLister { return f.namespaces }

// HasFilterPlugins reports whether any Filter plugin is enabled.
func (f *Framework) HasFilterPlugins() bool { return len(f.filter) > 0 }

// HasScorePlugins reports whether any Score plugin is enabled.
func (f *Framework) HasScorePlugins() bool { return len(f.score) > 0 }

// PluginNames lists the plugins enabled at point, in order (for logs and tests).
func (f *Framework) PluginNames(point config.ExtensionPoint) []string {
	switch point {
	case config.PreFilter:
		return names(f.preFilter)
	case config.Filter:
		return names(f.filter)
	case config.PostFilter:
		return names(f.postFilter)
	case config.PreScore:
		return names(f.preScore)
	case config.Score:
		return names(f.score)
	case config.Reserve:
		return names(f.reserve)
	case config.PreBind:
		return names(f.preBind)
	case config.Bind:
		return names(f.bind)
	}
	return nil
}

// names returns the names of plugins of any extension point.
func names[P Plugin](ps []P) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.Name())
	}
	return out
}

func (f *Framework) observePoint(point config.ExtensionPoint, s *Status, start time.Time) {
	if f.metrics != nil {
		f.metrics.ObserveExtensionPoint(point, f.profile, s.Code(), time.Since(start))
	}
}

// pluginStart is the start time of a plugin call worth timing (zero if
// this cycle is not sampled: reading the clock is not free).
func (f *Framework) pluginStart(state *CycleState) time.Time {
	if f.metrics != nil && state != nil && state.RecordPluginMetrics {
		return time.Now()
	}
	return time.Time{}
}

func (f *Framework) observePlugin(point config.ExtensionPoint, name string, s *Status, start time.Time) {
	if !start.IsZero() {
		f.metrics.ObservePlugin(point, name, s.Code(), time.Since(start))
	}
}

// RunPreFilter runs the PreFilter plugins. A rejection stops at once; a
// plugin's Skip means its Filter will not run for this pod. The result
// intersects the plugins' node sets (nil: all nodes).
func (f *Framework) RunPreFilter(ctx context.Context, state *CycleState, pod *PodInfo) (_ *PreFilterResult, status *Status) {
	start := time.Now()
	defer func() { f.observePoint(config.PreFilter, status, start) }()
	state.skipFilter = state.skipFilter[:0]
	var result *PreFilterResult
	for _, pl := range f.preFilter {
		t := f.pluginStart(state)
		r, s := pl.PreFilter(ctx, state, pod)
		f.observePlugin(config.PreFilter, pl.Name(), s, t)
		switch {
		case s.IsSkip():
			state.skipFilter = append(state.skipFilter, pl.Name())
			continue
		case !s.IsSuccess():
			return nil, s.WithPlugin(pl.Name())
		}
		result = mergePreFilterResults(result, r)
	}
	state.activeFilters = state.activeFilters[:0]
	for i, pl := range f.filter {
		if !contains(state.skipFilter, pl.Name()) {
			state.activeFilters = append(state.activeFilters, i)
		}
	}
	state.filtersSet = true
	return result, nil
}

// preFilterExt is a PreFilter plugin's non-nil PreFilterExtensions.
type preFilterExt struct {
	name string
	ext  PreFilterExtensions
}

// RunPreFilterExtensionAddPod implements Handle: it runs AddPod of the
// PreFilter plugins that have extensions and did not skip the pod.
func (f *Framework) RunPreFilterExtensionAddPod(ctx context.Context, state *CycleState, podToSchedule, podToAdd *PodInfo, node *NodeInfo) *Status {
	for _, pe := range f.preFilterExt {
		if contains(state.skipFilter, pe.name) {
			continue
		}
		if s := pe.ext.AddPod(ctx, state, podToSchedule, podToAdd, node); !s.IsSuccess() {
			return extensionError("AddPod", pe.name, s)
		}
	}
	return nil
}

// RunPreFilterExtensionRemovePod implements Handle: it runs RemovePod of
// the PreFilter plugins that have extensions and did not skip the pod.
func (f *Framework) RunPreFilterExtensionRemovePod(ctx context.Context, state *CycleState, podToSchedule, podToRemove *PodInfo, node *NodeInfo) *Status {
	for _, pe := range f.preFilterExt {
		if contains(state.skipFilter, pe.name) {
			continue
		}
		if s := pe.ext.RemovePod(ctx, state, podToSchedule, podToRemove, node); !s.IsSuccess() {
			return extensionError("RemovePod", pe.name, s)
		}
	}
	return nil
}

// extensionError words an extension's failure as Kubernetes does: always
// an Error (the state can no longer be trusted).
func extensionError(call, plugin string, s *Status) *Status {
	return NewStatus(Error, fmt.Sprintf("running %s on PreFilter plugin %q: %s", call, plugin, s.Message())).WithPlugin(plugin)
}

func mergePreFilterResults(a, b *PreFilterResult) *PreFilterResult {
	switch {
	case b == nil:
		return a
	case a == nil:
		return b
	}
	out := &PreFilterResult{NodeNames: map[string]struct{}{}}
	for n := range a.NodeNames {
		if _, ok := b.NodeNames[n]; ok {
			out.NodeNames[n] = struct{}{}
		}
	}
	return out
}

// RunFilter runs the Filter plugins (those PreFilter did not skip) on one
// node and returns the first rejection, naming its plugin.
func (f *Framework) RunFilter(ctx context.Context, state *CycleState, pod *PodInfo, node *NodeInfo) *Status {
	return f.runFilter(ctx, state, pod, node, state.RecordPluginMetrics)
}

// timedNodeEvery: in a sampled cycle, Filter and Score plugins are timed
// on one node in this many (a clock read costs as much as a plugin call).
const timedNodeEvery = 8

func (f *Framework) runFilter(ctx context.Context, state *CycleState, pod *PodInfo, node *NodeInfo, timed bool) *Status {
	if !state.filtersSet {
		for _, pl := range f.filter {
			if s := pl.Filter(ctx, state, pod, node); !s.IsSuccess() {
				return s.WithPlugin(pl.Name())
			}
		}
		return nil
	}
	for _, i := range state.activeFilters {
		pl := f.filter[i]
		var s *Status
		if timed {
			t := time.Now()
			s = pl.Filter(ctx, state, pod, node)
			f.scratch.filterTimes[i].add(time.Since(t))
		} else {
			s = pl.Filter(ctx, state, pod, node)
		}
		if !s.IsSuccess() {
			return s.WithPlugin(pl.Name())
		}
	}
	return nil
}

// callTimes sums the timed calls of one plugin in a cycle.
type callTimes struct {
	nanos, calls atomic.Int64
}

func (c *callTimes) add(d time.Duration) {
	c.nanos.Add(int64(d))
	c.calls.Add(1)
}

// observeMeans records, for a sampled cycle, the mean duration of each
// plugin's timed calls, and resets the sums.
func (f *Framework) observeMeans(point config.ExtensionPoint, names func(i int) string, times []callTimes) {
	for i := range times {
		d, n := times[i].nanos.Swap(0), times[i].calls.Swap(0)
		if n > 0 && f.metrics != nil {
			f.metrics.ObservePlugin(point, names(i), Success, time.Duration(d/n))
		}
	}
}

// RunPostFilter runs the PostFilter plugins until one succeeds.
func (f *Framework) RunPostFilter(ctx context.Context, state *CycleState, pod *PodInfo, d *Diagnosis) (nominated string, status *Status) {
	if len(f.postFilter) == 0 {
		return "", NewStatus(Unschedulable)
	}
	start := time.Now()
	defer func() { f.observePoint(config.PostFilter, status, start) }()
	var reasons []string
	for _, pl := range f.postFilter {
		t := f.pluginStart(state)
		n, s := pl.PostFilter(ctx, state, pod, d)
		f.observePlugin(config.PostFilter, pl.Name(), s, t)
		if s.IsSuccess() {
			return n, s
		}
		if s.Code() == Error {
			return "", s.WithPlugin(pl.Name())
		}
		reasons = append(reasons, s.Reasons()...)
	}
	return "", NewStatus(Unschedulable, reasons...)
}

// RunPreScore runs the PreScore plugins over the feasible nodes; a Skip
// means the plugin's Score will not run for this pod.
func (f *Framework) RunPreScore(ctx context.Context, state *CycleState, pod *PodInfo, nodes []*NodeInfo) (status *Status) {
	start := time.Now()
	defer func() { f.observePoint(config.PreScore, status, start) }()
	state.skipScore = state.skipScore[:0]
	for _, pl := range f.preScore {
		t := f.pluginStart(state)
		s := pl.PreScore(ctx, state, pod, nodes)
		f.observePlugin(config.PreScore, pl.Name(), s, t)
		switch {
		case s.IsSkip():
			state.skipScore = append(state.skipScore, pl.Name())
		case !s.IsSuccess():
			return s.WithPlugin(pl.Name())
		}
	}
	return nil
}

// RunReserve runs the Reserve plugins; on a failure the caller must run
// RunUnreserve.
func (f *Framework) RunReserve(ctx context.Context, state *CycleState, pod *PodInfo, node string) (status *Status) {
	if len(f.reserve) == 0 {
		return nil
	}
	start := time.Now()
	defer func() { f.observePoint(config.Reserve, status, start) }()
	for _, pl := range f.reserve {
		t := f.pluginStart(state)
		s := pl.Reserve(ctx, state, pod, node)
		f.observePlugin(config.Reserve, pl.Name(), s, t)
		if !s.IsSuccess() {
			return s.WithPlugin(pl.Name())
		}
	}
	return nil
}

// RunUnreserve runs every Reserve plugin's Unreserve, in reverse order.
func (f *Framework) RunUnreserve(ctx context.Context, state *CycleState, pod *PodInfo, node string) {
	for i := len(f.reserve) - 1; i >= 0; i-- {
		f.reserve[i].Unreserve(ctx, state, pod, node)
	}
}

// RunPreBind runs the PreBind plugins in order and stops at the first
// failure, naming its plugin. It runs in the binding cycle.
func (f *Framework) RunPreBind(ctx context.Context, state *CycleState, pod *PodInfo, node string) (status *Status) {
	if len(f.preBind) == 0 {
		return nil
	}
	start := time.Now()
	defer func() { f.observePoint(config.PreBind, status, start) }()
	for _, pl := range f.preBind {
		t := f.pluginStart(state)
		s := pl.PreBind(ctx, state, pod, node)
		f.observePlugin(config.PreBind, pl.Name(), s, t)
		if !s.IsSuccess() && !s.IsSkip() {
			return s.WithPlugin(pl.Name())
		}
	}
	return nil
}

// RunBind runs the bind plugins until one does not Skip.
func (f *Framework) RunBind(ctx context.Context, state *CycleState, pod *PodInfo, node string) (status *Status) {
	start := time.Now()
	defer func() { f.observePoint(config.Bind, status, start) }()
	for _, pl := range f.bind {
		t := f.pluginStart(state)
		s := pl.Bind(ctx, state, pod, node)
		f.observePlugin(config.Bind, pl.Name(), s, t)
		if s.IsSkip() {
			continue
		}
		return s.WithPlugin(pl.Name())
	}
	return NewStatus(Error, fmt.Sprintf("no bind plugin bound pod %s", pod.Key()))
}
