package cache

import (
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/scheduler/framework"
)

func node(name string) *corev1.Node {
	return &corev1.Node{
		Metadata: &metav1.ObjectMeta{Name: name},
		Status:   &corev1.NodeStatus{Allocatable: map[string]string{"cpu": "4", "memory": "8Gi", "pods": "110"}},
	}
}

func pod(name, cpu string) *framework.PodInfo {
	return framework.NewPodInfo(&corev1.Pod{
		Metadata: &metav1.ObjectMeta{Namespace: "default", Name: name, Uid: "uid-" + name, ResourceVersion: "1"},
		Spec: &corev1.PodSpec{Containers: []*corev1.Container{{
			Name: "c", Resources: &corev1.ResourceRequirements{Requests: map[string]string{"cpu": cpu}},
		}}},
	})
}

// bound is pi's pod as the watch shows it once bound to node.
func bound(pi *framework.PodInfo, node string) *framework.PodInfo {
	p := proto.Clone(pi.Pod).(*corev1.Pod)
	p.Spec.NodeName = node
	p.Metadata.ResourceVersion = "2"
	return framework.NewPodInfo(p)
}

// cpuOf is what the snapshot says node's pods request, and how many.
func cpuOf(s *framework.Snapshot, node string) (int64, int) {
	ni := s.Get(node)
	if ni == nil {
		return -1, -1
	}
	return ni.Requested.MilliCPU, len(ni.Pods)
}

type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time { return c.t }

func TestAssumeConfirmForgetExpire(t *testing.T) {
	clock := &fakeClock{t: time.Unix(1000, 0)}
	c := New(30*time.Second, clock.now)
	c.AddNode(node("n1"))
	c.AddNode(node("n2"))
	snap := framework.NewEmptySnapshot()

	a, b, x := pod("a", "1"), pod("b", "500m"), pod("x", "2")
	for _, p := range []*framework.PodInfo{a, b, x} {
		if err := c.AssumePod(p, "n1"); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.AssumePod(a, "n2"); err == nil {
		t.Error("assuming a pod twice should fail")
	}
	c.UpdateSnapshot(snap)
	if cpu, n := cpuOf(snap, "n1"); cpu != 3500 || n != 3 {
		t.Fatalf("after assuming three pods, n1 has %dm in %d pods; want 3500m in 3", cpu, n)
	}

	// a: the watch confirms it. b: the bind failed. x: bound, never seen.
	c.FinishBinding(a)
	c.AddPod(bound(a, "n1"))
	if c.IsAssumed(a.UID()) || !c.Has(a.UID()) {
		t.Error("a confirmed pod is counted and no longer assumed")
	}
	if err := c.ForgetPod(b); err != nil {
		t.Fatal(err)
	}
	if err := c.ForgetPod(a); err == nil {
		t.Error("forgetting a confirmed pod should fail")
	}
	c.FinishBinding(x)
	c.UpdateSnapshot(snap)
	if cpu, n := cpuOf(snap, "n1"); cpu != 3000 || n != 2 {
		t.Fatalf("after confirming a and forgetting b, n1 has %dm in %d pods; want 3000m in 2", cpu, n)
	}

	clock.t = clock.t.Add(29 * time.Second)
	if exp := c.Cleanup(clock.t); len(exp) != 0 {
		t.Errorf("expired before the TTL: %v", exp)
	}
	clock.t = clock.t.Add(2 * time.Second)
	if exp := c.Cleanup(clock.t); len(exp) != 1 || exp[0].UID() != x.UID() {
		t.Errorf("after the TTL, want x expired, got %v", exp)
	}
	c.UpdateSnapshot(snap)
	if cpu, n := cpuOf(snap, "n1"); cpu != 1000 || n != 1 {
		t.Fatalf("after x expired, n1 has %dm in %d pods; want 1000m in 1", cpu, n)
	}
	if got := c.Counts(); got != (Counts{Nodes: 2, Pods: 1, AssumedPods: 0}) {
		t.Errorf("counts %+v", got)
	}
}

func TestAssumedPodBoundElsewhere(t *testing.T) {
	c := New(time.Minute, nil)
	c.AddNode(node("n1"))
	c.AddNode(node("n2"))
	p := pod("p", "1")
	if err := c.AssumePod(p, "n1"); err != nil {
		t.Fatal(err)
	}
	// Another scheduler won: the watch shows it on n2.
	c.AddPod(bound(p, "n2"))
	snap := framework.NewEmptySnapshot()
	c.UpdateSnapshot(snap)
	if cpu, _ := cpuOf(snap, "n1"); cpu != 0 {
		t.Errorf("n1 still counts %dm", cpu)
	}
	if cpu, _ := cpuOf(snap, "n2"); cpu != 1000 {
		t.Errorf("n2 counts %dm, want 1000m", cpu)
	}
	c.RemovePod(p.Pod)
	c.UpdateSnapshot(snap)
	if cpu, n := cpuOf(snap, "n2"); cpu != 0 || n != 0 {
		t.Errorf("after removal n2 counts %dm in %d pods", cpu, n)
	}
}

func TestPodsOfUnknownNodesAreKept(t *testing.T) {
	c := New(0, nil)
	p := pod("p", "1")
	c.AddPod(bound(p, "late"))
	snap := framework.NewEmptySnapshot()
	c.UpdateSnapshot(snap)
	if snap.NumNodes() != 0 {
		t.Fatalf("a node nobody has seen is in the snapshot: %v", snap.List())
	}
	c.AddNode(node("late"))
	c.UpdateSnapshot(snap)
	if cpu, n := cpuOf(snap, "late"); cpu != 1000 || n != 1 {
		t.Errorf("once the node appears it carries its pod: %dm in %d pods", cpu, n)
	}
	c.RemoveNode(node("late"))
	c.UpdateSnapshot(snap)
	if snap.NumNodes() != 0 || snap.Get("late") != nil {
		t.Errorf("a removed node stays in the snapshot: %v", snap.List())
	}
	c.AddNode(node("late"))
	c.UpdateSnapshot(snap)
	if cpu, _ := cpuOf(snap, "late"); cpu != 1000 {
		t.Errorf("a node removed and added again lost its pod's accounting: %dm", cpu)
	}
}

func TestSnapshotCopiesOnlyWhatChanged(t *testing.T) {
	c := New(0, nil)
	for _, n := range []string{"a", "b", "c"} {
		c.AddNode(node(n))
	}
	snap := framework.NewEmptySnapshot()
	c.UpdateSnapshot(snap)
	if got := names(snap); got != "a,b,c" {
		t.Fatalf("order %s, want the order of addition", got)
	}
	before := map[string]framework.NodeInfo{}
	for _, ni := range snap.List() {
		before[ni.Name()] = *ni
	}
	ptrs := slices.Clone(snap.List())

	if err := c.AssumePod(pod("p", "1"), "b"); err != nil {
		t.Fatal(err)
	}
	c.UpdateSnapshot(snap)
	for i, ni := range snap.List() {
		if ni != ptrs[i] {
			t.Errorf("%s: the snapshot's NodeInfo was replaced instead of updated in place", ni.Name())
		}
		changed := ni.Generation != before[ni.Name()].Generation
		if changed != (ni.Name() == "b") {
			t.Errorf("%s: generation changed=%v; only b changed", ni.Name(), changed)
		}
	}
	// The snapshot is a copy: later cache changes do not leak into it.
	if err := c.AssumePod(pod("q", "1"), "b"); err != nil {
		t.Fatal(err)
	}
	if cpu, _ := cpuOf(snap, "b"); cpu != 1000 {
		t.Errorf("the snapshot changed without an update: %dm", cpu)
	}
	c.RemoveNode(node("a"))
	c.AddNode(node("d"))
	c.UpdateSnapshot(snap)
	if got := names(snap); got != "b,c,d" {
		t.Errorf("after removing a and adding d: %s", got)
	}
}

func names(s *framework.Snapshot) string {
	var out []string
	for _, ni := range s.List() {
		out = append(out, ni.Name())
	}
	return strings.Join(out, ",")
}
