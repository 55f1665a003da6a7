package scheduler

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"skiff.dev/internal/client"
	"skiff.dev/services/scheduler/config"
	"skiff.dev/services/scheduler/framework"
)

// TestHundredPodsOnTenNodesNeverOvercommit: 100 pods that exactly fill 10
// nodes, created concurrently, all land, no node gets more than it has;
// the 101st waits, explained.
func TestHundredPodsOnTenNodesNeverOvercommit(t *testing.T) {
	e := newEnv(t)
	for i := range 10 {
		e.createNode(nodeSpec{name: fmt.Sprintf("n%d", i), cpu: "1", mem: "2Gi"})
	}
	e.startScheduler(Config{})

	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < 100; i += 8 {
				if _, err := client.Pods(e.conn).Create(e.ctx, newPod(fmt.Sprintf("p%03d", i), "100m", "128Mi")); err != nil {
					t.Errorf("creating p%03d: %v", i, err)
				}
			}
		}()
	}
	wg.Wait()
	e.await(20*time.Second, "all 100 pods bound", func() (bool, string) {
		bound := 0
		for _, p := range e.pods.Store().List() {
			if p.GetSpec().GetNodeName() != "" {
				bound++
			}
		}
		return bound == 100, fmt.Sprintf("%d of 100 bound", bound)
	})
	perNode := map[string]int64{}
	for _, p := range e.pods.Store().List() {
		perNode[p.GetSpec().GetNodeName()] += framework.NewPodInfo(p).Requests.MilliCPU
	}
	for n, cpu := range perNode {
		if cpu > 1000 {
			t.Errorf("node %s overcommitted: %dm of 1000m requested", n, cpu)
		}
	}
	if len(perNode) != 10 {
		t.Errorf("pods on %d nodes, want all 10: %v", len(perNode), perNode)
	}

	e.createPod(newPod("one-too-many", "100m", ""))
	const want = "FailedScheduling: 0/10 nodes are available: 10 Insufficient cpu. preemption: 0/10 nodes are available: 10 No preemption victims found for incoming pod."
	e.await(10*time.Second, "one-too-many explained", func() (bool, string) {
		evs := e.eventsFor("one-too-many")
		return slices.Contains(evs, want), fmt.Sprint(evs)
	})
	if n := e.pod("one-too-many").GetSpec().GetNodeName(); n != "" {
		t.Errorf("one-too-many bound to %s", n)
	}
}

// TestProfilesBySchedulerName: each pod is scheduled by the profile its
// spec.schedulerName names; pods for an unknown scheduler are left alone.
func TestProfilesBySchedulerName(t *testing.T) {
	e := newEnv(t)
	e.createNode(nodeSpec{name: "busy", cpu: "4", mem: "8Gi"})
	e.createNode(nodeSpec{name: "idle", cpu: "4", mem: "8Gi"})
	policy := testPolicy(t)
	packer := policy.Profiles[0]
	packer.SchedulerName = "packer"
	packer.PluginArgs = map[string]any{}
	for k, v := range policy.Profiles[0].PluginArgs {
		packer.PluginArgs[k] = v
	}
	args := *packer.PluginArgs["NodeResourcesFit"].(*config.NodeResourcesFitArgs)
	args.ScoringStrategy.Type = "MostAllocated"
	packer.PluginArgs["NodeResourcesFit"] = &args
	policy.Profiles = append(policy.Profiles, packer)
	e.startScheduler(Config{Policy: policy})

	filler := newPod("filler", "2", "1Gi")
	filler.Spec.NodeName = "busy"
	e.createPod(filler)
	for i := range 3 {
		p := newPod(fmt.Sprintf("packed-%d", i), "500m", "512Mi")
		p.Spec.SchedulerName = "packer"
		e.createPod(p)
		if n := e.nodeOf(p.Metadata.Name, 10*time.Second); n != "busy" {
			t.Errorf("%s (MostAllocated) went to %s, want the busy node", p.Metadata.Name, n)
		}
	}
	spread := newPod("spread", "500m", "512Mi")
	e.createPod(spread)
	if n := e.nodeOf("spread", 10*time.Second); n != "idle" {
		t.Errorf("spread (default profile, LeastAllocated) went to %s, want idle", n)
	}
	other := newPod("other", "100m", "")
	other.Spec.SchedulerName = "someone-else"
	e.createPod(other)
	// Give the scheduler a chance to (wrongly) act: one more pod of ours
	// placed after it proves the loop went past it.
	e.createPod(newPod("marker", "100m", ""))
	e.nodeOf("marker", 10*time.Second)
	if p := e.pod("other"); p.GetSpec().GetNodeName() != "" || len(p.GetStatus().GetConditions()) != 0 {
		t.Errorf("a pod for another scheduler was touched: %s", describePod(p))
	}
}
