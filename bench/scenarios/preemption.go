package scenarios

import (
	"context"
	"fmt"
	"sync"
	"time"

	"go.uber.org/zap"
	"google.golang.org/protobuf/proto"

	"skiff.dev/internal/apierrors"
	"skiff.dev/internal/client"
	"skiff.dev/internal/informer"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	schedulingv1 "skiff.dev/proto/scheduling/v1"
	"skiff.dev/services/scheduler/scheduler"
)

// The preemption figures: SchedNodes (1,000) nodes, each full with one
// low-priority pod; high-priority pods created one at a time each evict a
// victim (the real scheduler's DefaultPreemption) and bind once it is gone
// (the benchmark acts as the node agents: it finishes a victim's graceful
// deletion at once).
var (
	figPreemptP50 = Figure{Name: "scheduler.preemption_p50_ms", Unit: "ms"}
	figPreemptP99 = Figure{Name: "scheduler.preemption_p99_ms", Unit: "ms", Target: AtMost(1000)}
	figPreemptCPU = Figure{Name: "scheduler.preemption_cpu_us", Unit: "us CPU/preemption"}
)

const (
	preemptionNamespace = "preemption-bench"
	// preemptionNodeLabel marks the scenario's nodes (other scenarios
	// leave roomy nodes behind): its pods select them.
	preemptionNodeLabel = "bench.skiff.dev/preemption"
	// preemptionPods is how many high-priority pods are timed.
	preemptionPods = 50
)

func preemptionScenario() *Scenario {
	return &Scenario{
		Name:    "scheduler.preemption",
		Summary: "1,000 nodes (cpu 1) each full with a low-priority pod; 50 high-priority pods created one by one, each preempting a victim; create to bound",
		Figures: []Figure{figPreemptP50, figPreemptP99, figPreemptCPU},
		Run:     runPreemption,
	}
}

func runPreemption(ctx context.Context, env *Env, rs *Results) error {
	cfg := env.Config
	nNodes := cfg.SchedNodes
	if nNodes <= 0 {
		return fmt.Errorf("nothing to measure: %d nodes", nNodes)
	}
	// Connections as separate processes would have them: the writers, the
	// scheduler, the node agents, the observer.
	conns, err := env.dial(4)
	if err != nil {
		return err
	}
	defer closeAll(conns)
	writeConn, schedConn, nodeConn, obsConn := conns[0], conns[1], conns[2], conns[3]
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	if _, err := client.Namespaces(writeConn).Create(ctx, &corev1.Namespace{Metadata: &metav1.ObjectMeta{Name: preemptionNamespace}}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating namespace %s: %w", preemptionNamespace, err)
	}
	classes := client.PriorityClasses(writeConn)
	for name, value := range map[string]int32{"bench-low": 10, "bench-high": 1000} {
		_, err := classes.Create(ctx, &schedulingv1.PriorityClass{Metadata: &metav1.ObjectMeta{Name: name}, Value: value})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating PriorityClass %s: %w", name, err)
		}
	}
	pod := func(name, class string, priority int32) *corev1.Pod {
		return &corev1.Pod{
			Metadata: &metav1.ObjectMeta{Namespace: preemptionNamespace, Name: name},
			Spec: &corev1.PodSpec{
				PriorityClassName: class, Priority: proto.Int32(priority),
				NodeSelector: map[string]string{preemptionNodeLabel: "true"},
				Containers: []*corev1.Container{{Name: "c", Image: "skiff.local/demo:v1",
					Resources: &corev1.ResourceRequirements{Requests: map[string]string{"cpu": "1", "memory": "128Mi"}}}},
			},
		}
	}

	env.logf("scheduler.preemption: %d nodes, each with a low-priority pod", nNodes)
	if err := inParallel(ctx, cfg.SchedClients, nNodes, func(ctx context.Context, i int) error {
		nodes := client.Nodes(writeConn)
		name := fmt.Sprintf("preempt-node-%04d", i)
		n, err := nodes.Create(ctx, &corev1.Node{Metadata: &metav1.ObjectMeta{Name: name,
			Labels: map[string]string{"kubernetes.io/hostname": name, preemptionNodeLabel: "true"}}})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
		if err == nil {
			n.Status = &corev1.NodeStatus{Allocatable: map[string]string{"cpu": "1", "memory": "4Gi", "pods": "110"}}
			if _, err := nodes.UpdateStatus(ctx, n); err != nil {
				return err
			}
		}
		low := pod(fmt.Sprintf("low-%04d", i), "bench-low", 10)
		low.Spec.NodeName = name // placed, as a node's own pod
		_, err = client.Pods(writeConn).Create(ctx, low)
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		return err
	}); err != nil {
		return fmt.Errorf("filling the nodes: %w", err)
	}

	// The node agents: a victim's graceful deletion is finished at once.
	agent := informer.New(informer.FromClient(client.Pods(nodeConn)), informer.Options{ListOptions: &metav1.ListOptions{Namespace: preemptionNamespace}})
	var agentWG sync.WaitGroup
	agent.AddHandler(informer.Handler[*corev1.Pod]{OnUpdate: func(old, cur *corev1.Pod) {
		m := cur.GetMetadata()
		if old.GetMetadata().GetDeletionTimestamp() != nil || m.GetDeletionTimestamp() == nil {
			return
		}
		agentWG.Add(1)
		go func() {
			defer agentWG.Done()
			_, _ = client.Pods(nodeConn).Delete(ctx, &metav1.DeleteRequest{Namespace: m.GetNamespace(), Name: m.GetName(),
				GracePeriodSeconds: proto.Int64(0), Preconditions: &metav1.Preconditions{Uid: m.GetUid()}})
		}()
	}})
	// The observer: each high pod's bind.
	var mu sync.Mutex
	bound := map[string]chan struct{}{}
	obs := informer.New(informer.FromClient(client.Pods(obsConn)), informer.Options{ListOptions: &metav1.ListOptions{Namespace: preemptionNamespace}})
	obs.AddHandler(informer.Handler[*corev1.Pod]{OnUpdate: func(old, cur *corev1.Pod) {
		if old.GetSpec().GetNodeName() != "" || cur.GetSpec().GetNodeName() == "" {
			return
		}
		mu.Lock()
		if ch, ok := bound[cur.GetMetadata().GetName()]; ok {
			close(ch)
			delete(bound, cur.GetMetadata().GetName())
		}
		mu.Unlock()
	}})
	sched, err := scheduler.New(schedConn, scheduler.Config{Logger: zap.NewNop()})
	if err != nil {
		return err
	}
	var bg sync.WaitGroup
	for _, run := range []func(context.Context){func(ctx context.Context) { _ = sched.Run(ctx) }, agent.Run, obs.Run} {
		bg.Add(1)
		go func() { defer bg.Done(); run(ctx) }()
	}
	defer func() { cancel(); bg.Wait(); agentWG.Wait() }()
	select {
	case <-sched.Synced():
	case <-ctx.Done():
		return ctx.Err()
	}
	if !informer.WaitForSync(ctx, agent, obs) {
		return ctx.Err()
	}

	// Each high pod takes a node for good: no more of them than nodes.
	n := min(preemptionPods, nNodes)
	env.logf("scheduler.preemption: %d high-priority pods, one at a time", n)
	settle()
	var lat Histogram
	cpu0 := cpuTime()
	for i := range n {
		name := fmt.Sprintf("high-%04d", i)
		ch := make(chan struct{})
		mu.Lock()
		bound[name] = ch
		mu.Unlock()
		start := time.Now()
		if _, err := client.Pods(writeConn).Create(ctx, pod(name, "bench-high", 1000)); err != nil {
			return fmt.Errorf("creating %s: %w", name, err)
		}
		timeout := time.NewTimer(cfg.SchedTimeout)
		select {
		case <-ch:
			timeout.Stop()
		case <-timeout.C:
			return fmt.Errorf("%s not bound after %v", name, cfg.SchedTimeout)
		case <-ctx.Done():
			timeout.Stop()
			return ctx.Err()
		}
		lat.Record(time.Since(start))
	}
	cpu := cpuTime() - cpu0
	rs.Add(figPreemptP50, ms(lat.Percentile(50)), "from each high pod's Create to its bind seen through a watch (a victim evicted and gone meanwhile)")
	rs.Add(figPreemptP99, ms(lat.Percentile(99)), latencyNote(&lat, "preemptions"))
	rs.Add(figPreemptCPU, float64(cpu.Microseconds())/float64(n),
		fmt.Sprintf("process CPU (apiserver + etcd + scheduler + simulated agents + observer) / preemption, %d nodes", nNodes))
	return nil
}
