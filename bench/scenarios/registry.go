package scenarios

import (
	"context"
	"fmt"
	"strings"
)

// Figure is one number a scenario reports: its name (dotted, family first),
// its unit and, when there is one, the target it is held to.
type Figure struct {
	Name   string
	Unit   string
	Target Target
}

// Target is a bound a figure must meet: Cmp is ">=" or "<="; "" means none.
type Target struct {
	Cmp   string
	Value float64
}

// AtLeast and AtMost make targets.
func AtLeast(v float64) Target { return Target{Cmp: ">=", Value: v} }
func AtMost(v float64) Target  { return Target{Cmp: "<=", Value: v} }

// Met reports whether v meets the target (always true without one).
func (t Target) Met(v float64) bool {
	switch t.Cmp {
	case ">=":
		return v >= t.Value
	case "<=":
		return v <= t.Value
	}
	return true
}

func (t Target) String() string {
	if t.Cmp == "" {
		return "-"
	}
	return t.Cmp + " " + formatValue(t.Value)
}

// Scenario is one measurement. Run reads the results of the scenarios in
// Needs (they run first) and adds a result for each of its Figures.
type Scenario struct {
	Name    string
	Summary string
	Figures []Figure
	// Needs names scenarios whose figures this one derives from.
	Needs []string
	Run   func(ctx context.Context, env *Env, rs *Results) error
}

// Produces reports whether any figure of s starts with prefix.
func (s *Scenario) Produces(prefix string) bool {
	for _, f := range s.Figures {
		if strings.HasPrefix(f.Name, prefix) {
			return true
		}
	}
	return false
}

// All returns every scenario in the order they run: watch fan-out first,
// on a fresh server, as its figure is specified (the write scenario leaves
// some 200,000 objects behind, and the watch figure is then worse: see
// docs/operations.md), then writes against the raw etcd limit, then reads,
// then the HTTP API's against the gRPC API's; fairness last, on an
// apiserver of its own.
func All() []*Scenario {
	return []*Scenario{
		watchFanoutScenario(),
		writeScenario(),
		apiGetScenario(),
		apiListScenario(),
		httpCreateScenario(),
		httpListScenario(),
		schedulerScenario(),
		schedAffinityScenario(),
		preemptionScenario(),
		nodeScenario(),
		streamsScenario(),
		leaderScenario(),
		controllersScenario(),
		jobsScenario(),
		daemonSetScenario(),
		fairnessScenario(),
		fairnessFloodScenario(),
		memoryScenario(),
		servicesScenario(),
		servicesProgrammingScenario(),
		dnsScenario(),
		haScenario(),
	}
}

// Select returns, in run order, the scenarios of all that produce a figure
// starting with prefix ("" selects all), plus the scenarios they need.
func Select(all []*Scenario, prefix string) ([]*Scenario, error) {
	byName := map[string]*Scenario{}
	for _, s := range all {
		byName[s.Name] = s
	}
	want := map[string]bool{}
	var add func(s *Scenario) error
	add = func(s *Scenario) error {
		if want[s.Name] {
			return nil
		}
		want[s.Name] = true
		for _, n := range s.Needs {
			dep, ok := byName[n]
			if !ok {
				return fmt.Errorf("scenario %q needs unknown scenario %q", s.Name, n)
			}
			if err := add(dep); err != nil {
				return err
			}
		}
		return nil
	}
	for _, s := range all {
		if s.Produces(prefix) {
			if err := add(s); err != nil {
				return nil, err
			}
		}
	}
	var out []*Scenario
	for _, s := range all {
		if want[s.Name] {
			out = append(out, s)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no scenario produces a figure starting with %q (see -help)", prefix)
	}
	return out, nil
}

// Result is a measured figure with an optional note on how it was measured.
type Result struct {
	Figure
	Value float64
	Note  string
}

// Results collects the figures of a run, in the order they were measured.
type Results struct {
	list []Result
}

// Add records the value of f.
func (rs *Results) Add(f Figure, v float64, note string) {
	rs.list = append(rs.list, Result{Figure: f, Value: v, Note: note})
}

// Get returns the value of the figure called name, if it was measured.
func (rs *Results) Get(name string) (float64, bool) {
	for _, r := range rs.list {
		if r.Name == name {
			return r.Value, true
		}
	}
	return 0, false
}

// List returns the results in order.
func (rs *Results) List() []Result { return rs.list }

// Run runs the scenarios in order on env, collecting their figures. It
// stops at the first error.
func Run(ctx context.Context, env *Env, scenarios []*Scenario) (*Results, error) {
	rs := &Results{}
	for _, s := range scenarios {
		env.logf("running %s: %s", s.Name, s.Summary)
		if err := s.Run(ctx, env, rs); err != nil {
			return rs, fmt.Errorf("scenario %s: %w", s.Name, err)
		}
	}
	return rs, nil
}
