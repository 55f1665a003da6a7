package scheduler

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
)

// TestPodsLandWhereTheyMust: requests, selectors, affinity, tolerations and
// spread constraints, against a real apiserver.
func TestPodsLandWhereTheyMust(t *testing.T) {
	e := newEnv(t)
	gpuTaint := &corev1.Taint{Key: "dedicated", Value: "gpu", Effect: "NoSchedule"}
	for _, n := range []nodeSpec{
		{name: "small-a", cpu: "1", mem: "2Gi", labels: map[string]string{"zone": "a"}},
		{name: "small-b", cpu: "1", mem: "2Gi", labels: map[string]string{"zone": "b"}},
		{name: "big-a", cpu: "8", mem: "16Gi", labels: map[string]string{"zone": "a"}},
		{name: "ssd-b", cpu: "2", mem: "4Gi", labels: map[string]string{"zone": "b", "disk": "ssd"}},
		{name: "gpu-b", cpu: "8", mem: "16Gi", labels: map[string]string{"zone": "b", "gpu": "true"}, taints: []*corev1.Taint{gpuTaint}},
	} {
		e.createNode(n)
	}
	e.startScheduler(Config{})

	big := newPod("big", "4", "1Gi")
	selector := newPod("selector", "100m", "")
	selector.Spec.NodeSelector = map[string]string{"disk": "ssd"}
	affinity := newPod("affinity", "100m", "")
	affinity.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []*corev1.NodeSelectorTerm{{
			MatchExpressions: []*corev1.NodeSelectorRequirement{
				{Key: "zone", Operator: "In", Values: []string{"a"}},
				{Key: "kubernetes.io/hostname", Operator: "NotIn", Values: []string{"big-a"}},
			},
		}}},
	}}
	preferred := newPod("preferred", "100m", "")
	preferred.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
		PreferredDuringSchedulingIgnoredDuringExecution: []*corev1.PreferredSchedulingTerm{{
			Weight: 100, Preference: &corev1.NodeSelectorTerm{MatchExpressions: []*corev1.NodeSelectorRequirement{{Key: "disk", Operator: "Exists"}}},
		}},
	}}
	tolerant := newPod("tolerant", "100m", "")
	tolerant.Spec.NodeSelector = map[string]string{"gpu": "true"}
	tolerant.Spec.Tolerations = []*corev1.Toleration{{Key: "dedicated", Operator: "Equal", Value: "gpu", Effect: "NoSchedule"}}

	want := map[string]func(node string) bool{
		"big":       func(n string) bool { return n == "big-a" }, // gpu-b is tainted, others too small
		"selector":  func(n string) bool { return n == "ssd-b" },
		"affinity":  func(n string) bool { return n == "small-a" },
		"preferred": func(n string) bool { return n == "ssd-b" },
		"tolerant":  func(n string) bool { return n == "gpu-b" },
	}
	for _, p := range []*corev1.Pod{big, selector, affinity, preferred, tolerant} {
		e.createPod(p)
	}
	// Spread: six web pods, maxSkew 1 over zones, must split 3/3 (never
	// onto the tainted gpu node).
	for i := range 6 {
		p := newPod(fmt.Sprintf("web-%d", i), "100m", "")
		p.Metadata.Labels["app"] = "web"
		p.Spec.TopologySpreadConstraints = []*corev1.TopologySpreadConstraint{{
			MaxSkew: 1, TopologyKey: "zone", WhenUnsatisfiable: "DoNotSchedule",
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
		}}
		e.createPod(p)
	}

	for name, ok := range want {
		if n := e.nodeOf(name, 15*time.Second); !ok(n) {
			t.Errorf("pod %s landed on %s", name, n)
		}
	}
	zones := map[string]int{}
	for i := range 6 {
		n := e.nodeOf(fmt.Sprintf("web-%d", i), 15*time.Second)
		if n == "gpu-b" {
			t.Errorf("web-%d landed on the tainted node", i)
		}
		zones[strings.TrimPrefix(strings.TrimPrefix(strings.TrimPrefix(n, "small-"), "big-"), "ssd-")]++
	}
	if zones["a"] != 3 || zones["b"] != 3 {
		t.Errorf("web pods per zone %v, want 3 and 3", zones)
	}
	// A placed pod gets a Scheduled event.
	e.await(10*time.Second, "a Scheduled event for big", func() (bool, string) {
		evs := e.eventsFor("big")
		return slices.Contains(evs, "Scheduled: Successfully assigned test/big to big-a"), fmt.Sprint(evs)
	})
}

// TestUnschedulablePodIsPlacedOnceANodeFits: a pod too big for every node
// is explained (event and condition), then placed when a node that fits
// is added.
func TestUnschedulablePodIsPlacedOnceANodeFits(t *testing.T) {
	e := newEnv(t)
	gpuTaint := &corev1.Taint{Key: "dedicated", Value: "gpu", Effect: "NoSchedule"}
	e.createNode(nodeSpec{name: "n1", cpu: "2", mem: "4Gi"})
	e.createNode(nodeSpec{name: "n2", cpu: "2", mem: "4Gi"})
	e.createNode(nodeSpec{name: "n3", cpu: "2", mem: "4Gi"})
	e.createNode(nodeSpec{name: "g1", cpu: "32", mem: "64Gi", taints: []*corev1.Taint{gpuTaint}})
	e.createNode(nodeSpec{name: "g2", cpu: "32", mem: "64Gi", taints: []*corev1.Taint{gpuTaint}})
	e.startScheduler(Config{})
	e.createPod(newPod("huge", "4", "1Gi"))

	const want = "0/5 nodes are available: 3 Insufficient cpu, 2 node(s) had untolerated taint {dedicated: gpu}. preemption: 0/5 nodes are available: 3 No preemption victims found for incoming pod, 2 Preemption is not helpful for scheduling."
	e.await(10*time.Second, "a FailedScheduling event", func() (bool, string) {
		evs := e.eventsFor("huge")
		return slices.Contains(evs, "FailedScheduling: "+want), fmt.Sprint(evs)
	})
	e.await(10*time.Second, "PodScheduled=False", func() (bool, string) {
		p := e.pod("huge")
		for _, c := range p.GetStatus().GetConditions() {
			if c.GetType() == "PodScheduled" && c.GetStatus() == "False" && c.GetReason() == "Unschedulable" && c.GetMessage() == want {
				return true, ""
			}
		}
		return false, describePod(p)
	})
	if n := e.pod("huge").GetSpec().GetNodeName(); n != "" {
		t.Fatalf("bound to %s", n)
	}

	e.createNode(nodeSpec{name: "big", cpu: "8", mem: "16Gi"})
	if n := e.nodeOf("huge", 10*time.Second); n != "big" {
		t.Errorf("bound to %s, want big", n)
	}
	e.await(10*time.Second, "PodScheduled=True", func() (bool, string) {
		p := e.pod("huge")
		for _, c := range p.GetStatus().GetConditions() {
			if c.GetType() == "PodScheduled" && c.GetStatus() == "True" {
				return true, ""
			}
		}
		return false, describePod(p)
	})
}

// TestSpreadWaitsForAPodElsewhere: a pod that would skew its zones waits
// unschedulable, and is placed as soon as a pod lands in the other zone.
func TestSpreadWaitsForAPodElsewhere(t *testing.T) {
	e := newEnv(t)
	e.createNode(nodeSpec{name: "a1", cpu: "4", mem: "4Gi", labels: map[string]string{"zone": "a"}})
	e.createNode(nodeSpec{name: "b1", cpu: "1", mem: "4Gi", labels: map[string]string{"zone": "b"}})
	web := func(name, node string) *corev1.Pod {
		p := newPod(name, "100m", "")
		p.Metadata.Labels["app"] = "web"
		p.Spec.NodeName = node
		return p
	}
	filler := newPod("filler", "1", "")
	filler.Spec.NodeName = "b1"
	e.createPod(filler)
	e.createPod(web("w1", "a1"))
	e.startScheduler(Config{})

	p := web("spread", "")
	p.Spec.TopologySpreadConstraints = []*corev1.TopologySpreadConstraint{{
		MaxSkew: 1, TopologyKey: "zone", WhenUnsatisfiable: "DoNotSchedule",
		LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
	}}
	e.createPod(p)
	e.await(10*time.Second, "spread explained", func() (bool, string) {
		evs := e.eventsFor("spread")
		return slices.Contains(evs, "FailedScheduling: 0/2 nodes are available: 1 Insufficient cpu, 1 node(s) didn't match pod topology spread constraints. preemption: 0/2 nodes are available: 2 No preemption victims found for incoming pod."), fmt.Sprint(evs)
	})
	// Zone b gets its web pod (bound by hand, over capacity): zone a may
	// take one more. The pod waited as unschedulable; only this event can
	// bring it back before the 5-minute retry.
	e.createPod(web("w2", "b1"))
	if n := e.nodeOf("spread", 5*time.Second); n != "a1" {
		t.Errorf("spread went to %s", n)
	}
}
