package controller

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"skiff.dev/internal/workqueue"
)

// outcome is what the test reconciler does on one call.
type outcome struct {
	res   Result
	err   error
	panic any
}

// call is one Reconcile seen by the test reconciler. The reconcile waits
// for release before it returns, so a test can check state while the worker
// is held.
type call struct {
	key     string
	n       int       // 0 for the key's first call
	at      time.Time // the fake clock at the call
	release chan struct{}
}

// harness runs a controller whose reconciler follows a script per key
// (after the script, it succeeds) and reports each call on calls, then
// waits for the test to release it.
type harness struct {
	t       *testing.T
	clk     *workqueue.FakeClock
	reg     *prometheus.Registry
	logs    *observer.ObservedLogs
	c       *Controller
	calls   chan call
	cancel  context.CancelFunc
	ran     chan error
	stopped bool

	mu     sync.Mutex
	script map[string][]outcome
	count  map[string]int
}

func start(t *testing.T, script map[string][]outcome) *harness {
	t.Helper()
	core, logs := observer.New(zapcore.DebugLevel)
	h := &harness{
		t:      t,
		clk:    workqueue.NewFakeClock(epoch),
		reg:    prometheus.NewPedanticRegistry(),
		logs:   logs,
		calls:  make(chan call, 100),
		ran:    make(chan error, 1),
		script: script,
		count:  make(map[string]int),
	}
	h.c = New(ReconcileFunc(h.reconcile), Options{
		Name:       "test",
		Logger:     zap.New(core),
		Clock:      h.clk,
		Registerer: h.reg,
	})
	ctx, cancel := context.WithCancel(t.Context())
	h.cancel = cancel
	go func() { h.ran <- h.c.Run(ctx) }()
	t.Cleanup(h.stop)
	return h
}

func (h *harness) reconcile(_ context.Context, key string) (Result, error) {
	h.mu.Lock()
	n := h.count[key]
	h.count[key]++
	var o outcome
	if n < len(h.script[key]) {
		o = h.script[key][n]
	}
	h.mu.Unlock()
	c := call{key: key, n: n, at: h.clk.Now(), release: make(chan struct{})}
	h.calls <- c
	<-c.release
	if o.panic != nil {
		panic(o.panic)
	}
	return o.res, o.err
}

// next returns the next call, which must be of key; the caller releases
// it.
func (h *harness) next(key string) call {
	h.t.Helper()
	select {
	case c := <-h.calls:
		if c.key != key {
			h.t.Fatalf("Reconcile(%q), want Reconcile(%q)", c.key, key)
		}
		return c
	case <-time.After(patience):
		h.t.Fatalf("no Reconcile(%q) within %v", key, patience)
		panic("unreachable")
	}
}

// waitArmed waits until the queue's delay timer is armed.
func (h *harness) waitArmed() {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(h.t.Context(), patience)
	defer cancel()
	if err := h.clk.BlockUntilWaiters(ctx, 1); err != nil {
		h.t.Fatalf("no delay armed within %v: %v", patience, err)
	}
}

// stepThrough checks that the armed delay is exactly d: it has not fired
// 1ns before d and has fired at d. FakeClock fires timers inside Step, so
// both checks are immediate, and the next reconcile cannot arm another
// timer meanwhile: it is held until released.
func (h *harness) stepThrough(d time.Duration) {
	h.t.Helper()
	h.waitArmed()
	h.clk.Step(d - time.Nanosecond)
	if !h.clk.HasWaiters() {
		h.t.Fatalf("the delay fired before %v", d)
	}
	h.clk.Step(time.Nanosecond)
	if h.clk.HasWaiters() {
		h.t.Fatalf("the delay has not fired at %v", d)
	}
}

// sync waits until the worker has finished with every key enqueued before:
// with one worker, keys are handled in order, so once a fresh key is
// reconciled, the outcome of the previous one has been acted on.
func (h *harness) sync() {
	h.t.Helper()
	h.c.Enqueue("~sync")
	close(h.next("~sync").release)
}

// stop cancels Run and waits for it to return; later calls do nothing.
func (h *harness) stop() {
	h.t.Helper()
	if h.stopped {
		return
	}
	h.stopped = true
	h.cancel()
	select {
	case err := <-h.ran:
		if err != nil {
			h.t.Errorf("Run = %v, want nil", err)
		}
	case <-time.After(patience):
		h.t.Fatalf("Run did not return within %v of cancel", patience)
	}
}

func (h *harness) reconciles(result string) float64 {
	return testutil.ToFloat64(h.c.m.total[result])
}

func TestReconcileOutcomes(t *testing.T) {
	errBoom := errors.New("boom")
	ok := outcome{}
	fail := outcome{err: errBoom}
	cases := []struct {
		name   string
		script []outcome
		delays []time.Duration // before each call after the first
		want   map[string]float64
	}{
		{
			name:   "success forgets the key",
			script: []outcome{ok},
			want:   map[string]float64{resultSuccess: 1},
		},
		{
			name:   "errors retry with growing backoff until success",
			script: []outcome{fail, fail, fail, ok},
			delays: []time.Duration{5 * time.Millisecond, 10 * time.Millisecond, 20 * time.Millisecond},
			want:   map[string]float64{resultError: 3, resultSuccess: 1},
		},
		{
			name:   "a terminal error is not retried",
			script: []outcome{{err: Terminal(errBoom)}},
			want:   map[string]float64{resultTerminal: 1},
		},
		{
			name:   "a wrapped terminal error after retries forgets the backoff",
			script: []outcome{fail, fail, {err: fmt.Errorf("web: %w", Terminal(errBoom))}},
			delays: []time.Duration{5 * time.Millisecond, 10 * time.Millisecond},
			want:   map[string]float64{resultError: 2, resultTerminal: 1},
		},
		{
			name:   "RequeueAfter is honoured",
			script: []outcome{{res: Result{RequeueAfter: 10 * time.Second}}, ok},
			delays: []time.Duration{10 * time.Second},
			want:   map[string]float64{resultRequeue: 1, resultSuccess: 1},
		},
		{
			name:   "RequeueAfter resets the backoff",
			script: []outcome{fail, fail, {res: Result{RequeueAfter: time.Minute}}, fail, ok},
			delays: []time.Duration{5 * time.Millisecond, 10 * time.Millisecond, time.Minute, 5 * time.Millisecond},
			want:   map[string]float64{resultError: 3, resultRequeue: 1, resultSuccess: 1},
		},
		{
			name:   "Requeue backs off like an error",
			script: []outcome{{res: Result{Requeue: true}}, {res: Result{Requeue: true}}, ok},
			delays: []time.Duration{5 * time.Millisecond, 10 * time.Millisecond},
			want:   map[string]float64{resultRequeue: 2, resultSuccess: 1},
		},
		{
			name:   "RequeueAfter wins over Requeue",
			script: []outcome{{res: Result{Requeue: true, RequeueAfter: time.Hour}}, ok},
			delays: []time.Duration{time.Hour},
			want:   map[string]float64{resultRequeue: 1, resultSuccess: 1},
		},
		{
			name:   "an error overrides the Result",
			script: []outcome{{res: Result{RequeueAfter: time.Hour}, err: errBoom}, ok},
			delays: []time.Duration{5 * time.Millisecond},
			want:   map[string]float64{resultError: 1, resultSuccess: 1},
		},
		{
			name:   "a panic is recovered and retried as an error",
			script: []outcome{{panic: "nil map"}, {panic: errBoom}, ok},
			delays: []time.Duration{5 * time.Millisecond, 10 * time.Millisecond},
			want:   map[string]float64{resultError: 2, resultSuccess: 1},
		},
	}
	const key = "default/web"
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := start(t, map[string][]outcome{key: tc.script})
			h.c.Enqueue(key)
			prev := h.next(key)
			close(prev.release)
			for i, d := range tc.delays {
				h.stepThrough(d)
				c := h.next(key)
				if c.n != i+1 || c.at.Sub(prev.at) != d {
					t.Fatalf("call %d came %v after call %d, want call %d after %v", c.n, c.at.Sub(prev.at), prev.n, i+1, d)
				}
				close(c.release)
				prev = c
			}
			h.sync()
			if n := h.c.Queue().NumRequeues(key); n != 0 {
				t.Errorf("NumRequeues after the script = %d, want 0 (forgotten)", n)
			}
			if h.clk.HasWaiters() {
				t.Errorf("a delay is armed after the script: the key would be reconciled again")
			}
			h.stop()
			select {
			case c := <-h.calls:
				t.Errorf("unexpected Reconcile(%q) #%d", c.key, c.n)
			default:
			}
			h.want(tc.want, len(tc.script)+1)
		})
	}
}

// want checks the reconcile counters; results not in want must be 0 (the
// sync key adds one success).
func (h *harness) want(want map[string]float64, total int) {
	h.t.Helper()
	var sum float64
	for _, r := range []string{resultSuccess, resultError, resultRequeue, resultTerminal} {
		w := want[r]
		if r == resultSuccess {
			w++ // the sync key
		}
		if got := h.reconciles(r); got != w {
			h.t.Errorf("controller_reconcile_total{result=%q} = %v, want %v", r, got, w)
		}
		sum += w
	}
	if sum != float64(total) {
		h.t.Fatalf("test bug: want counts %v reconciles, the script %d", sum, total)
	}
	errs := want[resultError] + want[resultTerminal]
	if got := testutil.ToFloat64(h.c.m.errors); got != errs {
		h.t.Errorf("controller_reconcile_errors_total = %v, want %v", got, errs)
	}
}

func TestReconcileLogs(t *testing.T) {
	h := start(t, map[string][]outcome{
		"default/panics":   {{panic: "nil map"}},
		"default/terminal": {{err: Terminal(errors.New("bad spec"))}},
		"default/fails":    {{err: errors.New("conflict")}},
	})
	for _, k := range []string{"default/panics", "default/terminal", "default/fails"} {
		h.c.Enqueue(k)
		close(h.next(k).release)
	}
	h.sync()
	cases := []struct {
		msg   string
		level zapcore.Level
		key   string
	}{
		{msg: "reconcile panicked", level: zapcore.ErrorLevel, key: "default/panics"},
		{msg: "reconcile failed, retrying", level: zapcore.InfoLevel, key: "default/panics"},
		{msg: "reconcile failed, not retrying", level: zapcore.ErrorLevel, key: "default/terminal"},
		{msg: "reconcile failed, retrying", level: zapcore.InfoLevel, key: "default/fails"},
	}
	for _, tc := range cases {
		found := false
		for _, e := range h.logs.FilterMessage(tc.msg).All() {
			ctx := e.ContextMap()
			if ctx["key"] == tc.key && ctx["controller"] == "test" && e.Level == tc.level {
				found = true
			}
		}
		if !found {
			t.Errorf("no %v log %q with key %q; logs: %v", tc.level, tc.msg, tc.key, h.logs.All())
		}
	}
	if got := testutil.ToFloat64(h.c.m.panics); got != 1 {
		t.Errorf("controller_reconcile_panics_total = %v, want 1", got)
	}
}

// TestRunStops checks that Run starts Workers workers, and on cancel stops
// them: in-flight reconciles see the cancellation, queued keys are not
// started, and Run returns.
func TestRunStops(t *testing.T) {
	const workers = 4
	started := make(chan string, workers)
	var sawCancel atomic.Int32
	c := New(ReconcileFunc(func(ctx context.Context, key string) (Result, error) {
		started <- key
		<-ctx.Done()
		sawCancel.Add(1)
		return Result{}, ctx.Err()
	}), Options{Name: "blocking", Workers: workers})
	for i := range workers + 1 {
		c.Enqueue(KeyOf("default", fmt.Sprint("obj-", i)))
	}
	ctx, cancel := context.WithCancel(t.Context())
	ran := make(chan error, 1)
	go func() { ran <- c.Run(ctx) }()
	for range workers { // all workers busy at once: they run in parallel
		select {
		case <-started:
		case <-time.After(patience):
			t.Fatalf("fewer than %d reconciles in parallel within %v", workers, patience)
		}
	}
	cancel()
	select {
	case err := <-ran:
		if err != nil {
			t.Fatalf("Run = %v, want nil", err)
		}
	case <-time.After(patience):
		t.Fatalf("Run did not return within %v of cancel", patience)
	}
	if n := sawCancel.Load(); n != workers {
		t.Errorf("%d reconciles saw the cancellation, want %d", n, workers)
	}
	select {
	case k := <-started:
		t.Errorf("Reconcile(%q) started after cancel", k)
	default:
	}
	if !c.Queue().ShuttingDown() {
		t.Error("queue not shut down after Run")
	}
	if err := c.Run(t.Context()); err == nil {
		t.Error("second Run = nil, want an error")
	}
}

func TestRunNeverReconcilesAKeyTwiceAtOnce(t *testing.T) {
	keys := []string{"a", "b", "c"}
	var inFlight [3]atomic.Int32
	var reconciles atomic.Int64
	c := New(ReconcileFunc(func(ctx context.Context, key string) (Result, error) {
		i := int(key[0] - 'a')
		if n := inFlight[i].Add(1); n != 1 {
			t.Errorf("key %q reconciled by %d workers at once", key, n)
		}
		reconciles.Add(1)
		inFlight[i].Add(-1)
		return Result{}, nil
	}), Options{Name: "parallel", Workers: 8})
	ctx, cancel := context.WithCancel(t.Context())
	ran := make(chan error, 1)
	go func() { ran <- c.Run(ctx) }()
	for n := range 3000 {
		c.Enqueue(keys[n%len(keys)])
	}
	cancel()
	select {
	case <-ran:
	case <-time.After(patience):
		t.Fatalf("Run did not return within %v of cancel", patience)
	}
	t.Logf("%d reconciles", reconciles.Load())
}

func TestControllersShareARegisterer(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	noop := ReconcileFunc(func(context.Context, string) (Result, error) { return Result{}, nil })
	a := New(noop, Options{Name: "a", Registerer: reg})
	b := New(noop, Options{Name: "b", Registerer: reg}) // must not panic
	a.Enqueue("x")
	b.Enqueue("x")
	b.Enqueue("y")
	for _, c := range []*Controller{a, b} {
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		if err := c.Run(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if got := testutil.ToFloat64(a.m.total[resultSuccess]); got != 0 {
		t.Errorf("reconciles of a = %v, want 0 (cancelled before any)", got)
	}
	if n, err := testutil.GatherAndCount(reg, "controller_reconcile_total"); err != nil || n != 8 {
		t.Errorf("controller_reconcile_total series = %d, %v; want 4 results x 2 controllers", n, err)
	}
	want := `
# HELP workqueue_adds_total Keys added to the queue (not counting adds of a key already waiting).
# TYPE workqueue_adds_total counter
workqueue_adds_total{name="a"} 1
workqueue_adds_total{name="b"} 2
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "workqueue_adds_total"); err != nil {
		t.Error(err)
	}
}
