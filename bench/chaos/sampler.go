package chaos

import (
	"context"
	"fmt"
	"sync"
	"time"

	"skiff.dev/internal/client"
	appsv1 "skiff.dev/proto/apps/v1"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
)

// snapshot is the cluster as one sample read it.
type snapshot struct {
	at          time.Time
	pods        []*corev1.Pod // of the chaos namespace
	deployments map[string]*appsv1.Deployment
	nodes       map[string]*corev1.Node
	running     map[string][]string // pod uid -> nodes with a ready sandbox of it
}

// sampler reads the cluster every 100 ms, checks the invariants on what
// it read, and wakes the phases waiting for a condition.
type sampler struct {
	r *run

	mu         sync.Mutex
	last       *snapshot
	next       chan struct{} // closed at the next snapshot
	samples    int
	unreadable int
	seen       map[string]bool // violations already reported, per phase
}

func newSampler(r *run) *sampler {
	return &sampler{r: r, next: make(chan struct{}), seen: map[string]bool{}}
}

func (s *sampler) run(ctx context.Context) {
	t := time.NewTicker(sampleEvery)
	defer t.Stop()
	for {
		snap, err := s.read(ctx)
		s.mu.Lock()
		s.samples++
		if err != nil {
			s.unreadable++
		} else {
			s.last = snap
			close(s.next)
			s.next = make(chan struct{})
		}
		s.mu.Unlock()
		if err == nil {
			s.check(snap)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// read takes one snapshot; the calls have a short deadline, so that an
// apiserver that is away costs a sample, not the sampler.
func (s *sampler) read(ctx context.Context) (*snapshot, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	conn := s.r.c.conn
	snap := &snapshot{at: time.Now(), deployments: map[string]*appsv1.Deployment{}, nodes: map[string]*corev1.Node{}, running: map[string][]string{}}
	// The runtimes first: a pod seen running is then in the API's list
	// (or deleted after), never the other way round.
	for _, n := range s.r.c.nodes {
		for _, sb := range n.sim.Sandboxes() {
			if sb.Ready() {
				snap.running[sb.UID] = append(snap.running[sb.UID], n.name)
			}
		}
	}
	pods, err := client.Pods(conn).List(ctx, &metav1.ListOptions{Namespace: namespace})
	if err != nil {
		return nil, err
	}
	snap.pods = pods.GetItems()
	deps, err := client.Deployments(conn).List(ctx, &metav1.ListOptions{Namespace: namespace})
	if err != nil {
		return nil, err
	}
	for _, d := range deps.GetItems() {
		snap.deployments[d.GetMetadata().GetName()] = d
	}
	nodes, err := client.Nodes(conn).List(ctx, &metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	for _, n := range nodes.GetItems() {
		snap.nodes[n.GetMetadata().GetName()] = n
	}
	return snap, nil
}

// check records what snap violates, once per phase and kind of violation.
func (s *sampler) check(snap *snapshot) {
	for _, v := range check(sample{pods: snap.pods, running: snap.running}, s.r.currentLimits()) {
		s.r.mu.Lock()
		key := s.r.phase + "\x00" + v
		s.r.mu.Unlock()
		s.mu.Lock()
		first := !s.seen[key]
		s.seen[key] = true
		s.mu.Unlock()
		if first {
			s.r.violate(v)
		}
	}
}

// until waits for a snapshot for which cond holds, for at most timeout.
func (s *sampler) until(ctx context.Context, timeout time.Duration, cond func(*snapshot) bool) error {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		s.mu.Lock()
		last, next := s.last, s.next
		s.mu.Unlock()
		if last != nil && cond(last) {
			return nil
		}
		select {
		case <-next:
		case <-ctx.Done():
			return ctx.Err()
		case <-deadline.C:
			return fmt.Errorf("not within %v", timeout)
		}
	}
}

// fresh waits for a snapshot taken after now and returns it.
func (s *sampler) fresh(ctx context.Context, timeout time.Duration) (*snapshot, error) {
	now := time.Now()
	var got *snapshot
	err := s.until(ctx, timeout, func(snap *snapshot) bool {
		got = snap
		return snap.at.After(now)
	})
	return got, err
}

func (s *sampler) counts() (samples, unreadable int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.samples, s.unreadable
}
