package scheduler

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"google.golang.org/grpc"

	"skiff.dev/internal/client"
	"skiff.dev/internal/informer"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/apiserver/apiservertest"
)

// TestThroughput is the shape of `make bench`'s scheduler scenario, for
// profiling here: SKIFF_SCHEDULER_THROUGHPUT=1 go test -run Throughput
// -v ./scheduler/ (NODES and PODS override the sizes). Nodes of cpu 32,
// memory 256Gi, pods 110; pods requesting 100m and 128Mi, created by 32
// concurrent clients; from the first create to the last pod seen bound
// through a watch.
func TestThroughput(t *testing.T) {
	if os.Getenv("SKIFF_SCHEDULER_THROUGHPUT") == "" {
		t.Skip("set SKIFF_SCHEDULER_THROUGHPUT=1 to run")
	}
	nodes, pods := envInt("NODES", 1000), envInt("PODS", 5000)
	const clients = 32
	s := apiservertest.Start(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	conns := make([]*grpc.ClientConn, 4)
	for i := range conns {
		conns[i] = dialAddr(t, s.Addr())
	}
	parallel(clients, nodes, func(i int) {
		n, err := client.Nodes(conns[i%4]).Create(ctx, &corev1.Node{Metadata: &metav1.ObjectMeta{
			Name: fmt.Sprintf("node-%04d", i), Labels: map[string]string{"kubernetes.io/hostname": fmt.Sprintf("node-%04d", i)},
		}})
		if err != nil {
			t.Error(err)
			return
		}
		n.Status = &corev1.NodeStatus{Allocatable: map[string]string{"cpu": "32", "memory": "256Gi", "pods": "110"}}
		if _, err := client.Nodes(conns[i%4]).UpdateStatus(ctx, n); err != nil {
			t.Error(err)
		}
	})

	// The scheduler on its own connection, as its own process would be.
	schedConn := dialAddr(t, s.Addr())
	sched, err := New(schedConn, Config{Logger: zap.NewNop(), Registerer: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	sctx, scancel := context.WithCancel(ctx)
	sdone := make(chan struct{})
	go func() { defer close(sdone); _ = sched.Run(sctx) }()
	defer func() { scancel(); <-sdone }()
	<-sched.Synced()

	// The observer: when each pod is first seen bound.
	created := make([]time.Time, pods)
	boundAt := make([]time.Time, pods)
	var nBound atomic.Int64
	allBound := make(chan struct{})
	obs := informer.New(informer.FromClient(client.Pods(dialAddr(t, s.Addr()))), informer.Options{})
	obs.AddHandler(informer.Handler[*corev1.Pod]{OnUpdate: func(old, cur *corev1.Pod) {
		if old.GetSpec().GetNodeName() == "" && cur.GetSpec().GetNodeName() != "" {
			i, _ := strconv.Atoi(cur.GetMetadata().GetName()[4:])
			boundAt[i] = time.Now()
			if nBound.Add(1) == int64(pods) {
				close(allBound)
			}
		}
	}})
	octx, ocancel := context.WithCancel(ctx)
	odone := make(chan struct{})
	go func() { defer close(odone); obs.Run(octx) }()
	defer func() { ocancel(); <-odone }()
	informer.WaitForSync(ctx, obs)

	cpu0, t0 := cpuTime(), time.Now()
	parallel(clients, pods, func(i int) {
		p := &corev1.Pod{
			Metadata: &metav1.ObjectMeta{Namespace: "bench", Name: fmt.Sprintf("pod-%05d", i), Labels: map[string]string{"app": "bench"}},
			Spec: &corev1.PodSpec{Containers: []*corev1.Container{{
				Name: "c", Image: "skiff.local/demo:v1",
				Resources: &corev1.ResourceRequirements{Requests: map[string]string{"cpu": "100m", "memory": "128Mi"}},
			}}},
		}
		created[i] = time.Now()
		if _, err := client.Pods(conns[i%4]).Create(ctx, p); err != nil {
			t.Error(err)
		}
	})
	createdIn := time.Since(t0)
	select {
	case <-allBound:
	case <-time.After(5 * time.Minute):
		t.Fatalf("only %d of %d pods bound", nBound.Load(), pods)
	}
	elapsed, cpu := time.Since(t0), cpuTime()-cpu0
	lat := make([]time.Duration, pods)
	for i := range lat {
		lat[i] = boundAt[i].Sub(created[i])
	}
	slices.Sort(lat)
	t.Logf("%d pods on %d nodes: created in %.2fs, all bound in %.2fs: %.0f pods/s; create->bound p50 %v p99 %v max %v; CPU %.0f us/pod (whole process)",
		pods, nodes, createdIn.Seconds(), elapsed.Seconds(), float64(pods)/elapsed.Seconds(),
		lat[pods/2].Round(time.Millisecond), lat[pods*99/100].Round(time.Millisecond), lat[pods-1].Round(time.Millisecond),
		float64(cpu.Microseconds())/float64(pods))
	perNode := map[string]int{}
	for _, p := range obs.Store().List() {
		perNode[p.GetSpec().GetNodeName()]++
	}
	most := 0
	for _, n := range perNode {
		most = max(most, n)
	}
	t.Logf("pods spread over %d nodes, at most %d on one", len(perNode), most)
	if evs, err := client.Events(conns[0]).List(ctx, &metav1.ListOptions{Namespace: "bench"}); err == nil {
		t.Logf("%d events in namespace bench right after", len(evs.GetItems()))
	}
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

func dialAddr(t *testing.T, addr string) *grpc.ClientConn {
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecureCreds()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// parallel runs fn(0..n-1) on workers goroutines.
func parallel(workers, n int, fn func(i int)) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				fn(i)
			}
		}()
	}
	wg.Wait()
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
