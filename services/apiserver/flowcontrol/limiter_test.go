package flowcontrol

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/goleak"

	"skiff.dev/internal/apierrors"
	"skiff.dev/services/apiserver/server"
	"skiff.dev/services/apiserver/user"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func request(name, verb string, groups ...string) *server.RequestInfo {
	return &server.RequestInfo{Resource: "configmaps", Verb: verb, User: &user.Info{Name: name, Groups: groups, Authenticator: "token"}}
}

// newTestLimiter is a limiter of o where every request takes one seat,
// with a hook that reports every queued request on the returned channel.
func newTestLimiter(t *testing.T, o Options) (*Limiter, *prometheus.Registry, chan struct{}) {
	t.Helper()
	return newCountingLimiter(t, o, nil)
}

// newCountingLimiter is newTestLimiter with Lists estimated from objects.
func newCountingLimiter(t *testing.T, o Options, objects ObjectCounter) (*Limiter, *prometheus.Registry, chan struct{}) {
	t.Helper()
	reg := prometheus.NewRegistry()
	l, err := New(o, objects, reg)
	if err != nil {
		t.Fatal(err)
	}
	queued := make(chan struct{}, 1000)
	for _, bySchema := range l.series {
		for _, s := range bySchema {
			if s != nil {
				s.seats.queuedHook = func() {
					select {
					case queued <- struct{}{}:
					default: // a test that does not count them (stress)
					}
				}
			}
		}
	}
	return l, reg, queued
}

func mustAcquire(t *testing.T, l *Limiter, ri *server.RequestInfo) func() {
	t.Helper()
	release, err := l.Acquire(context.Background(), ri)
	if err != nil {
		t.Fatalf("Acquire for %s %s: %v", ri.User.Name, ri.Verb, err)
	}
	return release
}

func waitQueued(t *testing.T, queued <-chan struct{}, n int) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for range n {
		select {
		case <-queued:
		case <-timeout:
			t.Fatalf("waited 10s for %d requests to queue", n)
		}
	}
}

func TestZeroOptionsIsOff(t *testing.T) {
	l, err := New(Options{}, nil, prometheus.NewRegistry())
	if err != nil || l != nil {
		t.Fatalf("New(zero) = %v, %v; want nil, nil", l, err)
	}
	for _, o := range []Options{{MaxRequestsInflight: -1}, {MaxMutatingRequestsInflight: -2}, {MaxRequestsInflight: 1, QueueLength: -1}, {MaxRequestsInflight: 1, MaxWait: -time.Second}} {
		if _, err := New(o, nil, nil); err == nil || !strings.Contains(err.Error(), "--") {
			t.Errorf("New(%+v) = %v, want an error naming the flag", o, err)
		}
	}
}

func TestFastPathDoesNotAllocate(t *testing.T) {
	l, _, _ := newTestLimiter(t, Options{MaxRequestsInflight: 4, MaxMutatingRequestsInflight: 4})
	ri := request("alice", "get")
	ctx := context.Background()
	allocs := testing.AllocsPerRun(1000, func() {
		release, err := l.Acquire(ctx, ri)
		if err != nil {
			t.Fatal(err)
		}
		release()
	})
	if allocs != 0 {
		t.Errorf("Acquire+release with free seats allocates %v times, want 0", allocs)
	}
}

// TestOneUserLeavesASeatFree: a user flooding a level of four seats holds
// three; another user's request takes the fourth at once.
func TestOneUserLeavesASeatFree(t *testing.T) {
	l, _, queued := newTestLimiter(t, Options{MaxRequestsInflight: 4, MaxMutatingRequestsInflight: 4})
	var releases []func()
	for range 3 {
		releases = append(releases, mustAcquire(t, l, request("flooder", "list")))
	}
	got := make(chan func(), 2)
	for range 2 {
		go func() {
			r, err := l.Acquire(context.Background(), request("flooder", "list"))
			if err != nil {
				t.Error(err)
				close(got)
				return
			}
			got <- r
		}()
	}
	waitQueued(t, queued, 2)
	victim := mustAcquire(t, l, request("victim", "get")) // at once: the fourth seat
	// The victim leaves: the free seat stays free, the flooder is at its cap.
	victim()
	select {
	case <-got:
		t.Fatal("a flooder request got a seat beyond its cap of 3")
	default:
	}
	// A flooder seat frees: its next request takes it.
	releases[0]()
	releases = append(releases[1:], <-got)
	for _, r := range releases {
		r()
	}
	if r, ok := <-got; ok {
		r()
	}
	assertIdle(t, l)
}

// TestRoundRobinAcrossFlows: with one seat, a user who queued ten requests
// gets one turn before a second user's single request, not ten.
func TestRoundRobinAcrossFlows(t *testing.T) {
	l, _, queued := newTestLimiter(t, Options{MaxRequestsInflight: 1, MaxMutatingRequestsInflight: 1})
	holder := mustAcquire(t, l, request("holder", "get"))

	type grant struct {
		who     string
		release func()
	}
	grants := make(chan grant, 20)
	var wg sync.WaitGroup
	start := func(who string) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			release, err := l.Acquire(context.Background(), request(who, "get"))
			if err != nil {
				t.Errorf("%s: %v", who, err)
				return
			}
			grants <- grant{who, release}
		}()
	}
	for range 10 {
		start("flooder")
	}
	waitQueued(t, queued, 10)
	start("victim")
	waitQueued(t, queued, 1)

	var order []string
	next := holder
	for range 11 {
		next()
		select {
		case g := <-grants:
			order = append(order, g.who)
			next = g.release
		case <-time.After(10 * time.Second):
			t.Fatalf("no request got the freed seat; order so far %v", order)
		}
	}
	next()
	wg.Wait()
	if order[0] != "flooder" || order[1] != "victim" {
		t.Errorf("dispatch order %v: want the victim second (one flooder turn, then the victim)", order)
	}
	assertIdle(t, l)
}

func TestQueueFullRefusesWithRetryHint(t *testing.T) {
	l, reg, queued := newTestLimiter(t, Options{MaxRequestsInflight: 1, MaxMutatingRequestsInflight: 1, QueueLength: 2})
	holder := mustAcquire(t, l, request("flooder", "create"))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := l.Acquire(ctx, request("flooder", "create")); !errors.Is(err, context.Canceled) {
				t.Errorf("queued request ended with %v, want context.Canceled", err)
			}
		}()
	}
	waitQueued(t, queued, 2)

	_, err := l.Acquire(context.Background(), request("flooder", "update"))
	if !apierrors.IsTooManyRequests(err) {
		t.Fatalf("third request of a full queue: %v, want TooManyRequests", err)
	}
	se := apierrors.FromError(err)
	if got := se.Status.GetDetails().GetRetryAfterSeconds(); got != RetryAfterSeconds {
		t.Errorf("retryAfterSeconds = %d, want %d", got, RetryAfterSeconds)
	}
	for _, want := range []string{`user "flooder"`, "retry after 1 s", "2 of its mutating requests", "workload"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	// Read-only seats are another pool: a Get of the same user runs.
	mustAcquire(t, l, request("flooder", "get"))()
	// Another user still queues (and here gives up).
	short, cancelShort := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancelShort()
	if _, err := l.Acquire(short, request("victim", "create")); !apierrors.IsTooManyRequests(err) {
		t.Errorf("another user's request at its deadline: %v, want TooManyRequests (time-out)", err)
	}
	cancel()
	wg.Wait()
	holder()
	assertIdle(t, l)

	rejected := func(reason string) float64 {
		return testutil.ToFloat64(l.series[globalDefault][mutating].rejected[map[string]outcome{"queue-full": queueFull, "time-out": timedOut, "cancelled": cancelled}[reason]])
	}
	if rejected("queue-full") != 1 || rejected("time-out") != 1 || rejected("cancelled") != 2 {
		t.Errorf("rejected: queue-full %v, time-out %v, cancelled %v; want 1, 1, 2", rejected("queue-full"), rejected("time-out"), rejected("cancelled"))
	}
	if problems, err := testutil.GatherAndLint(reg); err != nil || len(problems) > 0 {
		t.Errorf("metric lint: %v %v", problems, err)
	}
}

func TestMaxWaitTimesOut(t *testing.T) {
	l, _, _ := newTestLimiter(t, Options{MaxRequestsInflight: 1, MaxMutatingRequestsInflight: 1, MaxWait: 30 * time.Millisecond})
	holder := mustAcquire(t, l, request("a", "list"))
	start := time.Now()
	_, err := l.Acquire(context.Background(), request("b", "list"))
	// The message gives the time actually waited: the max wait, or a few
	// ms more on a busy machine (the timer fires late under -race).
	m := regexp.MustCompile(`it waited (\d+)ms for a readOnly seat`).FindStringSubmatch(fmt.Sprint(err))
	if !apierrors.IsTooManyRequests(err) || m == nil {
		t.Fatalf("after max wait: %v, want TooManyRequests saying how long it waited", err)
	}
	if ms, _ := strconv.Atoi(m[1]); ms < 30 {
		t.Errorf("after max wait: %v, want a wait of at least the 30ms max wait", err)
	}
	if waited := time.Since(start); waited < 30*time.Millisecond {
		t.Errorf("refused after %v, before the max wait", waited)
	}
	holder()
	assertIdle(t, l)
}

// TestCancellationFreesThePlace: a request that gives up leaves its queue,
// so the user may queue another in its place.
func TestCancellationFreesThePlace(t *testing.T) {
	l, _, queued := newTestLimiter(t, Options{MaxRequestsInflight: 1, MaxMutatingRequestsInflight: 1, QueueLength: 1})
	holder := mustAcquire(t, l, request("a", "get"))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() {
		_, err := l.Acquire(ctx, request("a", "get"))
		done <- err
	}()
	waitQueued(t, queued, 1)
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled wait: %v", err)
	}
	got := make(chan func())
	go func() {
		release, err := l.Acquire(context.Background(), request("a", "get"))
		if err != nil {
			t.Errorf("request in the freed place: %v", err)
			close(got)
			return
		}
		got <- release
	}()
	waitQueued(t, queued, 1)
	holder()
	if release := <-got; release != nil {
		release()
	}
	assertIdle(t, l)
}

// TestSystemLevelHasItsOwnSeats: a user flooding the workload level takes
// no seat from the scheduler, the nodes or the controller-manager, and
// the apiserver's loopback is exempt.
func TestSystemLevelHasItsOwnSeats(t *testing.T) {
	l, _, _ := newTestLimiter(t, Options{MaxRequestsInflight: 1, MaxMutatingRequestsInflight: 1, MaxWait: time.Millisecond})
	admin := mustAcquire(t, l, request("admin", "get", user.Masters))
	if _, err := l.Acquire(context.Background(), request("admin2", "get", user.Masters)); !apierrors.IsTooManyRequests(err) {
		t.Fatalf("second workload request with the seat taken: %v, want TooManyRequests (system:masters is not exempt)", err)
	}
	sched := mustAcquire(t, l, request(user.Scheduler, "get"))
	if _, err := l.Acquire(context.Background(), request("system:node:n1", "get", user.NodesGroup)); !apierrors.IsTooManyRequests(err) {
		t.Errorf("the system level's one read-only seat is the scheduler's: a node got one too (%v)", err)
	}
	loop := &server.RequestInfo{Verb: "list", User: &user.Info{Name: user.APIServer, Groups: []string{user.Masters}, Authenticator: "loopback"}}
	for range 3 {
		mustAcquire(t, l, loop)()
	}
	impostor := &server.RequestInfo{Verb: "list", User: &user.Info{Name: user.APIServer, Authenticator: "x509"}}
	if _, err := l.Acquire(context.Background(), impostor); !apierrors.IsTooManyRequests(err) {
		t.Errorf("a certificate naming system:apiserver is exempt (%v)", err)
	}
	mustAcquire(t, l, request("system:node:n1", "update", user.NodesGroup))()
	admin()
	sched()
	assertIdle(t, l)
}

// TestNoLeakedSeatsUnderStress runs many users' requests with random
// cancellations and time-outs, Lists of two seats among them: never more
// seats taken than there are, and every seat and queue place is given
// back.
func TestNoLeakedSeatsUnderStress(t *testing.T) {
	const limit = 3
	counts := &configMapCounts{byNamespace: map[string]int{"": 150}} // a List: 2 seats
	l, _, _ := newCountingLimiter(t, Options{MaxRequestsInflight: limit, MaxMutatingRequestsInflight: limit, QueueLength: 4, MaxWait: 5 * time.Millisecond}, counts.count)
	var executing [numKinds]atomic.Int32
	var ok, refused, gaveUp atomic.Int64
	var wg sync.WaitGroup
	for g := range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(g), 1))
			for range 300 {
				verb := []string{"get", "list", "create", "delete"}[r.IntN(4)]
				ri := request(fmt.Sprintf("user-%d", r.IntN(5)), verb)
				ctx, cancel := context.WithCancel(context.Background())
				if r.IntN(8) == 0 {
					cancel()
				}
				release, err := l.Acquire(ctx, ri)
				switch {
				case err == nil:
					k, seats := kindOf(verb), int32(1)
					if verb == "list" {
						seats = 2
					}
					if n := executing[k].Add(seats); n > limit {
						t.Errorf("%d %s seats taken, limit %d", n, kindNames[k], limit)
					}
					if r.IntN(2) == 0 {
						time.Sleep(time.Duration(r.IntN(200)) * time.Microsecond) // the request's work
					}
					executing[k].Add(-seats)
					release()
					ok.Add(1)
				case apierrors.IsTooManyRequests(err):
					refused.Add(1)
				case errors.Is(err, context.Canceled):
					gaveUp.Add(1)
				default:
					t.Errorf("Acquire: %v", err)
				}
				cancel()
			}
		}()
	}
	wg.Wait()
	t.Logf("%d executed, %d refused, %d gave up", ok.Load(), refused.Load(), gaveUp.Load())
	if ok.Load() == 0 {
		t.Error("no request executed")
	}
	assertIdle(t, l)
}

// assertIdle checks that no seat is held and nobody waits, in the pools
// and in the gauges.
func assertIdle(t *testing.T, l *Limiter) {
	t.Helper()
	for sc, bySchema := range l.series {
		for k, s := range bySchema {
			if s == nil {
				continue
			}
			executing, waiting, ring, blocked := s.seats.state()
			if executing != 0 || waiting != 0 || ring != 0 || blocked {
				t.Errorf("%s %s: %d seats still taken, %d requests queued, %d flows in the ring, blocked %v", schemas[sc].name, kindNames[k], executing, waiting, ring, blocked)
			}
			s.seats.mu.Lock()
			for _, f := range s.seats.flows {
				if f.executing != 0 || len(f.waiters) != 0 || f.inRing {
					t.Errorf("%s %s: flow %s still holds %d seats, %d waiting", schemas[sc].name, kindNames[k], f.name, f.executing, len(f.waiters))
				}
			}
			s.seats.mu.Unlock()
			if v := testutil.ToFloat64(s.executing); v != 0 {
				t.Errorf("%s %s: executing gauge %v", schemas[sc].name, kindNames[k], v)
			}
			if v := testutil.ToFloat64(s.executingSeats); v != 0 {
				t.Errorf("%s %s: executing seats gauge %v", schemas[sc].name, kindNames[k], v)
			}
			if v := testutil.ToFloat64(s.inQueue); v != 0 {
				t.Errorf("%s %s: in-queue gauge %v", schemas[sc].name, kindNames[k], v)
			}
		}
	}
}

// TestNoLostWakeups: a request that queues as the last seat frees is
// woken by that release, not left waiting for another.
func TestNoLostWakeups(t *testing.T) {
	l, _, _ := newTestLimiter(t, Options{MaxRequestsInflight: 1, MaxMutatingRequestsInflight: 1, MaxWait: time.Hour})
	a, b := request("a", "get"), request("b", "get")
	done := make(chan error)
	for i := range 20000 {
		release := mustAcquire(t, l, a)
		go func() {
			r, err := l.Acquire(context.Background(), b)
			if err == nil {
				r()
			}
			done <- err
		}()
		if i%2 == 0 {
			runtime.Gosched() // vary who gets there first
		}
		release()
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("iteration %d: a request still waits 10 s after the seat was freed: a lost wake-up", i)
		}
	}
	assertIdle(t, l)
}

// TestIdleFlowsAreBounded: flows are kept for reuse while idle, but not
// for every user ever seen.
func TestIdleFlowsAreBounded(t *testing.T) {
	l, _, _ := newTestLimiter(t, Options{MaxRequestsInflight: 2, MaxMutatingRequestsInflight: 2})
	for i := range 3 * maxIdleFlows {
		mustAcquire(t, l, request(fmt.Sprintf("user-%d", i), "get"))()
	}
	p := l.series[globalDefault][readOnly].seats
	p.mu.Lock()
	n := len(p.flows)
	p.mu.Unlock()
	if n > maxIdleFlows+1 {
		t.Errorf("%d flows kept after %d users came and went, want at most %d", n, 3*maxIdleFlows, maxIdleFlows+1)
	}
	assertIdle(t, l)
}

// BenchmarkAcquire is the hot path: a seat is free.
func BenchmarkAcquire(b *testing.B) {
	l, err := New(Options{MaxRequestsInflight: 400, MaxMutatingRequestsInflight: 200}, nil, prometheus.NewRegistry())
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		ri := request(fmt.Sprintf("user-%d", rand.IntN(8)), "create")
		for pb.Next() {
			release, err := l.Acquire(ctx, ri)
			if err != nil {
				b.Fatal(err)
			}
			release()
		}
	})
}
