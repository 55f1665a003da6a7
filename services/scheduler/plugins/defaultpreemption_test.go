package plugins

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	policyv1 "skiff.dev/proto/policy/v1"
	"skiff.dev/services/scheduler/framework"
)

// preemptionHandle filters with NodeResourcesFit and records preemptions.
type preemptionHandle struct {
	framework.Handle
	snap *framework.Snapshot
	pdbs []*policyv1.PodDisruptionBudget
	fit  *Fit

	mu        sync.Mutex
	preempted map[string][]string // node -> victims' names
}

func newPreemptionHandle(snap *framework.Snapshot, pdbs ...*policyv1.PodDisruptionBudget) *preemptionHandle {
	p, _ := NewFit(nil, nil)
	return &preemptionHandle{snap: snap, pdbs: pdbs, fit: p.(*Fit), preempted: map[string][]string{}}
}

func (h *preemptionHandle) Snapshot() *framework.Snapshot         { return h.snap }
func (h *preemptionHandle) PDBs() []*policyv1.PodDisruptionBudget { return h.pdbs }
func (h *preemptionHandle) Preempter() framework.Preempter        { return h }
func (h *preemptionHandle) Parallelizer() framework.Parallelizer  { return framework.NewParallelizer(4) }
func (h *preemptionHandle) RunFilterWithNominatedPods(ctx context.Context, state *framework.CycleState, pod *framework.PodInfo, node *framework.NodeInfo) *framework.Status {
	return h.fit.Filter(ctx, state, pod, node)
}

// The PreFilter extensions: Fit has none.
func (h *preemptionHandle) RunPreFilterExtensionAddPod(context.Context, *framework.CycleState, *framework.PodInfo, *framework.PodInfo, *framework.NodeInfo) *framework.Status {
	return nil
}

func (h *preemptionHandle) RunPreFilterExtensionRemovePod(context.Context, *framework.CycleState, *framework.PodInfo, *framework.PodInfo, *framework.NodeInfo) *framework.Status {
	return nil
}

func (h *preemptionHandle) Preempt(_ context.Context, _ *framework.PodInfo, node string, victims []*framework.PodInfo) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, v := range victims {
		h.preempted[node] = append(h.preempted[node], v.Pod.GetMetadata().GetName())
	}
	return nil
}

// prio gives p a priority and a start time (minutes after t0).
func prio(p *corev1.Pod, priority int32, startedMin int) *corev1.Pod {
	p.Spec.Priority = &priority
	p.Status = &corev1.PodStatus{StartTime: timestamppb.New(time.Date(2026, 1, 1, 0, startedMin, 0, 0, time.UTC))}
	return p
}

func names(pis []*framework.PodInfo) []string {
	var out []string
	for _, p := range pis {
		out = append(out, p.Pod.GetMetadata().GetName())
	}
	return out
}

func pdb(name string, allowed int32, matchLabels map[string]string) *policyv1.PodDisruptionBudget {
	return &policyv1.PodDisruptionBudget{
		Metadata: &metav1.ObjectMeta{Namespace: "default", Name: name},
		Spec:     &policyv1.PodDisruptionBudgetSpec{Selector: &metav1.LabelSelector{MatchLabels: matchLabels}},
		Status:   &policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: allowed},
	}
}

func TestSelectVictimsOnNode(t *testing.T) {
	cases := []struct {
		name          string
		pod           *corev1.Pod
		pods          []*corev1.Pod
		pdbs          []*policyv1.PodDisruptionBudget
		wantVictims   []string
		wantViolating int
		wantStatus    string
	}{
		{
			name: "the reprieve keeps the more important pods that still fit",
			pod:  prio(pod("high", "2", ""), 100, 0),
			pods: []*corev1.Pod{prio(pod("a", "1", ""), 10, 1), prio(pod("b", "1", ""), 5, 2), prio(pod("c", "1", ""), 1, 3), prio(pod("d", "1", ""), 1, 4)},
			// 4 cpus, all used: two must go, the least important (c, d).
			wantVictims: []string{"c", "d"},
		},
		{
			name:        "equal priority: the one started last goes",
			pod:         prio(pod("high", "1", ""), 100, 0),
			pods:        []*corev1.Pod{prio(pod("old", "2", ""), 1, 1), prio(pod("new", "2", ""), 1, 9)},
			wantVictims: []string{"new"},
		},
		{
			name:       "pods of equal or higher priority are never victims",
			pod:        prio(pod("mid", "1", ""), 10, 0),
			pods:       []*corev1.Pod{prio(pod("same", "2", ""), 10, 1), prio(pod("higher", "2", ""), 20, 1)},
			wantStatus: "UnschedulableAndUnresolvable: No preemption victims found for incoming pod",
		},
		{
			name:       "removing every lower pod is not enough",
			pod:        prio(pod("big", "3", ""), 100, 0),
			pods:       []*corev1.Pod{prio(pod("low", "1", ""), 1, 1), prio(pod("keep", "2", ""), 200, 1)},
			wantStatus: "Unschedulable: Insufficient cpu",
		},
		{
			name: "a pod a budget protects is reprieved first",
			pod:  prio(pod("high", "2", ""), 100, 0),
			pods: []*corev1.Pod{podLabels(prio(pod("guarded", "2", ""), 1, 9), "app", "db"), prio(pod("free", "2", ""), 5, 1)},
			pdbs: []*policyv1.PodDisruptionBudget{pdb("db", 0, map[string]string{"app": "db"})},
			// free has the higher priority, but evicting guarded would
			// violate its budget: guarded is tried first and kept.
			wantVictims: []string{"free"},
		},
		{
			name:          "a budget violated when nothing else helps, and counted",
			pod:           prio(pod("high", "4", ""), 100, 0),
			pods:          []*corev1.Pod{podLabels(prio(pod("guarded", "2", ""), 1, 1), "app", "db"), prio(pod("free", "2", ""), 1, 2)},
			pdbs:          []*policyv1.PodDisruptionBudget{pdb("db", 0, map[string]string{"app": "db"})},
			wantVictims:   []string{"guarded", "free"},
			wantViolating: 1,
		},
		{
			name:        "a budget with disruptions left is no violation",
			pod:         prio(pod("high", "2", ""), 100, 0),
			pods:        []*corev1.Pod{podLabels(prio(pod("guarded", "2", ""), 1, 9), "app", "db"), prio(pod("free", "2", ""), 5, 1)},
			pdbs:        []*policyv1.PodDisruptionBudget{pdb("db", 1, map[string]string{"app": "db"})},
			wantVictims: []string{"guarded"},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ni := nodeInfo(node("n", "4", "8Gi", "110"), c.pods...)
			before := len(ni.Pods)
			h := newPreemptionHandle(framework.NewSnapshot(ni))
			victims, violating, s := SelectVictimsOnNode(ctx, h, framework.NewCycleState(), framework.NewPodInfo(c.pod), ni.Clone(), c.pdbs)
			if got := statusString(s); got != c.wantStatus {
				t.Fatalf("status %q, want %q", got, c.wantStatus)
			}
			if got := names(victims); !slices.Equal(got, c.wantVictims) {
				t.Errorf("victims %v, want %v", got, c.wantVictims)
			}
			if violating != c.wantViolating {
				t.Errorf("%d budget violations, want %d", violating, c.wantViolating)
			}
			if len(ni.Pods) != before {
				t.Errorf("the snapshot's node changed")
			}
		})
	}
}

func TestPickOneNode(t *testing.T) {
	v := func(name string, priority int32, startedMin int) *framework.PodInfo {
		return framework.NewPodInfo(prio(pod(name, "1", ""), priority, startedMin))
	}
	cases := []struct {
		name       string
		candidates []Candidate
		want       string
	}{
		{"no victims wins at once", []Candidate{{Node: "a", Victims: []*framework.PodInfo{v("x", 1, 0)}}, {Node: "b"}}, "b"},
		{"fewest budget violations", []Candidate{
			{Node: "a", Victims: []*framework.PodInfo{v("x", 1, 0)}, NumPDBViolations: 1},
			{Node: "b", Victims: []*framework.PodInfo{v("y", 50, 0), v("z", 40, 0)}},
		}, "b"},
		{"lowest highest-victim priority", []Candidate{
			{Node: "a", Victims: []*framework.PodInfo{v("x", 20, 0)}},
			{Node: "b", Victims: []*framework.PodInfo{v("y", 10, 0), v("z", 10, 0)}},
		}, "b"},
		{"smallest priority sum (negative priorities too)", []Candidate{
			{Node: "a", Victims: []*framework.PodInfo{v("x", -5, 0), v("y", -5, 0)}},
			{Node: "b", Victims: []*framework.PodInfo{v("z", -5, 0), v("w", -100, 0)}},
		}, "b"},
		{"fewest victims", []Candidate{
			{Node: "a", Victims: []*framework.PodInfo{v("x", 0, 0), v("y", 0, 0)}},
			{Node: "b", Victims: []*framework.PodInfo{v("z", 0, 0)}},
			{Node: "c", Victims: []*framework.PodInfo{v("w", 0, 0), v("u", 0, 0)}},
		}, "b"},
		{"latest start of the highest-priority victims", []Candidate{
			{Node: "a", Victims: []*framework.PodInfo{v("x", 5, 1)}},
			{Node: "b", Victims: []*framework.PodInfo{v("y", 5, 30)}},
		}, "b"},
		{"otherwise the first", []Candidate{
			{Node: "a", Victims: []*framework.PodInfo{v("x", 5, 1)}},
			{Node: "b", Victims: []*framework.PodInfo{v("y", 5, 1)}},
		}, "a"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := PickOneNode(c.candidates).Node; got != c.want {
				t.Errorf("picked %s, want %s", got, c.want)
			}
		})
	}
}

func TestNumCandidates(t *testing.T) {
	for n, want := range map[int]int{5: 5, 100: 100, 500: 100, 1000: 100, 5000: 500} {
		if got := NumCandidates(n); got != want {
			t.Errorf("NumCandidates(%d) = %d, want %d", n, got, want)
		}
	}
}

// diagnosis marks every node Unschedulable (by NodeResourcesFit), except
// those named unresolvable.
func diagnosis(snap *framework.Snapshot, unresolvable ...string) *framework.Diagnosis {
	d := &framework.Diagnosis{NodeToStatus: map[string]*framework.Status{}}
	for _, n := range snap.List() {
		code := framework.Unschedulable
		if slices.Contains(unresolvable, n.Name()) {
			code = framework.UnschedulableAndUnresolvable
		}
		d.NodeToStatus[n.Name()] = framework.NewStatus(code, "Insufficient cpu")
	}
	return d
}

func TestDefaultPreemptionPostFilter(t *testing.T) {
	full := func(name string, priorities ...int32) *framework.NodeInfo {
		var pods []*corev1.Pod
		for i, p := range priorities {
			pods = append(pods, prio(pod(name+"-"+string(rune('a'+i)), "2", ""), p, i))
		}
		return nodeInfo(node(name, "4", "8Gi", "110"), pods...)
	}
	snap := framework.NewSnapshot(full("n1", 10, 10), full("n2", 1, 10), full("n3", 1000, 1000))
	h := newPreemptionHandle(snap)
	p, _ := NewDefaultPreemption(nil, h)
	pl := p.(*DefaultPreemption)

	high := framework.NewPodInfo(prio(pod("high", "2", ""), 100, 0))
	node, s := pl.PostFilter(ctx, framework.NewCycleState(), high, diagnosis(snap))
	if !s.IsSuccess() || node != "n2" {
		t.Fatalf("PostFilter = %q, %v; want n2 (its victim has the lowest priority)", node, s)
	}
	if got := h.preempted["n2"]; !slices.Equal(got, []string{"n2-a"}) {
		t.Errorf("victims %v, want [n2-a]", got)
	}

	never := "Never"
	np := prio(pod("polite", "2", ""), 100, 0)
	np.Spec.PreemptionPolicy = &never
	_, s = pl.PostFilter(ctx, framework.NewCycleState(), framework.NewPodInfo(np), diagnosis(snap))
	if s.IsSuccess() || s.Message() != "preemption: not eligible due to preemptionPolicy=Never." {
		t.Errorf("preemptionPolicy Never: %v", s)
	}

	low := framework.NewPodInfo(prio(pod("low", "2", ""), 0, 0))
	_, s = pl.PostFilter(ctx, framework.NewCycleState(), low, diagnosis(snap, "n3"))
	want := "preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod."
	// n3 is unresolvable, the other two have no lower-priority pods.
	if s.IsSuccess() || !strings.HasPrefix(s.Message(), "preemption: 0/3 nodes are available:") {
		t.Errorf("nothing to preempt: %v, want like %q", s, want)
	}
	if !strings.Contains(s.Message(), "2 No preemption victims found for incoming pod") || !strings.Contains(s.Message(), "1 Preemption is not helpful for scheduling") {
		t.Errorf("nothing to preempt: %q", s.Message())
	}
}

func TestEligibleToPreempt(t *testing.T) {
	victim := prio(pod("victim", "2", ""), 1, 0)
	victim.Metadata.DeletionTimestamp = timestamppb.Now()
	victim.Status.Conditions = []*corev1.PodCondition{{Type: "DisruptionTarget", Status: "True", Reason: "PreemptionByScheduler"}}
	snap := framework.NewSnapshot(nodeInfo(node("n1", "4", "8Gi", "110"), victim))
	p := prio(pod("high", "2", ""), 100, 0)
	p.Status.NominatedNodeName = "n1"
	if ok, msg := EligibleToPreempt(framework.NewPodInfo(p), snap, diagnosis(snap)); ok || msg != "not eligible due to a terminating pod on the nominated node." {
		t.Errorf("with its victim terminating: %v %q", ok, msg)
	}
	if ok, _ := EligibleToPreempt(framework.NewPodInfo(p), snap, diagnosis(snap, "n1")); !ok {
		t.Errorf("a nominated node that no longer suits it at all: not eligible")
	}
	p.Status.NominatedNodeName = ""
	if ok, _ := EligibleToPreempt(framework.NewPodInfo(p), snap, diagnosis(snap)); !ok {
		t.Errorf("not nominated: not eligible")
	}
}
