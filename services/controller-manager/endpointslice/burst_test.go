package endpointslice_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"skiff.dev/internal/client"
	"skiff.dev/internal/workqueue"
	corev1 "skiff.dev/proto/core/v1"
	"skiff.dev/services/controller-manager/endpointslice"
	"skiff.dev/services/controller-manager/manager/managertest"
)

// burstServices x burstPods pods flip their readiness at once.
const (
	burstServices = 10
	burstPods     = 100
)

// TestBurstOfPodChanges: 1,000 pod status changes across 10 Services, sent
// as fast as 8 clients can, cost a handful of slice writes per Service, not
// one each: the queue holds each Service once, so the changes that arrive
// while a Service waits or syncs share its next sync.
func TestBurstOfPodChanges(t *testing.T) {
	c := start(t, endpointslice.Options{})
	writes := c.countWrites()
	c.node(t, "node-a", "")
	var specs []podSpec
	for s := range burstServices {
		sel := map[string]string{"app": fmt.Sprintf("app%d", s)}
		c.service(t, fmt.Sprintf("svc%d", s), sel, port("http", 80, 8080))
		for i := range burstPods {
			specs = append(specs, podSpec{name: fmt.Sprintf("app%d-%03d", s, i), labels: sel, node: "node-a",
				ip: fmt.Sprintf("10.%d.%d.%d", s, i/200, i%200+1), ready: true})
		}
	}
	pods := c.pods(t, specs)
	allReady := func(ready bool) func() (bool, string) {
		return func() (bool, string) {
			for s := range burstServices {
				eps, n := c.endpointsOf(fmt.Sprintf("svc%d", s))
				ok := len(eps) == burstPods && n == 1
				for _, ep := range eps {
					ok = ok && ep.ready == ready
				}
				if !ok {
					return false, fmt.Sprintf("svc%d: %d endpoints in %d slices, not all ready=%v", s, len(eps), n, ready)
				}
			}
			return true, ""
		}
	}
	c.Await(patience, "every Service's slice with its ready pods", allReady(true))

	// The controller's count and the watch's agree once every write has
	// both returned and been seen.
	settled := func() (bool, string) {
		got := c.Metric("endpoint_slice_controller_changes_total")
		return int(got) == writes.total(), fmt.Sprintf("controller counted %v writes, watch saw %d", got, writes.total())
	}
	c.Await(patience, "the controller's count of writes to match the watch's", settled)
	before := writes.total()
	syncsBefore := c.Metric("endpoint_slice_controller_syncs_total")
	start := time.Now()
	work := make(chan *corev1.Pod)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for p := range work {
				p.Status.Conditions = []*corev1.PodCondition{readyCondition(false)}
				if _, err := client.Pods(c.Conn).UpdateStatus(c.Ctx, p); err != nil {
					t.Errorf("pod %s: %v", p.GetMetadata().GetName(), err)
				}
			}
		})
	}
	for _, p := range pods {
		work <- p
	}
	close(work)
	wg.Wait()
	sent := time.Since(start)
	c.Await(patience, "every endpoint not ready", allReady(false))

	c.Await(patience, "the controller's count of writes to match the watch's", settled)
	got := writes.total() - before
	t.Logf("%d pod status changes over %d Services in %v: %d slice writes, %v syncs",
		len(pods), burstServices, sent.Round(time.Millisecond), got,
		c.Metric("endpoint_slice_controller_syncs_total")-syncsBefore)
	// One write per change would be 100 per slice. The figure depends on
	// the machine's speed (measured: 29 to 63 writes, 73 to 79 with -race); the
	// bound leaves room for a loaded machine.
	if got > 20*burstServices {
		t.Errorf("%v slice writes for %d pod changes over %d slices: want at most 20 per slice", got, len(pods), burstServices)
	}
}

// TestBatchPeriod: with a batch period, the pod changes made within it
// reach the slice in one write when it has passed, not before.
func TestBatchPeriod(t *testing.T) {
	env := managertest.Start(t)
	clock := workqueue.NewFakeClock(time.Now())
	env.Manager.Clock = clock
	c := startOn(t, env, endpointslice.Options{BatchPeriod: time.Second})
	c.node(t, "node-a", "")
	var pods []*corev1.Pod
	for i := range burstPods {
		pods = append(pods, c.pod(t, podSpec{name: fmt.Sprintf("p%03d", i), labels: web, node: "node-a", ip: fmt.Sprintf("10.0.0.%d", i+1), ready: true}))
	}
	podsCached := func(ready bool) func() (bool, string) {
		return func() (bool, string) {
			n := 0
			for _, p := range c.Pods().Store().List() {
				if p.GetStatus().GetPodIp() != "" && slices.ContainsFunc(p.GetStatus().GetConditions(), func(cd *corev1.PodCondition) bool {
					return cd.GetType() == "Ready" && (cd.GetStatus() == "True") == ready
				}) {
					n++
				}
			}
			return n == burstPods, fmt.Sprintf("%d of %d pods cached with ready=%v", n, burstPods, ready)
		}
	}
	// The Service comes after its pods are cached: its first sync, at
	// once (Service changes are not batched), finds them all.
	c.Await(patience, "pods cached", podsCached(true))
	c.service(t, "web", web, port("http", 80, 8080))
	c.Await(patience, "the first slice", func() (bool, string) {
		eps, n := c.endpointsOf("web")
		return len(eps) == burstPods, fmt.Sprintf("%d endpoints in %d slices", len(eps), n)
	})

	writes := c.countWrites()
	for _, p := range pods {
		p.Status.Conditions = []*corev1.PodCondition{readyCondition(false)}
		if _, err := client.Pods(c.Conn).UpdateStatus(c.Ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	c.Await(patience, "pods cached not ready", podsCached(false))
	ctx, cancel := context.WithTimeout(c.Ctx, patience)
	defer cancel()
	if err := clock.BlockUntilWaiters(ctx, 1); err != nil {
		t.Fatalf("no sync waits for the batch period: %v", err)
	}
	if n := writes.total(); n != 0 {
		t.Fatalf("%d writes within the batch period, want none", n)
	}
	clock.Step(time.Second)
	c.Await(patience, "every endpoint not ready", func() (bool, string) {
		eps, _ := c.endpointsOf("web")
		for _, ep := range eps {
			if ep.ready {
				return false, ep.String() + " still ready"
			}
		}
		return len(eps) == burstPods, fmt.Sprintf("%d endpoints", len(eps))
	})
	if n := writes.total(); n != 1 {
		t.Errorf("%d writes for %d pod changes within one batch period, want 1", n, burstPods)
	}
}
