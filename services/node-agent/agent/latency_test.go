package agent

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"skiff.dev/internal/informer"
	corev1 "skiff.dev/proto/core/v1"
	"skiff.dev/services/node-agent/crienv"
)

// TestContainerdPodStartLatency measures what the benchmark measures, in
// small: n one-container pods created at once, from Create to Running seen
// through a watch, against crienv's bare CRI loop on the same containerd.
// It only runs with SKIFF_NODE_LATENCY=1 (it is a measurement, not a
// check): go test -run TestContainerdPodStartLatency -v ./agent/
func TestContainerdPodStartLatency(t *testing.T) {
	if os.Getenv("SKIFF_NODE_LATENCY") == "" {
		t.Skip("set SKIFF_NODE_LATENCY=1 to measure")
	}
	const n = 30
	starts := 0 // the default
	if w, err := strconv.Atoi(os.Getenv("SKIFF_NODE_STARTS")); err == nil {
		starts = w
	}
	ce := crienv.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	bare, _, err := crienv.BareP50(ctx, ce, n)
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, ce.Conn, nil, func(c *Config) {
		c.PodLogDir = ce.PodLogDir
		c.MaxParallelStarts = starts
		c.RelistPeriod = time.Second
	})
	e.until("agent ready", func() (bool, string) { err := e.agent.Ready(); return err == nil, fmt.Sprint(err) })

	var mu sync.Mutex
	created := map[string]time.Time{}
	running := map[string]time.Duration{}
	e.podInf.AddHandler(informer.Handler[*corev1.Pod]{OnUpdate: func(_, p *corev1.Pod) {
		mu.Lock()
		defer mu.Unlock()
		name := p.GetMetadata().GetName()
		if _, done := running[name]; !done && podRunning(p.GetStatus()) {
			running[name] = time.Since(created[name])
		}
	}})
	var wg sync.WaitGroup
	for i := range n {
		name := fmt.Sprintf("lat-%d", i)
		mu.Lock()
		created[name] = time.Now()
		mu.Unlock()
		wg.Go(func() { e.create(demoPod(name, demo(ce, "app"))) })
	}
	wg.Wait()
	e.until("all running", func() (bool, string) {
		mu.Lock()
		defer mu.Unlock()
		return len(running) == n, fmt.Sprintf("%d running", len(running))
	})
	var ls []time.Duration
	for _, d := range running {
		ls = append(ls, d)
	}
	p50, p99 := crienv.Percentile(ls, 0.5), crienv.Percentile(ls, 0.99)
	t.Logf("max parallel starts %d, %d pods: p50 %v p99 %v; bare CRI p50 %v; ratio %.2f", starts, n, p50, p99, bare, float64(p50)/float64(bare))
}
