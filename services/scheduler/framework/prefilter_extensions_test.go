package framework_test

import (
	"context"
	"maps"
	"strings"
	"testing"

	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/scheduler/config"
	"skiff.dev/services/scheduler/framework"
)

// blockers is a PreFilter plugin with extensions: PreFilter counts the
// pods labelled role=blocker per node, Filter rejects a node with one;
// AddPod and RemovePod keep the counts, AddPod refuses a pod labelled
// role=bad.
type blockers struct{ h framework.Handle }

type blockerCounts struct{ byNode map[string]int }

func (c *blockerCounts) Clone() framework.StateData {
	return &blockerCounts{byNode: maps.Clone(c.byNode)}
}

const blockersKey framework.StateKey = "Blockers"

func (blockers) Name() string { return "Blockers" }
func (b blockers) PreFilter(_ context.Context, state *framework.CycleState, _ *framework.PodInfo) (*framework.PreFilterResult, *framework.Status) {
	c := &blockerCounts{byNode: map[string]int{}}
	for _, n := range b.h.Snapshot().List() {
		for _, p := range n.Pods {
			if p.Pod.GetMetadata().GetLabels()["role"] == "blocker" {
				c.byNode[n.Name()]++
			}
		}
	}
	state.Write(blockersKey, c)
	return nil, nil
}
func (b blockers) PreFilterExtensions() framework.PreFilterExtensions { return b }
func (blockers) AddPod(_ context.Context, state *framework.CycleState, _, p *framework.PodInfo, n *framework.NodeInfo) *framework.Status {
	switch p.Pod.GetMetadata().GetLabels()["role"] {
	case "bad":
		return framework.NewStatus(framework.Unschedulable, "a bad pod")
	case "blocker":
		c, _ := framework.ReadAs[*blockerCounts](state, blockersKey)
		c.byNode[n.Name()]++
	}
	return nil
}
func (blockers) RemovePod(_ context.Context, state *framework.CycleState, _, p *framework.PodInfo, n *framework.NodeInfo) *framework.Status {
	if p.Pod.GetMetadata().GetLabels()["role"] == "blocker" {
		c, _ := framework.ReadAs[*blockerCounts](state, blockersKey)
		c.byNode[n.Name()]--
	}
	return nil
}
func (blockers) Filter(_ context.Context, state *framework.CycleState, _ *framework.PodInfo, n *framework.NodeInfo) *framework.Status {
	c, _ := framework.ReadAs[*blockerCounts](state, blockersKey)
	if c.byNode[n.Name()] > 0 {
		return framework.NewStatus(framework.Unschedulable, "node(s) had a blocker")
	}
	return nil
}

// skipper skips every pod; its extensions must then never run.
type skipper struct{ t *testing.T }

func (skipper) Name() string { return "Skipper" }
func (skipper) PreFilter(context.Context, *framework.CycleState, *framework.PodInfo) (*framework.PreFilterResult, *framework.Status) {
	return nil, framework.NewStatus(framework.Skip)
}
func (s skipper) PreFilterExtensions() framework.PreFilterExtensions { return s }
func (s skipper) AddPod(context.Context, *framework.CycleState, *framework.PodInfo, *framework.PodInfo, *framework.NodeInfo) *framework.Status {
	s.t.Error("AddPod of a plugin whose PreFilter skipped the pod")
	return nil
}
func (s skipper) RemovePod(context.Context, *framework.CycleState, *framework.PodInfo, *framework.PodInfo, *framework.NodeInfo) *framework.Status {
	s.t.Error("RemovePod of a plugin whose PreFilter skipped the pod")
	return nil
}

type nominations map[string][]*framework.PodInfo

func (n nominations) NominatedPods() map[string][]*framework.PodInfo { return n }

func rolePod(name, role string, priority int32) *framework.PodInfo {
	return framework.NewPodInfo(&corev1.Pod{
		Metadata: &metav1.ObjectMeta{Namespace: "default", Name: name, Uid: "uid-" + name, Labels: map[string]string{"role": role}},
		Spec:     &corev1.PodSpec{Priority: &priority},
	})
}

func blockersFramework(t *testing.T, snap *framework.Snapshot, nominated nominations) *framework.Framework {
	t.Helper()
	r := framework.Registry{
		"Blockers": func(_ any, h framework.Handle) (framework.Plugin, error) { return blockers{h: h}, nil },
		"Skipper":  func(any, framework.Handle) (framework.Plugin, error) { return skipper{t: t}, nil },
		"Binder":   func(any, framework.Handle) (framework.Plugin, error) { return binder{}, nil },
	}
	p := &config.Profile{SchedulerName: "test", Plugins: map[config.ExtensionPoint][]config.PluginRef{
		config.PreFilter: {{Name: "Skipper"}, {Name: "Blockers"}},
		config.Filter:    {{Name: "Blockers"}},
		config.Bind:      {{Name: "Binder"}},
	}}
	f, err := framework.NewFramework(r, p, framework.Options{Snapshot: snap, Nominator: nominated, Parallelism: 2})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// startCycle runs PreFilter for pod, with the nominations read.
func startCycle(t *testing.T, f *framework.Framework, pod *framework.PodInfo) *framework.CycleState {
	t.Helper()
	state := framework.NewCycleState()
	f.NominatedPodsForCycle(state)
	if _, s := f.RunPreFilter(ctx, state, pod); !s.IsSuccess() {
		t.Fatalf("PreFilter: %v", s)
	}
	return state
}

// TestFilterCountsNominatedPodsInPreFilterState: a pod nominated to a
// node reaches the PreFilter state through AddPod, for the pods of its
// priority or lower only; the cycle's state stays as PreFilter left it.
func TestFilterCountsNominatedPodsInPreFilterState(t *testing.T) {
	n0 := framework.NewNodeInfo(&corev1.Node{Metadata: &metav1.ObjectMeta{Name: "n0"}})
	snap := framework.NewSnapshot(n0)
	f := blockersFramework(t, snap, nominations{"n0": {rolePod("nominated", "blocker", 10)}})
	for _, tc := range []struct {
		priority int32
		want     string
	}{
		{5, "node(s) had a blocker"},
		{10, "node(s) had a blocker"},
		{20, ""},
	} {
		pod := rolePod("p", "", tc.priority)
		state := startCycle(t, f, pod)
		if got := f.RunFilterWithNominatedPods(ctx, state, pod, n0).Message(); got != tc.want {
			t.Errorf("priority %d: %q, want %q", tc.priority, got, tc.want)
		}
		if s := f.RunFilter(ctx, state, pod, n0); !s.IsSuccess() {
			t.Errorf("priority %d: the cycle's state counts the nominated pod: %v", tc.priority, s)
		}
	}
}

// TestPreFilterExtensionsOnAClone: RemovePod and AddPod through the
// framework change the clone only, and a plugin's failure is an Error
// naming it.
func TestPreFilterExtensionsOnAClone(t *testing.T) {
	blocker := rolePod("blocker", "blocker", 0)
	n0 := framework.NewNodeInfo(&corev1.Node{Metadata: &metav1.ObjectMeta{Name: "n0"}}, blocker)
	f := blockersFramework(t, framework.NewSnapshot(n0), nil)
	pod := rolePod("p", "", 100)
	state := startCycle(t, f, pod)

	clone, ni := state.Clone(), n0.Clone()
	ni.RemovePod(blocker)
	if s := f.RunPreFilterExtensionRemovePod(ctx, clone, pod, blocker, ni); !s.IsSuccess() {
		t.Fatal(s)
	}
	if s := f.RunFilter(ctx, clone, pod, ni); !s.IsSuccess() {
		t.Errorf("the blocker removed, still: %v", s)
	}
	if s := f.RunFilter(ctx, state, pod, n0); s.IsSuccess() {
		t.Errorf("the cycle's state lost the blocker with its clone")
	}

	bad := rolePod("bad", "bad", 0)
	ni.AddPod(bad)
	s := f.RunPreFilterExtensionAddPod(ctx, clone, pod, bad, ni)
	if s.Code() != framework.Error || s.Plugin() != "Blockers" || !strings.Contains(s.Message(), `running AddPod on PreFilter plugin "Blockers": a bad pod`) {
		t.Errorf("a failing AddPod: %v (plugin %q)", s, s.Plugin())
	}
}
