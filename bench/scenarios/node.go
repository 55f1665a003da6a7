package scenarios

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/protobuf/proto"

	"skiff.dev/internal/client"
	"skiff.dev/internal/informer"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/node-agent/agent"
	"skiff.dev/services/node-agent/crienv"
	"skiff.dev/services/scheduler/scheduler"
)

// The node figures: pods started on a real containerd through the whole
// control plane (create, schedule, the node agent's CRI calls, status),
// against a bare loop making the same CRI calls on the same containerd.
var (
	figNodeP50  = Figure{Name: "node.pod_start_p50_ms", Unit: "ms"}
	figNodeP99  = Figure{Name: "node.pod_start_p99_ms", Unit: "ms", Target: AtMost(2000)}
	figNodeBare = Figure{Name: "node.bare_cri_p50_ms", Unit: "ms"}
	// The bare loop's slowest pod: how long the runtime itself takes to
	// start all of them at once on this machine, the floor under
	// node.pod_start_p99_ms.
	figNodeBareP99 = Figure{Name: "node.bare_cri_p99_ms", Unit: "ms"}
	figNodeRatio   = Figure{Name: "node.vs_bare_cri_ratio", Unit: "ratio", Target: AtMost(1.3)}
)

const (
	nodeNamespace = "node-bench"
	benchNodeName = "bench-node"
)

func nodeScenario() *Scenario {
	return &Scenario{
		Name:    "node",
		Summary: "30 single-container pods created at once on one node with a real containerd (root needed), create to Running through the whole control plane, vs the same CRI calls in a bare loop",
		Figures: []Figure{figNodeP50, figNodeP99, figNodeBare, figNodeBareP99, figNodeRatio},
		Run:     runNode,
	}
}

func runNode(ctx context.Context, env *Env, rs *Results) error {
	n := env.Config.NodePods
	if n <= 0 {
		return fmt.Errorf("nothing to measure: %d pods", n)
	}
	env.logf("node: starting a private containerd")
	ce, err := crienv.Launch(ctx, "")
	if err != nil {
		return fmt.Errorf("a containerd for the node scenario: %w (make bench SCENARIO=api, watch, controllers or scheduler run without it)", err)
	}
	defer ce.Close()

	// The bare loop first, alone on the runtime.
	env.logf("node: %d pods at once through bare CRI calls", n)
	bareP50, bare, err := crienv.BareP50(ctx, ce, n)
	if err != nil {
		return fmt.Errorf("bare CRI loop: %w", err)
	}

	conns, err := env.dial(3) // the agent, the scheduler, the clients and observer
	if err != nil {
		return err
	}
	defer closeAll(conns)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()

	// The node agent, serving its NodeAgent service on loopback.
	a, stopAgent, err := startAgent(ctx, env, &wg, ce, conns[0])
	if err != nil {
		return err
	}
	defer stopAgent()

	sched, err := scheduler.New(conns[1], scheduler.Config{Logger: zap.NewNop()})
	if err != nil {
		return err
	}
	wg.Go(func() { _ = sched.Run(ctx) })

	// The observer: when each pod is first seen Running.
	var mu sync.Mutex
	created := map[string]time.Time{}
	running := map[string]time.Duration{}
	allRunning := make(chan struct{})
	obs := informer.New(informer.FromClient(client.Pods(conns[2])), informer.Options{ListOptions: &metav1.ListOptions{Namespace: nodeNamespace}})
	obs.AddHandler(informer.Handler[*corev1.Pod]{OnUpdate: func(_, p *corev1.Pod) {
		if p.GetStatus().GetPhase() != "Running" {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		name := p.GetMetadata().GetName()
		if _, seen := running[name]; seen {
			return
		}
		if t0, ok := created[name]; ok {
			running[name] = time.Since(t0)
			if len(running) == n {
				close(allRunning)
			}
		}
	}})
	wg.Go(func() { obs.Run(ctx) })
	if !informer.WaitForSync(ctx, obs) {
		return ctx.Err()
	}
	if err := waitNodeReady(ctx, conns[2], a); err != nil {
		return err
	}
	select {
	case <-sched.Synced():
	case <-ctx.Done():
		return ctx.Err()
	}

	env.logf("node: %d pods at once through the control plane", n)
	pods := client.Pods(conns[2])
	if err := inParallel(ctx, n, n, func(ctx context.Context, i int) error {
		name := fmt.Sprintf("start-%02d", i)
		mu.Lock()
		created[name] = time.Now()
		mu.Unlock()
		_, err := pods.Create(ctx, &corev1.Pod{
			Metadata: &metav1.ObjectMeta{Namespace: nodeNamespace, Name: name},
			Spec: &corev1.PodSpec{
				NodeSelector:                  map[string]string{"kubernetes.io/hostname": benchNodeName},
				TerminationGracePeriodSeconds: proto.Int64(1),
				Containers: []*corev1.Container{{
					Name: "demo", Image: ce.DemoImage("v1"), ImagePullPolicy: "IfNotPresent",
					Ports: []*corev1.ContainerPort{{ContainerPort: 8080}},
				}},
			},
		})
		return err
	}); err != nil {
		return fmt.Errorf("creating pods: %w", err)
	}
	timeout := time.NewTimer(env.Config.NodeTimeout)
	defer timeout.Stop()
	select {
	case <-allRunning:
	case <-timeout.C:
		mu.Lock()
		defer mu.Unlock()
		return fmt.Errorf("after %v only %d of %d pods were Running", env.Config.NodeTimeout, len(running), n)
	}
	var lat Histogram
	mu.Lock()
	for _, d := range running {
		lat.Record(d)
	}
	mu.Unlock()
	p50 := lat.Percentile(50)
	rs.Add(figNodeP50, ms(p50), fmt.Sprintf("%d pods created at once (scheduler, node agent, containerd %s), from each Create call to Running seen through a watch", n, ce.RuntimeVersion))
	rs.Add(figNodeP99, ms(lat.Percentile(99)), latencyNote(&lat, "pods"))
	rs.Add(figNodeBare, ms(bareP50), fmt.Sprintf("the same %d pods through RunPodSandbox, CreateContainer, StartContainer and ContainerStatus, at once, on the same containerd", n))
	rs.Add(figNodeBareP99, ms(crienv.Percentile(bare, 0.99)), "the bare loop's slowest pods: the runtime's own time to start them all at once")
	rs.Add(figNodeRatio, float64(p50)/float64(bareP50), "node.pod_start_p50_ms / node.bare_cri_p50_ms")

	// Leave the runtime empty: delete the pods (the agent stops them).
	for name := range running {
		_, _ = pods.Delete(ctx, &metav1.DeleteRequest{Namespace: nodeNamespace, Name: name})
	}
	return nil
}

// waitNodeReady waits until the agent has registered its Node and reports
// ready.
func waitNodeReady(ctx context.Context, conn *grpc.ClientConn, a *agent.Agent) error {
	deadline := time.NewTimer(60 * time.Second)
	defer deadline.Stop()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		if a.Ready() == nil {
			if _, err := client.Nodes(conn).Get(ctx, "", benchNodeName); err == nil {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-deadline.C:
			return errors.Join(errors.New("the node agent did not become ready within 60s"), a.Ready())
		case <-tick.C:
		}
	}
}

// startAgent runs a node agent named benchNodeName on ce's containerd
// until ctx ends (wg waits for it), its NodeAgent service on loopback as
// skiff-node-agent serves it: the API's flow-control windows, and TLS with
// env.ServingCert when the apiserver is secure. stop stops the service.
func startAgent(ctx context.Context, env *Env, wg *sync.WaitGroup, ce *crienv.Env, api grpc.ClientConnInterface) (a *agent.Agent, stop func(), err error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, nil, err
	}
	a, err = agent.New(agent.Config{
		NodeName: benchNodeName, API: api, Runtime: ce.Conn,
		RootDir: ce.Dir + "/agent", PodLogDir: ce.PodLogDir,
		NodeIP: "127.0.0.1", Port: int32(l.Addr().(*net.TCPAddr).Port),
		Logger: zap.NewNop(),
	})
	if err != nil {
		l.Close()
		return nil, nil, err
	}
	gopts := []grpc.ServerOption{grpc.InitialWindowSize(client.StreamWindowBytes), grpc.InitialConnWindowSize(client.ConnWindowBytes)}
	if env.ServingCert != nil {
		cert, err := env.ServingCert(benchNodeName)
		if err != nil {
			l.Close()
			return nil, nil, err
		}
		gopts = append(gopts, grpc.Creds(credentials.NewTLS(&tls.Config{MinVersion: tls.VersionTLS13, Certificates: []tls.Certificate{cert}})))
	}
	g := grpc.NewServer(gopts...)
	a.RegisterServices(g)
	wg.Go(func() { _ = g.Serve(l) })
	wg.Go(func() { _ = a.Run(ctx) })
	return a, g.Stop, nil
}
