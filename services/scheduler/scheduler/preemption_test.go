package scheduler

import (
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"skiff.dev/internal/client"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
)

func withPriority(p *corev1.Pod, priority int32) *corev1.Pod {
	p.Spec.Priority = &priority
	return p
}

// finishDeletions acts as the node agent: a pod being deleted gracefully
// is deleted for good at once (nothing runs it).
func (e *env) finishDeletions() {
	pods := client.Pods(e.conn)
	for _, p := range e.pods.Store().List() {
		m := p.GetMetadata()
		if m.GetDeletionTimestamp() != nil {
			_, _ = pods.Delete(e.ctx, &metav1.DeleteRequest{Namespace: m.GetNamespace(), Name: m.GetName(), GracePeriodSeconds: proto.Int64(0)})
		}
	}
}

// TestPreemption: on a full cluster of two nodes, a high-priority pod
// evicts the cheapest victims (on the node whose victim has the lowest
// priority, only as many as it needs), is nominated there and binds once
// they are gone; a pod whose preemptionPolicy is Never evicts nothing.
func TestPreemption(t *testing.T) {
	e := newEnv(t)
	e.createNode(nodeSpec{name: "n-a", cpu: "2", mem: "4Gi"})
	e.createNode(nodeSpec{name: "n-b", cpu: "2", mem: "4Gi"})
	e.startScheduler(Config{})

	low := map[string]int32{"a1": 10, "a2": 10, "b1": 5, "b2": 1}
	for name, prio := range low {
		p := withPriority(newPod(name, "1", ""), prio)
		p.Spec.NodeName = "n-" + name[:1] // placed, as the node's own pods
		e.createPod(p)
	}
	e.await(10*time.Second, "the low pods to be counted", func() (bool, string) {
		return len(e.pods.Store().List()) == 4, ""
	})

	// Never: it fits nowhere and evicts nothing.
	polite := withPriority(newPod("polite", "1", ""), 1000)
	polite.Spec.PreemptionPolicy = proto.String("Never")
	e.createPod(polite)
	e.await(10*time.Second, "polite's FailedScheduling", func() (bool, string) {
		evs := e.eventsFor("polite")
		return slices.ContainsFunc(evs, func(s string) bool {
			return strings.Contains(s, "0/2 nodes are available: 2 Insufficient cpu. preemption: not eligible due to preemptionPolicy=Never.")
		}), strings.Join(evs, "; ")
	})
	if _, err := client.Pods(e.conn).Delete(e.ctx, &metav1.DeleteRequest{Namespace: "test", Name: "polite", GracePeriodSeconds: proto.Int64(0)}); err != nil {
		t.Fatal(err)
	}
	for name := range low {
		if p := e.pod(name); p == nil || p.GetMetadata().GetDeletionTimestamp() != nil {
			t.Fatalf("a pod that may not preempt evicted %s", name)
		}
	}

	high := withPriority(newPod("high", "1", ""), 100)
	e.createPod(high)
	e.await(10*time.Second, "b2 to be preempted", func() (bool, string) {
		p := e.pod("b2")
		if p == nil {
			return true, ""
		}
		e.finishDeletions()
		return false, describePod(p)
	})
	if node := e.nodeOf("high", 10*time.Second); node != "n-b" {
		t.Errorf("high bound to %s, want n-b (its victim has the lowest priority)", node)
	}
	for _, name := range []string{"a1", "a2", "b1"} {
		if p := e.pod(name); p == nil || p.GetMetadata().GetDeletionTimestamp() != nil {
			t.Errorf("%s was evicted too", name)
		}
	}
	e.await(10*time.Second, "the Preempted event", func() (bool, string) {
		evs := e.eventsFor("b2")
		return slices.ContainsFunc(evs, func(s string) bool {
				return strings.HasPrefix(s, "Preempted: Preempted by pod ") && strings.HasSuffix(s, " on node n-b")
			}),
			strings.Join(evs, "; ")
	})
}

// TestPreemptionMarksTheVictim: a victim gets DisruptionTarget
// (PreemptionByScheduler) before its graceful deletion, and the preemptor
// status.nominatedNodeName.
func TestPreemptionMarksTheVictim(t *testing.T) {
	e := newEnv(t)
	e.createNode(nodeSpec{name: "only", cpu: "1", mem: "4Gi"})
	e.startScheduler(Config{})
	victim := withPriority(newPod("victim", "1", ""), 0)
	victim.Spec.NodeName = "only"
	e.createPod(victim)
	e.createPod(withPriority(newPod("vip", "1", ""), 50))
	e.await(10*time.Second, "the victim's condition and deletion, and the nomination", func() (bool, string) {
		v, vip := e.pod("victim"), e.pod("vip")
		if v == nil || vip == nil {
			return false, "not seen"
		}
		marked := slices.ContainsFunc(v.GetStatus().GetConditions(), func(c *corev1.PodCondition) bool {
			return c.GetType() == "DisruptionTarget" && c.GetStatus() == "True" && c.GetReason() == "PreemptionByScheduler"
		})
		return marked && v.GetMetadata().GetDeletionTimestamp() != nil && vip.GetStatus().GetNominatedNodeName() == "only",
			describePod(v) + "; " + describePod(vip) + " nominated to " + vip.GetStatus().GetNominatedNodeName()
	})
	// The vip waits for the room while the victim terminates.
	if p := e.pod("vip"); p.GetSpec().GetNodeName() != "" {
		t.Fatalf("vip bound before its victim left")
	}
	e.finishDeletions()
	if node := e.nodeOf("vip", 10*time.Second); node != "only" {
		t.Errorf("vip on %q", node)
	}
}
