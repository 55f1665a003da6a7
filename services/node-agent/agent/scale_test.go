package agent

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"

	"skiff.dev/internal/await"
	"skiff.dev/internal/client"
	"skiff.dev/internal/informer"
	corev1 "skiff.dev/proto/core/v1"
	"skiff.dev/services/apiserver/apiservertest"
	"skiff.dev/services/node-agent/cri"
	"skiff.dev/services/node-agent/sim"
)

// TestManyAgentsOnOneMachine runs several agents, each with its own
// simulated runtime, against one apiserver, as scale tests do: every pod
// runs on its own node, and no agent touches another's pods.
func TestManyAgentsOnOneMachine(t *testing.T) {
	const agents, podsEach = 8, 5
	api := apiservertest.Start(t)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }()
	root := t.TempDir()
	sims := make([]*sim.Server, agents)
	for i := range agents {
		s, err := sim.Start(sim.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		sims[i] = s
		conn, err := cri.Dial(s.Endpoint())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		a, err := New(Config{
			NodeName: fmt.Sprintf("sim-%d", i), API: api.Conn, Runtime: conn, NodeIP: fmt.Sprintf("10.0.0.%d", i+1),
			RootDir: filepath.Join(root, fmt.Sprint(i), "root"), PodLogDir: filepath.Join(root, fmt.Sprint(i), "logs"),
			RelistPeriod: 200 * time.Millisecond, Workers: 4, Logger: zap.NewNop(),
		})
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			if err := a.Run(ctx); err != nil && ctx.Err() == nil {
				t.Errorf("agent %d: %v", i, err)
			}
		})
	}
	var changed await.Signal
	pods := informer.New(informer.FromClient(client.Pods(api.Conn)), informer.Options{})
	poke := func(*corev1.Pod) { changed.Poke() }
	pods.AddHandler(informer.Handler[*corev1.Pod]{OnAdd: poke, OnUpdate: func(_, p *corev1.Pod) { changed.Poke() }})
	wg.Go(func() { pods.Run(ctx) })
	for i := range agents {
		for j := range podsEach {
			p := pod(fmt.Sprintf("p-%d-%d", i, j), ctr("app", "demo:v1"))
			p.Spec.NodeName = fmt.Sprintf("sim-%d", i)
			if _, err := client.Pods(api.Conn).Create(ctx, p); err != nil {
				t.Fatal(err)
			}
		}
	}
	changed.Until(t, patience, "every pod running", ctx.Done(), func() (bool, string) {
		n := 0
		for _, p := range pods.Store().List() {
			if podRunning(p.GetStatus()) && p.GetStatus().GetHostIp() != "" {
				n++
			}
		}
		return n == agents*podsEach, fmt.Sprintf("%d of %d running", n, agents*podsEach)
	})
	for i, s := range sims {
		if n := len(s.Containers()); n != podsEach {
			t.Errorf("runtime %d has %d containers, want %d", i, n, podsEach)
		}
	}
}
