package scheduler

import (
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
)

// Preemption where the obstacle is not room but InterPodAffinity or
// PodTopologySpread: the dry run removes the victims from those plugins'
// PreFilter state (PreFilterExtensions.RemovePod), so the preemptor finds
// them, as Kubernetes' does.

// awaitEvicted waits until every pod of names is being deleted (or gone),
// finishing the deletions as the node agent would.
func (e *env) awaitEvicted(names ...string) {
	e.t.Helper()
	e.await(10*time.Second, strings.Join(names, ", ")+" to be preempted", func() (bool, string) {
		var left []string
		for _, name := range names {
			if p := e.pod(name); p != nil {
				left = append(left, describePod(p))
			}
		}
		e.finishDeletions()
		return len(left) == 0, strings.Join(left, "; ")
	})
}

func withAntiAffinity(p *corev1.Pod, app string) *corev1.Pod {
	p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: []*corev1.PodAffinityTerm{affinityTerm(app)},
	}}
	return p
}

// TestPreemptionOfAntiAffinity: a node with room to spare whose only
// obstacle is a lower-priority pod's anti-affinity (its own, against the
// preemptor's labels, or the preemptor's against it): the preemptor evicts
// that pod and binds there; the node's other pods stay.
func TestPreemptionOfAntiAffinity(t *testing.T) {
	for _, tc := range []struct {
		name string
		// obstacle is the low-priority pod in the way; vip the preemptor.
		obstacle, vip *corev1.Pod
	}{{
		name:     "existing pod's anti-affinity",
		obstacle: withAntiAffinity(newPod("loner", "100m", ""), "vip"),
		vip:      newPod("vip", "100m", ""),
	}, {
		name:     "preemptor's anti-affinity",
		obstacle: newPod("loner", "100m", ""),
		vip:      withAntiAffinity(newPod("vip", "100m", ""), "loner"),
	}} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			e.createNode(nodeSpec{name: "only", cpu: "4", mem: "4Gi"})
			e.startScheduler(Config{})
			bystander := withPriority(newPod("bystander", "100m", ""), 0)
			bystander.Spec.NodeName = "only"
			e.createPod(bystander)
			loner := withPriority(tc.obstacle, 0)
			loner.Metadata.Labels["app"] = "loner"
			loner.Spec.NodeName = "only"
			e.createPod(loner)
			e.await(10*time.Second, "the placed pods to be counted", func() (bool, string) {
				return len(e.pods.Store().List()) == 2, ""
			})
			vip := withPriority(tc.vip, 100)
			vip.Metadata.Labels["app"] = "vip"
			e.createPod(vip)

			e.awaitEvicted("loner")
			if node := e.nodeOf("vip", 10*time.Second); node != "only" {
				t.Errorf("vip on %q, want only", node)
			}
			if p := e.pod("bystander"); p == nil || p.GetMetadata().GetDeletionTimestamp() != nil {
				t.Errorf("bystander was evicted too: it was not in the way")
			}
		})
	}
}

// TestPreemptionOfTopologySpread: maxSkew 1 (DoNotSchedule) by host,
// with three low-priority web pods on n1 and one high-priority web pod
// filling n2: the preemptor may only go to n1, once two of the three are
// gone (n1 2, n2 1); the most important of the three stays.
func TestPreemptionOfTopologySpread(t *testing.T) {
	e := newEnv(t)
	e.createNode(nodeSpec{name: "n1", cpu: "4", mem: "4Gi"})
	e.createNode(nodeSpec{name: "n2", cpu: "1", mem: "4Gi"})
	e.startScheduler(Config{})
	web := func(name, cpu string, priority int32, node string) *corev1.Pod {
		p := withPriority(newPod(name, cpu, ""), priority)
		p.Metadata.Labels["app"] = "web"
		p.Spec.NodeName = node
		return p
	}
	e.createPod(web("big", "1", 1000, "n2"))
	for i, name := range []string{"w1", "w2", "w3"} {
		e.createPod(web(name, "100m", int32(3-i), "n1"))
	}
	e.await(10*time.Second, "the placed pods to be counted", func() (bool, string) {
		return len(e.pods.Store().List()) == 4, ""
	})
	vip := web("vip", "100m", 100, "")
	vip.Spec.TopologySpreadConstraints = []*corev1.TopologySpreadConstraint{{
		MaxSkew: 1, TopologyKey: "kubernetes.io/hostname", WhenUnsatisfiable: "DoNotSchedule",
		LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
	}}
	e.createPod(vip)

	e.awaitEvicted("w2", "w3")
	if node := e.nodeOf("vip", 10*time.Second); node != "n1" {
		t.Errorf("vip on %q, want n1", node)
	}
	for _, name := range []string{"w1", "big"} {
		if p := e.pod(name); p == nil || p.GetMetadata().GetDeletionTimestamp() != nil {
			t.Errorf("%s was evicted too", name)
		}
	}
}

// TestNominatedPodsAntiAffinity: a pod nominated to a node (its victim
// still terminating) counts there for the anti-affinity of the pods of
// lower priority, as if it were bound: a pod that may not share a host
// with it stays off that node; once the victim is gone the nominated pod
// binds and the other stays pending.
func TestNominatedPodsAntiAffinity(t *testing.T) {
	e := newEnv(t)
	e.createNode(nodeSpec{name: "only", cpu: "1", mem: "4Gi"})
	e.startScheduler(Config{})
	victim := withPriority(newPod("victim", "1", ""), 0)
	victim.Spec.NodeName = "only"
	e.createPod(victim)
	e.await(10*time.Second, "the victim to be counted", func() (bool, string) {
		return e.pod("victim") != nil, ""
	})
	vip := withPriority(newPod("vip", "1", ""), 100)
	vip.Metadata.Labels["app"] = "vip"
	e.createPod(vip)
	e.await(10*time.Second, "vip's nomination", func() (bool, string) {
		vip := e.pod("vip")
		return vip.GetStatus().GetNominatedNodeName() == "only", describePod(vip)
	})

	// x requests nothing, so room does not keep it off: its
	// anti-affinity against the nominated vip does.
	e.createPod(withPriority(withAntiAffinity(newPod("x", "", ""), "vip"), 50))
	e.await(10*time.Second, "x's FailedScheduling", func() (bool, string) {
		evs := e.eventsFor("x")
		return slices.ContainsFunc(evs, func(s string) bool {
			return strings.HasPrefix(s, "FailedScheduling: 0/1 nodes are available: 1 node(s) didn't match pod anti-affinity rules.")
		}), strings.Join(evs, "; ")
	})
	if n := e.pod("x").GetSpec().GetNodeName(); n != "" {
		t.Fatalf("x bound to %s beside the nominated vip", n)
	}
	e.finishDeletions()
	if node := e.nodeOf("vip", 10*time.Second); node != "only" {
		t.Errorf("vip on %q, want only", node)
	}
	if n := e.pod("x").GetSpec().GetNodeName(); n != "" {
		t.Errorf("x bound to %s beside vip", n)
	}
}
