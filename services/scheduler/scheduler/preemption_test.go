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
	policyv1 "skiff.dev/proto/policy/v1"
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

// TestPreemptionRespectsPodDisruptionBudgets: through the real apiserver
// and scheduler, a high-priority pod on a full cluster of two nodes
// evicts the victim whose eviction no PodDisruptionBudget forbids, even
// though the other node's victim has the lower priority (Kubernetes picks
// the node with the fewest budget violations first).
func TestPreemptionRespectsPodDisruptionBudgets(t *testing.T) {
	e := newEnv(t)
	e.createNode(nodeSpec{name: "n-a", cpu: "1", mem: "4Gi"})
	e.createNode(nodeSpec{name: "n-b", cpu: "1", mem: "4Gi"})

	// a1's budget allows no disruption (its status as the disruption
	// controller would write it for one healthy pod of minAvailable 1).
	pdbs := client.PodDisruptionBudgets(e.conn)
	one := &metav1.IntOrString{Value: &metav1.IntOrString_IntVal{IntVal: 1}}
	pdb, err := pdbs.Create(e.ctx, &policyv1.PodDisruptionBudget{
		Metadata: &metav1.ObjectMeta{Namespace: "test", Name: "guarded"},
		Spec:     &policyv1.PodDisruptionBudgetSpec{MinAvailable: one, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "guarded"}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	pdb.Status = &policyv1.PodDisruptionBudgetStatus{ObservedGeneration: pdb.GetMetadata().GetGeneration(), CurrentHealthy: 1, DesiredHealthy: 1, ExpectedPods: 1, DisruptionsAllowed: 0}
	if _, err := pdbs.UpdateStatus(e.ctx, pdb); err != nil {
		t.Fatal(err)
	}
	a1 := withPriority(newPod("a1", "1", ""), 1)
	a1.Metadata.Labels["app"] = "guarded"
	a1.Spec.NodeName = "n-a"
	e.createPod(a1)
	b1 := withPriority(newPod("b1", "1", ""), 5)
	b1.Spec.NodeName = "n-b"
	e.createPod(b1)
	e.startScheduler(Config{})
	e.await(10*time.Second, "the low pods to be counted", func() (bool, string) {
		return len(e.pods.Store().List()) == 2, ""
	})

	e.createPod(withPriority(newPod("high", "1", ""), 100))
	e.await(10*time.Second, "b1 to be preempted", func() (bool, string) {
		p := e.pod("b1")
		if p == nil {
			return true, ""
		}
		e.finishDeletions()
		return false, describePod(p)
	})
	if node := e.nodeOf("high", 10*time.Second); node != "n-b" {
		t.Errorf("high bound to %s, want n-b (a1 on n-a is guarded by a budget)", node)
	}
	if p := e.pod("a1"); p == nil || p.GetMetadata().GetDeletionTimestamp() != nil {
		t.Error("a1, whose budget allows no disruption, was evicted")
	}
}
