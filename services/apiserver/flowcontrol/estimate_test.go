package flowcontrol

import (
	"context"
	"errors"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"skiff.dev/internal/apierrors"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/apiserver/server"
	"skiff.dev/services/apiserver/user"
)

// configMapCounts is an ObjectCounter of ConfigMaps only: so many in each
// namespace, their sum across namespaces. asked records each upTo.
type configMapCounts struct {
	mu          sync.Mutex
	byNamespace map[string]int
	asked       []int
}

func (c *configMapCounts) count(group, resource, namespace string, upTo int) (int, bool) {
	if group != "" || resource != "configmaps" {
		return 0, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.asked = append(c.asked, upTo)
	n := c.byNamespace[namespace]
	if namespace == "" {
		for _, m := range c.byNamespace {
			n += m
		}
	}
	return min(n, upTo), true
}

func (c *configMapCounts) lastAsked() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.asked) == 0 {
		return 0
	}
	return c.asked[len(c.asked)-1]
}

func list(who, namespace string, opts *metav1.ListOptions) *server.RequestInfo {
	opts.Namespace = namespace
	return &server.RequestInfo{Resource: "configmaps", Verb: "list", Namespace: namespace, LabelSelector: opts.GetLabelSelector(), FieldSelector: opts.GetFieldSelector(),
		Object: opts, User: &user.Info{Name: who, Authenticator: "token"}}
}

// TestListSeats: a List takes a seat per 100 objects it reads (its limit,
// or all of its namespace if fewer, or all of it with a selector), at
// least one and at most ten; any other request takes one.
func TestListSeats(t *testing.T) {
	counts := &configMapCounts{byNamespace: map[string]int{"small": 10, "odd": 101, "big": 1000, "huge": 5000}}
	l, reg, _ := newCountingLimiter(t, Options{MaxRequestsInflight: 40, MaxMutatingRequestsInflight: 40}, counts.count)
	secrets := list("u", "big", &metav1.ListOptions{})
	secrets.Resource = "secrets"
	requests, seats := 0, 0
	for _, tc := range []struct {
		name      string
		ri        *server.RequestInfo
		seats     int
		countedTo int // the upTo the counter was asked; 0: not asked
	}{
		{"get", request("u", "get"), 1, 0},
		{"create", request("u", "create"), 1, 0},
		{"watch", &server.RequestInfo{Resource: "configmaps", Verb: "watch", Namespace: "big", Object: &metav1.ListOptions{}, User: &user.Info{Name: "u"}}, 1, 0},
		{"list of 10", list("u", "small", &metav1.ListOptions{}), 1, 1000},
		{"list of 101", list("u", "odd", &metav1.ListOptions{}), 2, 1000},
		{"list of 1,000", list("u", "big", &metav1.ListOptions{}), 10, 1000},
		{"list limit=500 of 1,000", list("u", "big", &metav1.ListOptions{Limit: 500}), 5, 500},
		{"list limit=50 of 1,000", list("u", "big", &metav1.ListOptions{Limit: 50}), 1, 50},
		{"list limit=5000 of 1,000", list("u", "big", &metav1.ListOptions{Limit: 5000}), 10, 1000},
		{"list of 5,000 is counted to 1,000", list("u", "huge", &metav1.ListOptions{}), 10, 1000},
		{"list limit=500 with a label selector reads them all", list("u", "big", &metav1.ListOptions{Limit: 500, LabelSelector: "app=web"}), 10, 1000},
		{"list limit=500 with a field selector reads them all", list("u", "big", &metav1.ListOptions{Limit: 500, FieldSelector: "metadata.name=x"}), 10, 1000},
		{"list of all namespaces", list("u", "", &metav1.ListOptions{Limit: 300}), 3, 300},
		{"list of a resource without counts", secrets, 1, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			counts.asked = nil
			s := l.series[globalDefault][kindOf(tc.ri.Verb)]
			release, err := l.Acquire(context.Background(), tc.ri)
			if err != nil {
				t.Fatal(err)
			}
			if got := int(testutil.ToFloat64(s.executingSeats)); got != tc.seats {
				t.Errorf("holds %d seats, want %d", got, tc.seats)
			}
			if got := counts.lastAsked(); got != tc.countedTo {
				t.Errorf("objects counted up to %d, want %d", got, tc.countedTo)
			}
			release()
			assertIdle(t, l)
		})
		requests, seats = requests+1, seats+tc.seats
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var observed uint64
	var sum float64
	for _, mf := range mfs {
		if mf.GetName() == "apiserver_flowcontrol_work_estimated_seats" {
			for _, m := range mf.GetMetric() {
				observed += m.GetHistogram().GetSampleCount()
				sum += m.GetHistogram().GetSampleSum()
			}
		}
	}
	if observed != uint64(requests) || sum != float64(seats) {
		t.Errorf("apiserver_flowcontrol_work_estimated_seats: %d requests, %v seats; want %d, %d", observed, sum, requests, seats)
	}
}

// TestListSeatsOfASmallLevel: a List takes at most the seats one user may
// hold (8 seats: 6), so that it can run at all.
func TestListSeatsOfASmallLevel(t *testing.T) {
	counts := &configMapCounts{byNamespace: map[string]int{"big": 1000}}
	l, _, _ := newCountingLimiter(t, Options{MaxRequestsInflight: 8, MaxMutatingRequestsInflight: 8}, counts.count)
	release := mustAcquire(t, l, list("u", "big", &metav1.ListOptions{}))
	s := l.series[globalDefault][readOnly]
	if got := testutil.ToFloat64(s.executingSeats); got != 6 {
		t.Errorf("a List of 1,000 in a level of 8 seats holds %v, want 6", got)
	}
	release()
	assertIdle(t, l)
}

// tryAcquire takes ri's seats only if they are free now: a request that
// would queue gives up at once (its context is already cancelled).
func tryAcquire(t *testing.T, l *Limiter, ri *server.RequestInfo) (func(), bool) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	release, err := l.Acquire(ctx, ri)
	switch {
	case err == nil:
		return release, true
	case errors.Is(err, context.Canceled):
		return nil, false
	}
	t.Fatalf("Acquire for %s: %v", ri.User.Name, err)
	return nil, false
}

// TestFloodOfLargeListsWithDefaults is issue 16's flood against the
// command's default seats: 128 concurrent Lists of 500 of 1,000
// ConfigMaps from user flooder. Each takes 5 seats; the flooder holds at
// most three quarters of the level's seats (on 2 cores: 8 seats, one List
// at a time); the rest queue, none refused (as in Kubernetes, where one
// flow may fill its hand of 6 queues of 50: refused clients all came back
// a second later together, a burst of work that took the CPU from the
// others); and user victim's small List finds a seat free every time, as
// the flooder's Lists finish one after the other.
func TestFloodOfLargeListsWithDefaults(t *testing.T) {
	o := DefaultOptions()
	counts := &configMapCounts{byNamespace: map[string]int{"flood": 1000, "victim": 10}}
	l, _, queued := newCountingLimiter(t, o, counts.count)
	const flooders = 128
	seats := o.MaxRequestsInflight
	flowCap := seats - (seats+3)/4
	width := min(5, flowCap)
	running := flowCap / width // the flooder's Lists executing at once
	waiting := flooders - running
	t.Logf("%d read-only seats, a user holds at most %d: %d Lists of %d seats at once, %d queued", seats, flowCap, running, width, waiting)

	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	grants := make(chan func(), flooders)
	refusals := make(chan error, flooders)
	var wg sync.WaitGroup
	for range flooders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			release, err := l.Acquire(ctx, list("flooder", "flood", &metav1.ListOptions{Limit: 500}))
			if err != nil {
				refusals <- err
				return
			}
			grants <- release
		}()
	}
	var held []func()
	for range running {
		held = append(held, <-grants)
	}
	timeout := time.After(10 * time.Second)
	for range waiting {
		select {
		case <-queued:
		case err := <-refusals:
			t.Fatalf("a List of the flooder's %d: %v, want it queued", flooders, err)
		case <-timeout:
			t.Fatalf("waited 10s for %d Lists to queue", waiting)
		}
	}
	s := l.series[globalDefault][readOnly]
	victim := list("victim", "victim", &metav1.ListOptions{})
	for turn := range 2 * running {
		if got := int(testutil.ToFloat64(s.executingSeats)); got != running*width {
			t.Fatalf("turn %d: %d seats executing, want the flooder's %d Lists of %d", turn, got, running, width)
		}
		select {
		case <-grants:
			t.Fatalf("turn %d: the flooder got a List past its %d seats", turn, flowCap)
		default:
		}
		release, ok := tryAcquire(t, l, victim)
		if !ok {
			t.Fatalf("turn %d: the victim's List of 10 had to wait for a seat", turn)
		}
		release()
		// A List of the flooder ends: its next one takes the seats.
		held[0]()
		held = append(held[1:], <-grants)
	}
	stop()
	for _, release := range held {
		release()
	}
	wg.Wait()
	close(grants)
	for release := range grants { // dispatched as the flood stopped
		release()
	}
	assertIdle(t, l)
}

// TestWideListIsNotStarved: a List that needs more seats than are free
// waits for them, and the seats given back meanwhile are kept for it:
// narrow requests that come later queue behind it instead of taking them
// one by one. A wait that ends (here, cancelled) lets the others go.
func TestWideListIsNotStarved(t *testing.T) {
	counts := &configMapCounts{byNamespace: map[string]int{"big": 1000}}
	// 4 seats: a user holds at most 3, a List at most 3.
	l, _, queued := newCountingLimiter(t, Options{MaxRequestsInflight: 4, MaxMutatingRequestsInflight: 4}, counts.count)
	a1 := mustAcquire(t, l, request("alice", "get"))
	a2 := mustAcquire(t, l, request("alice", "get"))

	type grant struct {
		who     string
		release func()
		err     error
	}
	grants := make(chan grant, 4)
	start := func(ctx context.Context, who string, ri *server.RequestInfo) {
		go func() {
			release, err := l.Acquire(ctx, ri)
			grants <- grant{who, release, err}
		}()
	}
	next := func() grant {
		t.Helper()
		select {
		case g := <-grants:
			if g.err != nil {
				t.Fatalf("%s: %v", g.who, g.err)
			}
			return g
		case <-time.After(10 * time.Second):
			t.Fatal("no request got seats in 10 s")
		}
		return grant{}
	}
	start(context.Background(), "bob", list("bob", "big", &metav1.ListOptions{})) // 3 seats, 2 free
	waitQueued(t, queued, 1)
	if _, ok := tryAcquire(t, l, request("carol", "get")); ok {
		t.Fatal("carol's Get took a seat kept for bob's List")
	}
	start(context.Background(), "carol", request("carol", "get"))
	waitQueued(t, queued, 1)
	a1() // 3 free: bob's
	if g := next(); g.who != "bob" {
		t.Fatalf("%s got the seats, want bob", g.who)
	} else {
		a2() // 1 free: carol's
		if g := next(); g.who != "carol" {
			t.Fatalf("%s got the seat, want carol", g.who)
		} else {
			g.release()
		}
		g.release()
	}

	// A List waiting for seats gives up: the seats it kept go to the next.
	a1 = mustAcquire(t, l, request("alice", "get"))
	a2 = mustAcquire(t, l, request("alice", "get"))
	ctx, cancel := context.WithCancel(context.Background())
	start(ctx, "dave", list("dave", "big", &metav1.ListOptions{}))
	waitQueued(t, queued, 1)
	start(context.Background(), "erin", request("erin", "get"))
	waitQueued(t, queued, 1)
	cancel()
	for range 2 {
		g := <-grants
		switch {
		case g.who == "dave" && errors.Is(g.err, context.Canceled):
		case g.who == "erin" && g.err == nil:
			g.release()
		default:
			t.Fatalf("%s: %v", g.who, g.err)
		}
	}
	a1()
	a2()
	assertIdle(t, l)
}

// TestWideListRefusalSaysItsSeats: the refusal of a List that waited too
// long names the seats it waited for.
func TestWideListRefusalSaysItsSeats(t *testing.T) {
	counts := &configMapCounts{byNamespace: map[string]int{"big": 1000}}
	l, _, _ := newCountingLimiter(t, Options{MaxRequestsInflight: 8, MaxMutatingRequestsInflight: 8, MaxWait: 20 * time.Millisecond}, counts.count)
	holder := mustAcquire(t, l, list("a", "big", &metav1.ListOptions{Limit: 500}))
	_, err := l.Acquire(context.Background(), list("b", "big", &metav1.ListOptions{Limit: 500}))
	if !apierrors.IsTooManyRequests(err) || !regexp.MustCompile(`it waited \d+ms for 5 readOnly seats of priority level workload`).MatchString(err.Error()) {
		t.Errorf("refusal %v: want TooManyRequests saying it waited for 5 readOnly seats", err)
	}
	holder()
	assertIdle(t, l)
}
