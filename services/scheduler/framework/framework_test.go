package framework_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/scheduler/config"
	"skiff.dev/services/scheduler/framework"
)

var ctx = context.Background()

func TestNumFeasibleNodesToFind(t *testing.T) {
	cases := []struct {
		percentage int32
		nodes      int
		want       int
	}{
		{0, 10, 10},       // small clusters: every node
		{0, 99, 99},       // still under the minimum
		{0, 100, 50},      // adaptive: 50% - 100/125 = 50% -> 50, raised to the minimum? no: 100 nodes -> 50
		{0, 1000, 420},    // adaptive: 50 - 8 = 42%
		{0, 5000, 500},    // adaptive: 50 - 40 = 10%
		{0, 10000, 500},   // adaptive floor 5%
		{30, 1000, 300},   // configured
		{5, 1000, 100},    // at least 100 nodes
		{100, 1000, 1000}, // all
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%d%%_of_%d", tc.percentage, tc.nodes), func(t *testing.T) {
			got := framework.NumFeasibleNodesToFind(tc.percentage, tc.nodes)
			want := tc.want
			if tc.nodes >= framework.MinFeasibleNodesToFind && want < framework.MinFeasibleNodesToFind {
				want = framework.MinFeasibleNodesToFind
			}
			if got != want {
				t.Errorf("got %d, want %d", got, want)
			}
		})
	}
}

func TestParallelizerVisitsEveryPieceOnce(t *testing.T) {
	for _, pieces := range []int{0, 1, 63, 64, 1000, 5000} {
		seen := make([]atomic.Int32, pieces)
		framework.NewParallelizer(16).ForEach(pieces, func(i int) bool {
			seen[i].Add(1)
			return true
		})
		for i := range seen {
			if n := seen[i].Load(); n != 1 {
				t.Fatalf("%d pieces: piece %d visited %d times", pieces, i, n)
			}
		}
	}
	// Stopping: no new pieces start after fn says stop.
	var visited atomic.Int32
	framework.NewParallelizer(16).ForEach(100000, func(i int) bool {
		return visited.Add(1) < 10
	})
	if n := visited.Load(); n > 10+4*256 {
		t.Errorf("visited %d pieces after asking to stop at 10", n)
	}
}

// Plugins for the runtime tests.

type rejectOdd struct{}

func (rejectOdd) Name() string { return "RejectOdd" }
func (rejectOdd) Filter(_ context.Context, _ *framework.CycleState, _ *framework.PodInfo, n *framework.NodeInfo) *framework.Status {
	var i int
	fmt.Sscanf(n.Name(), "n%d", &i)
	if i%2 == 1 {
		return framework.NewStatus(framework.Unschedulable, "node(s) were odd")
	}
	return nil
}

type byNumber struct{}

func (byNumber) Name() string { return "ByNumber" }
func (byNumber) Score(_ context.Context, _ *framework.CycleState, _ *framework.PodInfo, n *framework.NodeInfo) (int64, *framework.Status) {
	var i int64
	fmt.Sscanf(n.Name(), "n%d", &i)
	return i, nil
}
func (b byNumber) ScoreExtensions() framework.ScoreExtensions { return b }
func (byNumber) NormalizeScore(_ context.Context, _ *framework.CycleState, _ *framework.PodInfo, s []framework.NodeScore) *framework.Status {
	framework.DefaultNormalizeScore(framework.MaxNodeScore, false, s)
	return nil
}

type binder struct{}

func (binder) Name() string { return "Binder" }
func (binder) Bind(context.Context, *framework.CycleState, *framework.PodInfo, string) *framework.Status {
	return nil
}

func registry() framework.Registry {
	return framework.Registry{
		"RejectOdd": func(any, framework.Handle) (framework.Plugin, error) { return rejectOdd{}, nil },
		"ByNumber":  func(any, framework.Handle) (framework.Plugin, error) { return byNumber{}, nil },
		"Binder":    func(any, framework.Handle) (framework.Plugin, error) { return binder{}, nil },
	}
}

func nodes(n int) []*framework.NodeInfo {
	out := make([]*framework.NodeInfo, n)
	for i := range out {
		out[i] = framework.NewNodeInfo(&corev1.Node{Metadata: &metav1.ObjectMeta{Name: fmt.Sprintf("n%d", i)}})
	}
	return out
}

func newFramework(t *testing.T, percentage int32) *framework.Framework {
	t.Helper()
	p := &config.Profile{SchedulerName: "test", Plugins: map[config.ExtensionPoint][]config.PluginRef{
		config.Filter: {{Name: "RejectOdd"}},
		config.Score:  {{Name: "ByNumber", Weight: 2}},
		config.Bind:   {{Name: "Binder"}},
	}}
	f, err := framework.NewFramework(registry(), p, framework.Options{Parallelism: 4, PercentageOfNodesToScore: percentage})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestFindFeasibleSamplesAndRotates(t *testing.T) {
	f := newFramework(t, 0)
	all := nodes(1000)
	pi := framework.NewPodInfo(&corev1.Pod{Metadata: &metav1.ObjectMeta{Name: "p", Uid: "u"}})
	state := framework.NewCycleState()
	var d framework.Diagnosis
	feasible, processed, s := f.FindFeasible(ctx, state, pi, all, 0, &d)
	if !s.IsSuccess() {
		t.Fatal(s)
	}
	// 1000 nodes: 42% = 420 feasible wanted; half the nodes are odd.
	if len(feasible) != 420 {
		t.Fatalf("found %d feasible nodes, want 420 (the adaptive sample)", len(feasible))
	}
	if processed < 839 || processed >= 1000 {
		t.Errorf("processed %d nodes; about 840 were needed", processed)
	}
	for _, n := range feasible {
		if rejectOdd.Filter(rejectOdd{}, ctx, nil, nil, n) != nil {
			t.Fatalf("%s is infeasible", n.Name())
		}
	}
	// Starting further on wraps around.
	feasible, _, _ = f.FindFeasible(ctx, state, pi, all, 990, &d)
	if feasible == nil || len(feasible) != 420 {
		t.Fatalf("from 990: %d feasible", len(feasible))
	}
}

func TestFitErrorMessage(t *testing.T) {
	f := newFramework(t, 100)
	all := nodes(5)
	pi := framework.NewPodInfo(&corev1.Pod{Metadata: &metav1.ObjectMeta{Name: "p", Uid: "u"}})
	var d framework.Diagnosis
	feasible, _, _ := f.FindFeasible(ctx, framework.NewCycleState(), pi, all[1:2], 0, &d)
	if len(feasible) != 0 {
		t.Fatal("n1 is odd")
	}
	err := &framework.FitError{Pod: pi, NumAllNodes: 1, Diagnosis: d}
	if got, want := err.Error(), "0/1 nodes are available: 1 node(s) were odd."; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if _, ok := d.UnschedulablePlugins["RejectOdd"]; !ok {
		t.Errorf("UnschedulablePlugins %v", d.UnschedulablePlugins)
	}

	// Counts sort most frequent first.
	d = framework.Diagnosis{NodeToStatus: map[string]*framework.Status{
		"a": framework.NewStatus(framework.Unschedulable, "Insufficient cpu"),
		"b": framework.NewStatus(framework.Unschedulable, "Insufficient cpu"),
		"c": framework.NewStatus(framework.Unschedulable, "Insufficient cpu"),
		"d": framework.NewStatus(framework.UnschedulableAndUnresolvable, "node(s) had untolerated taint {dedicated: gpu}"),
		"e": framework.NewStatus(framework.UnschedulableAndUnresolvable, "node(s) had untolerated taint {dedicated: gpu}"),
	}}
	err = &framework.FitError{Pod: pi, NumAllNodes: 5, Diagnosis: d}
	want := "0/5 nodes are available: 3 Insufficient cpu, 2 node(s) had untolerated taint {dedicated: gpu}."
	if got := err.Error(); got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	if got := (&framework.FitError{NumAllNodes: 0}).Error(); !strings.Contains(got, "no nodes available") {
		t.Errorf("no nodes: %q", got)
	}
}

func TestRunScoreWeightsAndNormalizes(t *testing.T) {
	f := newFramework(t, 100)
	all := nodes(5)
	pi := framework.NewPodInfo(&corev1.Pod{Metadata: &metav1.ObjectMeta{Name: "p", Uid: "u"}})
	totals, s := f.RunScore(ctx, framework.NewCycleState(), pi, all)
	if !s.IsSuccess() {
		t.Fatal(s)
	}
	// Raw 0..4, normalized to 0..100 by the max, weight 2.
	want := []int64{0, 50, 100, 150, 200}
	for i, ns := range totals {
		if ns.Score != want[i] || ns.Name != all[i].Name() {
			t.Errorf("%d: %+v, want %s=%d", i, ns, all[i].Name(), want[i])
		}
	}
}

func TestNewFrameworkChecksExtensionPoints(t *testing.T) {
	p := &config.Profile{SchedulerName: "bad", Plugins: map[config.ExtensionPoint][]config.PluginRef{
		config.Score: {{Name: "RejectOdd"}},
		config.Bind:  {{Name: "Binder"}},
	}}
	_, err := framework.NewFramework(registry(), p, framework.Options{})
	if err == nil || !strings.Contains(err.Error(), `plugin "RejectOdd" does not implement score`) {
		t.Errorf("got %v", err)
	}
	p.Plugins = map[config.ExtensionPoint][]config.PluginRef{config.Filter: {{Name: "RejectOdd"}}}
	if _, err := framework.NewFramework(registry(), p, framework.Options{}); err == nil || !strings.Contains(err.Error(), "no bind plugin") {
		t.Errorf("got %v", err)
	}
}
