package scenarios

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"skiff.dev/internal/apierrors"
	"skiff.dev/internal/client"
	"skiff.dev/internal/informer"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/scheduler/scheduler"
)

// The scheduler figures: the real scheduler (in this process, on its own
// connection) places pods created by concurrent clients on many nodes.
var (
	figSchedPodsPerS = Figure{Name: "scheduler.pods_per_s", Unit: "pods/s", Target: AtLeast(1000)}
	figSchedP50      = Figure{Name: "scheduler.create_to_bound_p50_ms", Unit: "ms"}
	figSchedP99      = Figure{Name: "scheduler.create_to_bound_p99_ms", Unit: "ms", Target: AtMost(1000)}
	figSchedCPU      = Figure{Name: "scheduler.cpu_us_per_pod", Unit: "us CPU/pod"}
)

const schedulerNamespace = "scheduler-bench"

func schedulerScenario() *Scenario {
	return &Scenario{
		Name:    "scheduler",
		Summary: "1,000 nodes (cpu 32, memory 256Gi, pods 110); 5,000 pods requesting 100m and 128Mi created by 32 clients; the scheduler binds them",
		Figures: []Figure{figSchedPodsPerS, figSchedP50, figSchedP99, figSchedCPU},
		Run:     runScheduler,
	}
}

func runScheduler(ctx context.Context, env *Env, rs *Results) error {
	n := env.Config.SchedPods
	m, err := measureScheduling(ctx, env, "scheduler", schedulerNamespace, func(i int) *corev1.Pod {
		return benchPod(schedulerNamespace, i, map[string]string{"app": "sched-bench"})
	})
	if err != nil {
		return err
	}
	rs.Add(figSchedPodsPerS, float64(n)/m.elapsed.Seconds(), fmt.Sprintf("%d pods on %d nodes, from the first create to the last bind seen through a watch: %.2fs", n, env.Config.SchedNodes, m.elapsed.Seconds()))
	rs.Add(figSchedP50, ms(m.lat.Percentile(50)), "from each Create's call to its pod seen bound")
	rs.Add(figSchedP99, ms(m.lat.Percentile(99)), latencyNote(&m.lat, "pods"))
	rs.Add(figSchedCPU, float64(m.cpu.Microseconds())/float64(n), "process CPU (apiserver + etcd + scheduler + clients + observer) / pods")
	return nil
}

// benchPod is the i-th pod a scheduler scenario creates: pod-NNNNN in
// namespace with labels, requesting 100m and 128Mi.
func benchPod(namespace string, i int, labels map[string]string) *corev1.Pod {
	return &corev1.Pod{
		Metadata: &metav1.ObjectMeta{Namespace: namespace, Name: fmt.Sprintf("pod-%05d", i), Labels: labels},
		Spec: &corev1.PodSpec{Containers: []*corev1.Container{{
			Name: "c", Image: "skiff.local/demo:v1",
			Resources: &corev1.ResourceRequirements{Requests: map[string]string{"cpu": "100m", "memory": "128Mi"}},
		}}},
	}
}

// schedMeasure is what measureScheduling saw.
type schedMeasure struct {
	elapsed time.Duration // first create to last bind seen
	cpu     time.Duration // process CPU meanwhile
	lat     Histogram     // each pod's create to bind seen
}

// measureScheduling makes sure the SchedNodes nodes exist (the scenarios
// share them), starts the real scheduler on its own connection, has
// SchedClients clients create SchedPods pods (makePod(i), named pod-NNNNN
// in namespace), and waits until a watch sees every one bound.
func measureScheduling(ctx context.Context, env *Env, name, namespace string, makePod func(i int) *corev1.Pod) (*schedMeasure, error) {
	cfg := env.Config
	if cfg.SchedNodes <= 0 || cfg.SchedPods <= 0 {
		return nil, fmt.Errorf("nothing to measure: %d nodes, %d pods", cfg.SchedNodes, cfg.SchedPods)
	}
	// Connections as separate processes would have them: the pod creators,
	// the scheduler, the observer.
	conns, err := env.dial(max(cfg.Conns, 1) + 2)
	if err != nil {
		return nil, err
	}
	defer closeAll(conns)
	writers, schedConn, obsConn := conns[:len(conns)-2], conns[len(conns)-2], conns[len(conns)-1]
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	env.logf("%s: creating %d nodes (those not there yet)", name, cfg.SchedNodes)
	if err := inParallel(ctx, cfg.SchedClients, cfg.SchedNodes, func(ctx context.Context, i int) error {
		nodes := client.Nodes(writers[i%len(writers)])
		name := fmt.Sprintf("sched-node-%04d", i)
		n, err := nodes.Create(ctx, &corev1.Node{Metadata: &metav1.ObjectMeta{Name: name, Labels: map[string]string{"kubernetes.io/hostname": name}}})
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		if err != nil {
			return err
		}
		n.Status = &corev1.NodeStatus{Allocatable: map[string]string{"cpu": "32", "memory": "256Gi", "pods": "110"}}
		_, err = nodes.UpdateStatus(ctx, n)
		return err
	}); err != nil {
		return nil, fmt.Errorf("creating nodes: %w", err)
	}

	sched, err := scheduler.New(schedConn, scheduler.Config{Logger: zap.NewNop()})
	if err != nil {
		return nil, err
	}
	schedDone := make(chan struct{})
	go func() { defer close(schedDone); _ = sched.Run(ctx) }()
	defer func() { cancel(); <-schedDone }()

	// The observer: when each pod is first seen bound.
	n := cfg.SchedPods
	created := make([]time.Time, n)
	boundAt := make([]time.Time, n)
	var bound atomic.Int64
	allBound := make(chan struct{})
	obs := informer.New(informer.FromClient(client.Pods(obsConn)), informer.Options{ListOptions: &metav1.ListOptions{Namespace: namespace}})
	obs.AddHandler(informer.Handler[*corev1.Pod]{OnUpdate: func(old, cur *corev1.Pod) {
		if old.GetSpec().GetNodeName() != "" || cur.GetSpec().GetNodeName() == "" {
			return
		}
		i, err := strconv.Atoi(strings.TrimPrefix(cur.GetMetadata().GetName(), "pod-"))
		if err != nil || i < 0 || i >= n {
			return
		}
		boundAt[i] = time.Now()
		if bound.Add(1) == int64(n) {
			close(allBound)
		}
	}})
	obsDone := make(chan struct{})
	go func() { defer close(obsDone); obs.Run(ctx) }()
	defer func() { cancel(); <-obsDone }()
	select {
	case <-sched.Synced():
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if !informer.WaitForSync(ctx, obs) {
		return nil, ctx.Err()
	}

	env.logf("%s: %d clients create %d pods", name, cfg.SchedClients, n)
	settle()
	cpu0, t0 := cpuTime(), time.Now()
	if err := inParallel(ctx, cfg.SchedClients, n, func(ctx context.Context, i int) error {
		created[i] = time.Now()
		_, err := client.Pods(writers[i%len(writers)]).Create(ctx, makePod(i))
		return err
	}); err != nil {
		return nil, fmt.Errorf("creating pods: %w", err)
	}
	timeout := time.NewTimer(cfg.SchedTimeout)
	defer timeout.Stop()
	select {
	case <-allBound:
	case <-timeout.C:
		return nil, fmt.Errorf("after %v only %d of %d pods were bound", cfg.SchedTimeout, bound.Load(), n)
	}
	m := &schedMeasure{elapsed: time.Since(t0), cpu: cpuTime() - cpu0}
	for i := range n {
		m.lat.Record(boundAt[i].Sub(created[i]))
	}
	return m, nil
}

// inParallel runs fn(ctx, 0..n-1) on workers goroutines and returns the
// errors (the first stops the rest).
func inParallel(ctx context.Context, workers, n int, fn func(ctx context.Context, i int) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var next atomic.Int64
	var mu sync.Mutex
	var errs []error
	var wg sync.WaitGroup
	for range max(workers, 1) {
		wg.Go(func() {
			for ctx.Err() == nil {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				if err := fn(ctx, i); err != nil {
					mu.Lock()
					errs = append(errs, fmt.Errorf("item %d: %w", i, err))
					mu.Unlock()
					cancel()
				}
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}
