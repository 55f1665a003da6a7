package agent

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/goleak"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"
	"google.golang.org/grpc"

	"skiff.dev/internal/await"
	"skiff.dev/internal/client"
	"skiff.dev/internal/informer"
	"skiff.dev/internal/object"
	coordinationv1 "skiff.dev/proto/coordination/v1"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/apiserver/apiservertest"
	"skiff.dev/services/node-agent/cri"
	"skiff.dev/services/node-agent/sim"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		goleak.IgnoreAnyFunction("google.golang.org/grpc/internal/grpcsync.(*CallbackSerializer).run"),
		goleak.IgnoreAnyFunction("go.etcd.io/etcd/pkg/v3/traceutil.(*Trace).Log"),
	)
}

// patience bounds every wait for something that should happen.
const patience = 15 * time.Second

const nodeName = "node-1"

// env is one test's cluster: an apiserver, a simulated runtime, and an
// agent over both, serving NodeAgent on loopback.
type env struct {
	t       *testing.T
	ctx     context.Context
	api     *apiservertest.Server
	sim     *sim.Server
	cfg     Config
	reg     *prometheus.Registry
	changed await.Signal

	pods   *client.Resource[*corev1.Pod, *corev1.PodList]
	podInf *informer.Informer[*corev1.Pod]
	nodes  *informer.Informer[*corev1.Node]
	leases *informer.Informer[*coordinationv1.Lease]

	mu    sync.Mutex
	agent *Agent
	stop  func()
}

// start starts everything over a simulated runtime; opts adjust the
// agent's config.
func start(t *testing.T, simOpts sim.Options, opts ...func(*Config)) *env {
	t.Helper()
	s, err := sim.Start(simOpts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	conn, err := cri.Dial(s.Endpoint())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return newEnv(t, conn, s, opts...)
}

// newEnv starts an apiserver and an agent over the runtime at conn (sim,
// when not nil, is that runtime).
func newEnv(t *testing.T, conn grpc.ClientConnInterface, s *sim.Server, opts ...func(*Config)) *env {
	t.Helper()
	api := apiservertest.Start(t)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	log := zap.NewNop()
	if testing.Verbose() {
		log = zaptest.NewLogger(t, zaptest.Level(zap.InfoLevel))
	}
	root := t.TempDir()
	e := &env{
		t: t, ctx: ctx, api: api, sim: s,
		cfg: Config{
			NodeName: nodeName, API: api.Conn, Runtime: conn,
			RootDir: filepath.Join(root, "agent"), PodLogDir: filepath.Join(root, "logs"),
			NodeIP: "127.0.0.1", Hostname: "host-1",
			RelistPeriod: 50 * time.Millisecond, NodeStatusUpdatePeriod: 50 * time.Millisecond,
			LeaseRenewInterval: 100 * time.Millisecond, LogFollowPoll: 20 * time.Millisecond,
			Workers: 8, Logger: log,
		},
		pods: client.Pods(api.Conn),
	}
	for _, o := range opts {
		o(&e.cfg)
	}
	// The test's own view of the API, which wakes Until.
	f := informer.NewFactory(informer.FactoryOptions{Logger: log})
	e.podInf = informer.For(f, client.Pods(api.Conn))
	e.nodes = informer.For(f, client.Nodes(api.Conn))
	e.leases = informer.For(f, client.Leases(api.Conn))
	watch(e, e.podInf)
	watch(e, e.nodes)
	watch(e, e.leases)
	f.Start(ctx)
	t.Cleanup(func() { cancel(); f.Wait() })
	if !f.WaitForSync(ctx) {
		t.Fatal("test informers did not sync")
	}
	if s != nil {
		go func() {
			for {
				select {
				case <-ctx.Done():
					return
				case <-s.Changed():
					e.changed.Poke()
				}
			}
		}()
	}
	e.startAgent()
	t.Cleanup(e.stopAgent)
	return e
}

func watch[T object.Object](e *env, inf *informer.Informer[T]) {
	poke := func(T) { e.changed.Poke() }
	inf.AddHandler(informer.Handler[T]{OnAdd: poke, OnUpdate: func(_, cur T) { e.changed.Poke() }, OnDelete: poke})
}

// startAgent starts an agent (again) with the env's config.
func (e *env) startAgent() {
	e.t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		e.t.Fatal(err)
	}
	cfg := e.cfg
	cfg.Port = int32(l.Addr().(*net.TCPAddr).Port)
	e.reg = prometheus.NewRegistry()
	cfg.Registerer = e.reg
	a, err := New(cfg)
	if err != nil {
		e.t.Fatal(err)
	}
	g := grpc.NewServer()
	a.RegisterServices(g)
	go g.Serve(l)
	ctx, cancel := context.WithCancel(e.ctx)
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	e.mu.Lock()
	e.agent = a
	e.stop = func() {
		cancel()
		if err := <-done; err != nil && e.ctx.Err() == nil {
			e.t.Errorf("agent: %v", err)
		}
		g.Stop()
	}
	e.mu.Unlock()
}

func (e *env) stopAgent() {
	e.mu.Lock()
	stop := e.stop
	e.stop = nil
	e.mu.Unlock()
	if stop != nil {
		stop()
	}
}

// until waits for cond, re-evaluated on every API or runtime change.
func (e *env) until(what string, cond func() (bool, string)) {
	e.t.Helper()
	e.changed.Until(e.t, patience, what, e.ctx.Done(), cond)
}

func (e *env) create(p *corev1.Pod) *corev1.Pod {
	e.t.Helper()
	if p.Spec.NodeName == "" {
		p.Spec.NodeName = nodeName
	}
	if p.Metadata.Namespace == "" {
		p.Metadata.Namespace = "default"
	}
	out, err := e.pods.Create(e.ctx, p)
	if err != nil {
		e.t.Fatalf("creating pod %s: %v", p.Metadata.Name, err)
	}
	return out
}

// pod is the test informer's copy of default/name, or nil.
func (e *env) pod(name string) *corev1.Pod {
	p, _ := e.podInf.Store().GetByName("default", name)
	return p
}

// untilPod waits until pod default/name satisfies cond.
func (e *env) untilPod(name, what string, cond func(p *corev1.Pod) (bool, string)) *corev1.Pod {
	e.t.Helper()
	var got *corev1.Pod
	e.until(fmt.Sprintf("pod %s: %s", name, what), func() (bool, string) {
		p := e.pod(name)
		if p == nil {
			return false, "no such pod"
		}
		ok, why := cond(p)
		if ok {
			got = p
		}
		return ok, why + "; status: " + brief(p.GetStatus())
	})
	return got
}

func (e *env) untilPhase(name, phase string) *corev1.Pod {
	e.t.Helper()
	return e.untilPod(name, "phase "+phase, func(p *corev1.Pod) (bool, string) {
		return p.GetStatus().GetPhase() == phase, ""
	})
}

// untilRunning waits until the pod is Running and Ready.
func (e *env) untilRunning(name string) *corev1.Pod {
	e.t.Helper()
	return e.untilPod(name, "Running and Ready", func(p *corev1.Pod) (bool, string) {
		return p.GetStatus().GetPhase() == "Running" && condition(p, "Ready") == "True", ""
	})
}

func condition(p *corev1.Pod, typ string) string {
	for _, c := range p.GetStatus().GetConditions() {
		if c.GetType() == typ {
			return c.GetStatus()
		}
	}
	return ""
}

func containerStatusOf(p *corev1.Pod, name string) *corev1.ContainerStatus {
	for _, cs := range append(p.GetStatus().GetInitContainerStatuses(), p.GetStatus().GetContainerStatuses()...) {
		if cs.GetName() == name {
			return cs
		}
	}
	return nil
}

// brief summarizes a status for failure messages.
func brief(st *corev1.PodStatus) string {
	s := st.GetPhase()
	for _, c := range st.GetConditions() {
		s += fmt.Sprintf(" %s=%s", c.GetType(), c.GetStatus())
	}
	for _, cs := range append(st.GetInitContainerStatuses(), st.GetContainerStatuses()...) {
		state := cs.GetState()
		switch {
		case state.GetRunning() != nil:
			s += fmt.Sprintf(" [%s running restarts=%d ready=%v]", cs.GetName(), cs.GetRestartCount(), cs.GetReady())
		case state.GetTerminated() != nil:
			s += fmt.Sprintf(" [%s terminated %d restarts=%d]", cs.GetName(), state.GetTerminated().GetExitCode(), cs.GetRestartCount())
		case state.GetWaiting() != nil:
			s += fmt.Sprintf(" [%s waiting %s %q restarts=%d]", cs.GetName(), state.GetWaiting().GetReason(), state.GetWaiting().GetMessage(), cs.GetRestartCount())
		}
	}
	return s
}

// podSpec is a pod of the given containers (name=image pairs).
func pod(name string, containers ...*corev1.Container) *corev1.Pod {
	return &corev1.Pod{
		Metadata: &metav1.ObjectMeta{Name: name, Namespace: "default", Labels: map[string]string{"app": name}},
		Spec:     &corev1.PodSpec{Containers: containers, NodeName: nodeName},
	}
}

func ctr(name, image string) *corev1.Container {
	return &corev1.Container{Name: name, Image: image}
}

// synced reports whether the agent has synced the pod uid (and has its
// status).
func (a *Agent) synced(uid string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	_, ok := a.lastStatus[uid]
	return ok
}
