package nodelifecycle_test

import (
	"maps"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"skiff.dev/internal/client"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/controller-manager/manager/managertest"
	"skiff.dev/services/controller-manager/nodelifecycle"
)

// start runs a node lifecycle controller with o on a fresh cluster.
func start(t *testing.T, o nodelifecycle.Options) *managertest.Env {
	t.Helper()
	env := managertest.Start(t)
	c := nodelifecycle.New(env.Manager, o)
	env.StartInformers()
	env.GoErr(c.Run)
	return env
}

// TestUnreachableNode follows one node through an outage: while its Lease is
// renewed nothing happens; when the renewals stop it becomes unreachable
// (Ready Unknown, tainted, its pods not ready), the pods that do not
// tolerate that for long are evicted and, since no agent finishes their
// graceful delete, force-deleted; a pod tolerating the taint for ever stays.
// When the renewals resume the taint goes, and the pods still there stay.
func TestUnreachableNode(t *testing.T) {
	const grace = time.Second
	env := start(t, nodelifecycle.Options{GracePeriod: grace, DefaultTolerationSeconds: 1})
	a := startAgent(t, env, "node-a")
	createReadyPod(t, env, podSpec("plain", "node-a"))                                             // the default toleration: 1 s
	createReadyPod(t, env, podSpec("patient", "node-a", unreachableToleration(proto.Int64(3600)))) // an hour
	createReadyPod(t, env, podSpec("loyal", "node-a", unreachableToleration(nil)))                 // for ever

	// Renewals for well over the grace period keep the node healthy.
	env.Await(patience, "the agent to renew for twice the grace period", func() (bool, string) {
		n := getNode(env, "node-a")
		if taints := n.GetSpec().GetTaints(); len(taints) > 0 {
			t.Fatalf("node tainted while its Lease is renewed: %v", taints)
		}
		renewed := time.Duration(a.renewals.Load()) * renewEvery
		return renewed > 2*grace, managertest.Explain("renewed for %v", renewed)
	})
	for _, name := range []string{"plain", "patient", "loyal"} {
		if p, ok := getPod(env, name); !ok || podReady(p).GetStatus() != "True" {
			t.Fatalf("pod %s on a healthy node: present %v, Ready %v", name, ok, podReady(p))
		}
	}

	a.stop()
	env.Await(patience, "node-a unreachable: tainted and Ready Unknown", func() (bool, string) {
		n := getNode(env, "node-a")
		taint := noExecuteTaint(n, nodelifecycle.TaintNodeUnreachable)
		ready := nodeCondition(n, "Ready")
		return taint != nil && taint.GetTimeAdded() != nil && ready.GetStatus() == "Unknown",
			managertest.Explain("taints %v, Ready %v", n.GetSpec().GetTaints(), ready)
	})
	ready := nodeCondition(getNode(env, "node-a"), "Ready")
	if ready.GetReason() != "NodeStatusUnknown" || ready.GetMessage() != "Kubelet stopped posting node status." {
		t.Errorf("Ready condition of the unreachable node: %v", ready)
	}
	env.Await(patience, "the pods staying on node-a to be marked not ready", func() (bool, string) {
		for _, name := range []string{"patient", "loyal"} {
			p, _ := getPod(env, name)
			if c := podReady(p); c.GetStatus() != "False" || c.GetReason() != "NodeNotReady" {
				return false, managertest.Explain("pod %s Ready %v", name, c)
			}
		}
		return true, ""
	})
	env.Await(patience, "pod plain evicted and force-deleted", func() (bool, string) {
		p, ok := getPod(env, "plain")
		return !ok, managertest.Explain("pod plain still there, deletionTimestamp %v", p.GetMetadata().GetDeletionTimestamp())
	})
	env.Await(patience, "the eviction and NodeNotReady events", func() (bool, string) {
		pe := eventReasons(env, "Pod", "default", "plain")
		ne := eventReasons(env, "Node", "", "node-a")
		return pe["TaintManagerEviction"] == "Marking for deletion Pod default/plain" && ne["NodeNotReady"] != "",
			managertest.Explain("pod events %v, node events %v", pe, ne)
	})
	if got := counter(t, env, "nodelifecycle_evictions_total", "kind", "taint"); got != 1 {
		t.Errorf("taint evictions = %v, want 1", got)
	}
	if got := counter(t, env, "nodelifecycle_evictions_total", "kind", "force"); got != 1 {
		t.Errorf("force deletions = %v, want 1", got)
	}

	a.resume()
	env.Await(patience, "node-a's taints removed once its Lease is renewed", func() (bool, string) {
		n := getNode(env, "node-a")
		return len(n.GetSpec().GetTaints()) == 0, managertest.Explain("taints %v", n.GetSpec().GetTaints())
	})
	// Ready stays the Unknown the controller wrote, for the agent to replace.
	if ready := nodeCondition(getNode(env, "node-a"), "Ready"); ready.GetStatus() != "Unknown" {
		t.Errorf("Ready after recovery = %v, want the controller's Unknown left for the agent", ready)
	}
	for _, name := range []string{"patient", "loyal"} {
		if p, ok := getPod(env, name); !ok || p.GetMetadata().GetDeletionTimestamp() != nil {
			t.Errorf("pod %s after recovery: present %v, deleting %v", name, ok, p.GetMetadata().GetDeletionTimestamp())
		}
	}
}

// TestNotReadyNode: a node whose agent posts Ready=False while renewing its
// Lease gets the not-ready taint, and its pods are evicted after their
// toleration; the agent is alive, so the graceful delete is left to it.
// When the agent posts Ready=True again the taint goes.
func TestNotReadyNode(t *testing.T) {
	env := start(t, nodelifecycle.Options{GracePeriod: 5 * time.Second, DefaultTolerationSeconds: 1})
	startAgent(t, env, "node-a")
	p := podSpec("web", "node-a")
	p.Spec.TerminationGracePeriodSeconds = proto.Int64(600)
	createReadyPod(t, env, p)

	setNodeReady(t, env, "node-a", "False")
	env.Await(patience, "node-a tainted not-ready", func() (bool, string) {
		n := getNode(env, "node-a")
		return noExecuteTaint(n, nodelifecycle.TaintNodeNotReady) != nil && noExecuteTaint(n, nodelifecycle.TaintNodeUnreachable) == nil,
			managertest.Explain("taints %v", n.GetSpec().GetTaints())
	})
	if ready := nodeCondition(getNode(env, "node-a"), "Ready"); ready.GetStatus() != "False" || ready.GetReason() != "AgentSaysFalse" {
		t.Errorf("the agent's Ready condition was changed: %v", ready)
	}
	env.Await(patience, "pod web not ready, then evicted", func() (bool, string) {
		p, ok := getPod(env, "web")
		return ok && p.GetMetadata().GetDeletionTimestamp() != nil && podReady(p).GetStatus() == "False",
			managertest.Explain("present %v, Ready %v, deletionTimestamp %v", ok, podReady(p), p.GetMetadata().GetDeletionTimestamp())
	})

	setNodeReady(t, env, "node-a", "True")
	env.Await(patience, "node-a's taints removed", func() (bool, string) {
		n := getNode(env, "node-a")
		return len(n.GetSpec().GetTaints()) == 0, managertest.Explain("taints %v", n.GetSpec().GetTaints())
	})
	if _, ok := getPod(env, "web"); !ok {
		t.Error("pod web was force-deleted although its agent is alive")
	}
}

// TestNodeWithoutLease: a node whose agent never created a Lease is judged
// from its creation, and never having posted status, gets Ready Unknown
// "NodeStatusNeverUpdated".
func TestNodeWithoutLease(t *testing.T) {
	env := start(t, nodelifecycle.Options{GracePeriod: time.Second})
	createNode(t, env, "node-a")
	env.Await(patience, "node-a unreachable", func() (bool, string) {
		n := getNode(env, "node-a")
		return noExecuteTaint(n, nodelifecycle.TaintNodeUnreachable) != nil && nodeCondition(n, "Ready").GetStatus() == "Unknown",
			managertest.Explain("taints %v, conditions %v", n.GetSpec().GetTaints(), n.GetStatus().GetConditions())
	})
}

// TestUnhealthyNodesInZone: node_collector_unhealthy_nodes_in_zone counts,
// per zone (region and zone labels), the nodes the controller judges not
// Ready, as Kubernetes' node lifecycle controller; a zone whose nodes are
// all healthy shows 0, and a zone without nodes has no series.
func TestUnhealthyNodesInZone(t *testing.T) {
	env := start(t, nodelifecycle.Options{GracePeriod: time.Second})
	a := startAgent(t, env, "node-a")
	labelNode(t, env, "node-a", map[string]string{"topology.kubernetes.io/region": "r1", "topology.kubernetes.io/zone": "z1"})
	startAgent(t, env, "node-b") // no zone labels: zone ""

	awaitZones := func(what string, want map[string]float64) {
		t.Helper()
		env.Await(patience, what, func() (bool, string) {
			got := unhealthyByZone(t, env)
			return maps.Equal(got, want), managertest.Explain("node_collector_unhealthy_nodes_in_zone %v, want %v", got, want)
		})
	}
	awaitZones("both zones healthy", map[string]float64{"r1:z1": 0, "": 0})
	a.stop()
	awaitZones("node-a's zone with one unhealthy node", map[string]float64{"r1:z1": 1, "": 0})
	a.resume()
	awaitZones("node-a healthy again", map[string]float64{"r1:z1": 0, "": 0})
	if _, err := client.Nodes(env.Conn).Delete(env.Ctx, &metav1.DeleteRequest{Name: "node-a"}); err != nil {
		t.Fatal(err)
	}
	awaitZones("node-a's zone gone with it", map[string]float64{"": 0})
}
