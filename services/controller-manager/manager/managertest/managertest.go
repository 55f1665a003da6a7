// Package managertest starts what controller tests need: a real apiserver
// on an embedded etcd, a manager.Context over it (shared informers, an event
// broadcaster, metrics on a private registry), simulated nodes, and Await,
// which waits for a condition on the informers' events with a deadline.
package managertest

import (
	"context"
	"fmt"
	"go.uber.org/goleak"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"
	"google.golang.org/grpc"

	"skiff.dev/internal/apierrors"
	"skiff.dev/internal/await"
	"skiff.dev/internal/client"
	"skiff.dev/internal/events"
	"skiff.dev/internal/informer"
	"skiff.dev/internal/object"
	"skiff.dev/internal/workqueue"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/apiserver/apiservertest"
	"skiff.dev/services/controller-manager/manager"
	"skiff.dev/services/controller-manager/simnode"
)

// Env is one test's cluster without nodes.
type Env struct {
	T        testing.TB
	Server   *apiservertest.Server
	Conn     grpc.ClientConnInterface
	Ctx      context.Context // ends when the test ends
	Manager  *manager.Context
	Registry *prometheus.Registry
	Logger   *zap.Logger

	cancel  context.CancelFunc
	wg      sync.WaitGroup
	changed await.Signal // poked on every informer event
}

// Start starts an apiserver and a manager.Context for t. Everything stops
// when t ends.
func Start(t testing.TB, opts ...apiservertest.Option) *Env {
	t.Helper()
	s := apiservertest.Start(t, opts...)
	log := zap.NewNop()
	if tt, ok := t.(*testing.T); ok && testing.Verbose() {
		log = zaptest.NewLogger(tt, zaptest.Level(zap.InfoLevel))
	}
	return NewEnv(t, s, s.Conn, log)
}

// NewEnv builds an Env over an apiserver already running.
func NewEnv(t testing.TB, s *apiservertest.Server, conn grpc.ClientConnInterface, log *zap.Logger) *Env {
	ctx, cancel := context.WithCancel(context.Background())
	reg := prometheus.NewRegistry()
	b, err := events.NewBroadcaster(events.Config{Client: client.Events(conn), Component: "controller-manager", Logger: log, Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	e := &Env{
		T: t, Server: s, Conn: conn, Ctx: ctx, Registry: reg, Logger: log, cancel: cancel,
		Manager: &manager.Context{
			Conn:         conn,
			Informers:    informer.NewFactory(informer.FactoryOptions{Logger: log, Metrics: informer.NewMetrics(reg)}),
			Recorder:     b.NewRecorder,
			Logger:       log,
			Registerer:   reg,
			QueueMetrics: workqueue.NewMetrics(reg),
			Clock:        workqueue.RealClock(),
		},
	}
	e.Go(b.Run)
	t.Cleanup(e.Stop)
	return e
}

// Stop stops everything Go started and waits for it.
func (e *Env) Stop() {
	e.cancel()
	e.wg.Wait()
	e.Manager.Informers.Wait()
}

// Go runs fn in the background until the test ends.
func (e *Env) Go(fn func(ctx context.Context)) {
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		fn(e.Ctx)
	}()
}

// GoErr runs fn in the background and fails the test if it returns an error
// other than the context's.
func (e *Env) GoErr(fn func(ctx context.Context) error) {
	e.Go(func(ctx context.Context) {
		if err := fn(ctx); err != nil && ctx.Err() == nil {
			e.T.Errorf("background run failed: %v", err)
		}
	})
}

// Watch makes Await re-evaluate its condition on every change of inf's kind.
func Watch[T object.Object](e *Env, inf *informer.Informer[T]) {
	poke := func(T) { e.poke() }
	inf.AddHandler(informer.Handler[T]{OnAdd: poke, OnUpdate: func(_, cur T) { e.poke() }, OnDelete: poke})
}

// StartInformers starts every informer asked for so far (also the ones Await
// needs: pods, replicasets, deployments, nodes) and waits for them to sync.
func (e *Env) StartInformers() {
	e.T.Helper()
	Watch(e, e.Pods())
	Watch(e, informer.For(e.Manager.Informers, client.ReplicaSets(e.Conn)))
	Watch(e, informer.For(e.Manager.Informers, client.Deployments(e.Conn)))
	Watch(e, informer.For(e.Manager.Informers, client.Nodes(e.Conn)))
	e.Manager.Informers.Start(e.Ctx)
	ctx, cancel := context.WithTimeout(e.Ctx, 30*time.Second)
	defer cancel()
	if !e.Manager.Informers.WaitForSync(ctx) {
		e.T.Fatal("informers did not sync within 30s")
	}
}

// Pods is the shared pods informer.
func (e *Env) Pods() *informer.Informer[*corev1.Pod] {
	return informer.For(e.Manager.Informers, client.Pods(e.Conn))
}

// SimNode starts a simulated node (pods become Running and Ready) on the
// shared pods informer. Call before StartInformers, or call StartInformers again.
func (e *Env) SimNode(o simnode.Options) *simnode.Node {
	if o.Logger == nil {
		o.Logger = e.Logger
	}
	n := simnode.New(e.Conn, e.Pods(), o)
	e.Go(n.Run)
	return n
}

func (e *Env) poke() { e.changed.Poke() }

// Await waits until cond holds, re-evaluating it on every informer event
// (and every 100ms, for conditions on time), and fails the test after
// timeout with cond's last explanation.
func (e *Env) Await(timeout time.Duration, what string, cond func() (ok bool, why string)) {
	e.T.Helper()
	e.changed.Until(e.T, timeout, what, e.Ctx.Done(), cond)
}

// EventReasons lists the reasons and messages of the events recorded in
// namespace ("": every namespace) about the object kind/name.
func (e *Env) EventReasons(kind, namespace, name string) map[string]string {
	l, err := client.Events(e.Conn).List(e.Ctx, &metav1.ListOptions{Namespace: namespace})
	if err != nil {
		if !apierrors.IsNotFound(err) {
			e.T.Errorf("list events: %v", err)
		}
		return nil
	}
	out := map[string]string{}
	for _, ev := range l.GetItems() {
		if o := ev.GetInvolvedObject(); o.GetKind() == kind && o.GetName() == name {
			out[ev.GetReason()] = ev.GetMessage()
		}
	}
	return out
}

// Metric sums the values of the counters and gauges named name in env's
// registry whose labels include every name/value pair of labels ("ns",
// "default", "reason", "orphaned"...): with no labels, every series.
func (e *Env) Metric(name string, labels ...string) float64 {
	e.T.Helper()
	mfs, err := e.Registry.Gather()
	if err != nil {
		e.T.Fatalf("gather metrics: %v", err)
	}
	var sum float64
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	series:
		for _, m := range mf.GetMetric() {
			for i := 0; i+1 < len(labels); i += 2 {
				if !slices.ContainsFunc(m.GetLabel(), func(lp *dto.LabelPair) bool {
					return lp.GetName() == labels[i] && lp.GetValue() == labels[i+1]
				}) {
					continue series
				}
			}
			sum += m.GetCounter().GetValue() + m.GetGauge().GetValue()
		}
	}
	return sum
}

// Explain formats a reason for Await.
func Explain(format string, args ...any) string { return fmt.Sprintf(format, args...) }

// VerifyTestMain runs a package's tests, then fails if goroutines are left
// (goleak), beside the few the embedded etcd and gRPC keep until the
// process ends: every controller package's TestMain.
func VerifyTestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		goleak.IgnoreTopFunction("go.opencensus.io/stats/view.(*worker).start"),
		goleak.IgnoreAnyFunction("google.golang.org/grpc/internal/grpcsync.(*CallbackSerializer).run"),
		goleak.IgnoreAnyFunction("go.etcd.io/etcd/pkg/v3/traceutil.(*Trace).Log"),
	)
}
