package scheduler

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/goleak"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"skiff.dev/internal/await"
	"skiff.dev/internal/client"
	"skiff.dev/internal/informer"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/apiserver/apiservertest"
	"skiff.dev/services/scheduler/config"
	"skiff.dev/services/scheduler/plugins"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// The embedded etcd and gRPC keep a few background goroutines
		// until the process ends.
		goleak.IgnoreTopFunction("go.opencensus.io/stats/view.(*worker).start"),
		goleak.IgnoreAnyFunction("google.golang.org/grpc/internal/grpcsync.(*CallbackSerializer).run"),
		goleak.IgnoreAnyFunction("go.etcd.io/etcd/pkg/v3/traceutil.(*Trace).Log"),
	)
}

// env is one test's cluster: a real apiserver on an embedded etcd, and an
// observer that wakes await on every pod, node or event change.
type env struct {
	t      *testing.T
	server *apiservertest.Server
	conn   *grpc.ClientConn
	ctx    context.Context
	log    *zap.Logger

	pods   *informer.Informer[*corev1.Pod]
	events *informer.Informer[*corev1.Event]

	changed await.Signal // poked on every pod or event change
	wg      sync.WaitGroup
}

func newEnv(t *testing.T) *env {
	t.Helper()
	s := apiservertest.Start(t)
	ctx, cancel := context.WithCancel(context.Background())
	log := zap.NewNop()
	if testing.Verbose() {
		log = zaptest.NewLogger(t, zaptest.Level(zap.InfoLevel))
	}
	e := &env{t: t, server: s, conn: s.Conn, ctx: ctx, log: log}
	e.pods = informer.New(informer.FromClient(client.Pods(s.Conn)), informer.Options{})
	e.events = informer.New(informer.FromClient(client.Events(s.Conn)), informer.Options{})
	e.pods.AddHandler(informer.Handler[*corev1.Pod]{
		OnAdd: func(*corev1.Pod) { e.poke() }, OnUpdate: func(_, _ *corev1.Pod) { e.poke() }, OnDelete: func(*corev1.Pod) { e.poke() },
	})
	e.events.AddHandler(informer.Handler[*corev1.Event]{
		OnAdd: func(*corev1.Event) { e.poke() }, OnUpdate: func(_, _ *corev1.Event) { e.poke() },
	})
	e.goRun(func(ctx context.Context) { e.pods.Run(ctx) })
	e.goRun(func(ctx context.Context) { e.events.Run(ctx) })
	t.Cleanup(func() { cancel(); e.wg.Wait() })
	if !informer.WaitForSync(ctx, e.pods, e.events) {
		t.Fatal("observer did not sync")
	}
	return e
}

func (e *env) goRun(fn func(ctx context.Context)) {
	e.wg.Add(1)
	go func() { defer e.wg.Done(); fn(e.ctx) }()
}

func (e *env) poke() { e.changed.Poke() }

// testPolicy is the default policy with short backoffs.
func testPolicy(t *testing.T) *config.Configuration {
	known, err := plugins.Known(plugins.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	p := config.Default(known)
	p.PodInitialBackoff = 20 * time.Millisecond
	p.PodMaxBackoff = 100 * time.Millisecond
	return p
}

// startScheduler runs a scheduler over conn (the env's by default) until
// the test ends.
func (e *env) startScheduler(cfg Config, conn ...grpc.ClientConnInterface) *Scheduler {
	e.t.Helper()
	c := grpc.ClientConnInterface(e.conn)
	if len(conn) > 0 {
		c = conn[0]
	}
	if cfg.Policy == nil {
		cfg.Policy = testPolicy(e.t)
	}
	if cfg.Logger == nil {
		cfg.Logger = e.log
	}
	if cfg.Registerer == nil {
		cfg.Registerer = prometheus.NewRegistry()
	}
	s, err := New(c, cfg)
	if err != nil {
		e.t.Fatal(err)
	}
	e.goRun(func(ctx context.Context) {
		if err := s.Run(ctx); err != nil {
			e.t.Errorf("scheduler: %v", err)
		}
	})
	select {
	case <-s.Synced():
	case <-time.After(20 * time.Second):
		e.t.Fatal("scheduler did not sync")
	}
	return s
}

// dial opens another connection to the apiserver, with interceptors.
func (e *env) dial(opts ...grpc.DialOption) *grpc.ClientConn {
	e.t.Helper()
	conn, err := grpc.NewClient(e.server.Addr(), append(opts, grpc.WithTransportCredentials(insecure.NewCredentials()))...)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { conn.Close() })
	return conn
}

// await waits until cond holds, re-checking on every pod or event change
// (and every 100ms), and fails with cond's last explanation after timeout.
func (e *env) await(timeout time.Duration, what string, cond func() (bool, string)) {
	e.t.Helper()
	e.changed.Until(e.t, timeout, what, nil, cond)
}

type nodeSpec struct {
	name     string
	cpu, mem string
	pods     string
	labels   map[string]string
	taints   []*corev1.Taint
}

func (e *env) createNode(n nodeSpec) {
	e.t.Helper()
	if n.pods == "" {
		n.pods = "110"
	}
	labels := map[string]string{"kubernetes.io/hostname": n.name}
	for k, v := range n.labels {
		labels[k] = v
	}
	node := &corev1.Node{
		Metadata: &metav1.ObjectMeta{Name: n.name, Labels: labels},
		Spec:     &corev1.NodeSpec{Taints: n.taints},
	}
	created, err := client.Nodes(e.conn).Create(e.ctx, node)
	if err != nil {
		e.t.Fatalf("creating node %s: %v", n.name, err)
	}
	created.Status = &corev1.NodeStatus{
		Allocatable: map[string]string{"cpu": n.cpu, "memory": n.mem, "pods": n.pods},
		Capacity:    map[string]string{"cpu": n.cpu, "memory": n.mem, "pods": n.pods},
	}
	if _, err := client.Nodes(e.conn).UpdateStatus(e.ctx, created); err != nil {
		e.t.Fatalf("setting node %s's status: %v", n.name, err)
	}
}

// newPod is a pod in namespace "test" requesting cpu and memory.
func newPod(name, cpu, mem string) *corev1.Pod {
	req := map[string]string{}
	if cpu != "" {
		req["cpu"] = cpu
	}
	if mem != "" {
		req["memory"] = mem
	}
	return &corev1.Pod{
		Metadata: &metav1.ObjectMeta{Namespace: "test", Name: name, Labels: map[string]string{}},
		Spec: &corev1.PodSpec{Containers: []*corev1.Container{{
			Name: "c", Image: "skiff.local/demo:v1", Resources: &corev1.ResourceRequirements{Requests: req},
		}}},
	}
}

func (e *env) createPod(p *corev1.Pod) *corev1.Pod {
	e.t.Helper()
	created, err := client.Pods(e.conn).Create(e.ctx, p)
	if err != nil {
		e.t.Fatalf("creating pod %s: %v", p.Metadata.Name, err)
	}
	return created
}

func (e *env) pod(name string) *corev1.Pod {
	p, _ := e.pods.Store().GetByName("test", name)
	return p
}

// nodeOf waits for pod name to be bound and returns its node.
func (e *env) nodeOf(name string, timeout time.Duration) string {
	e.t.Helper()
	var node string
	e.await(timeout, "pod "+name+" to be bound", func() (bool, string) {
		p := e.pod(name)
		if p == nil {
			return false, "not seen yet"
		}
		node = p.GetSpec().GetNodeName()
		return node != "", describePod(p)
	})
	return node
}

func describePod(p *corev1.Pod) string {
	if p == nil {
		return "no pod"
	}
	var conds []string
	for _, c := range p.GetStatus().GetConditions() {
		conds = append(conds, fmt.Sprintf("%s=%s (%s: %s)", c.GetType(), c.GetStatus(), c.GetReason(), c.GetMessage()))
	}
	return fmt.Sprintf("pod %s on node %q, conditions [%s]", p.GetMetadata().GetName(), p.GetSpec().GetNodeName(), strings.Join(conds, "; "))
}

// eventsFor lists the reason: message of the events about pod name.
func (e *env) eventsFor(name string) []string {
	var out []string
	for _, ev := range e.events.Store().List() {
		if ev.GetInvolvedObject().GetName() == name && ev.GetInvolvedObject().GetKind() == "Pod" {
			out = append(out, ev.GetReason()+": "+ev.GetMessage())
		}
	}
	return out
}
