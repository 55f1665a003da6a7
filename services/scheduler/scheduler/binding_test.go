package scheduler

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"skiff.dev/internal/apierrors"
	"skiff.dev/internal/client"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/apiserver/flowcontrol"
	"skiff.dev/services/scheduler/queue"
)

// TestDefaultBindsInFlightFitOneUsersSeats: the apiserver's default flow
// control gives a priority level DefaultMaxMutatingRequestsInflight seats
// and queues DefaultQueueLength more requests of one user; binds past that
// are refused and come back a second later (with 512 in flight, a burst of
// 5,000 pods measured a create-to-bound p99 above a second). The binds
// must fit in the seats; the scheduler's other writes (its events) then
// wait in the queue rather than being refused.
func TestDefaultBindsInFlightFitOneUsersSeats(t *testing.T) {
	if DefaultMaxBindsInFlight > flowcontrol.DefaultMaxMutatingRequestsInflight {
		t.Errorf("DefaultMaxBindsInFlight %d > the apiserver's %d mutating seats per priority level",
			DefaultMaxBindsInFlight, flowcontrol.DefaultMaxMutatingRequestsInflight)
	}
}

// bindSpy intercepts the scheduler's Bind calls: before forwarding the
// first bind of a chosen pod it runs meddle (which changes the world
// under the scheduler's feet), and it records every bind's outcome.
type bindSpy struct {
	target string
	meddle func(ctx context.Context, b *corev1.Binding)

	mu      sync.Mutex
	done    bool
	results map[string][]error // pod name -> outcome of each Bind
}

func (s *bindSpy) intercept(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	b, ok := req.(*corev1.Binding)
	if !ok || method != "/skiff.core.v1.Pods/Bind" {
		return invoker(ctx, method, req, reply, cc, opts...)
	}
	name := b.GetMetadata().GetName()
	s.mu.Lock()
	first := name == s.target && !s.done
	s.done = s.done || first
	s.mu.Unlock()
	if first {
		s.meddle(ctx, b)
	}
	err := invoker(ctx, method, req, reply, cc, opts...)
	s.mu.Lock()
	if s.results == nil {
		s.results = map[string][]error{}
	}
	s.results[name] = append(s.results[name], err)
	s.mu.Unlock()
	return err
}

func (s *bindSpy) outcomes(name string) []error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]error(nil), s.results[name]...)
}

// TestBindConflictRequeuesThePod: the pod changes between the scheduler's
// decision and its bind; the apiserver refuses the bind (the pod's
// resourceVersion moved), the scheduler forgets the assumption and places
// the pod's new version.
func TestBindConflictRequeuesThePod(t *testing.T) {
	e := newEnv(t)
	e.createNode(nodeSpec{name: "n1", cpu: "1", mem: "1Gi"})
	spy := &bindSpy{target: "victim", meddle: func(ctx context.Context, b *corev1.Binding) {
		err := client.RetryOnConflict(ctx, client.DefaultRetry, func() error {
			p, err := client.Pods(e.conn).Get(ctx, "test", b.GetMetadata().GetName())
			if err != nil {
				return err
			}
			p = proto.Clone(p).(*corev1.Pod)
			if p.Metadata.Labels == nil {
				p.Metadata.Labels = map[string]string{}
			}
			p.Metadata.Labels["touched"] = "yes"
			_, err = client.Pods(e.conn).Update(ctx, p)
			return err
		})
		if err != nil {
			t.Errorf("changing the pod under the scheduler: %v", err)
		}
	}}
	s := e.startScheduler(Config{}, e.dial(grpc.WithUnaryInterceptor(spy.intercept)))
	e.createPod(newPod("victim", "600m", ""))

	if n := e.nodeOf("victim", 15*time.Second); n != "n1" {
		t.Fatalf("bound to %s", n)
	}
	// (The watch may show the bound pod before the spy hears the answer.)
	// A refused bind is retried at once (as a move), maybe before the
	// scheduler's watch brings the changed pod: conflicts until it does.
	e.await(5*time.Second, "the spy to record the successful bind", func() (bool, string) {
		out := spy.outcomes("victim")
		return len(out) >= 2 && out[len(out)-1] == nil, fmt.Sprint(out)
	})
	out := spy.outcomes("victim")
	for _, err := range out[:len(out)-1] {
		if !apierrors.IsConflict(err) {
			t.Fatalf("binds of victim: %v; want Conflicts, then a success", out)
		}
	}
	if e.pod("victim").GetMetadata().GetLabels()["touched"] != "yes" {
		t.Error("the bound pod is not the changed one")
	}
	// The forgotten assumption left no trace: n1 counts the pod once.
	e.await(10*time.Second, "the cache to count victim once on n1", func() (bool, string) {
		ni := s.cache.NodeInfo("n1")
		return len(ni.Pods) == 1 && ni.Requested.MilliCPU == 600, ni.String()
	})
}

// TestBindRefusedBecauseBoundElsewhere: another writer binds the pod first;
// the scheduler's bind is refused, and the pod is counted where it really
// is, not retried.
func TestBindRefusedBecauseBoundElsewhere(t *testing.T) {
	e := newEnv(t)
	e.createNode(nodeSpec{name: "n1", cpu: "4", mem: "4Gi"})
	e.createNode(nodeSpec{name: "n2", cpu: "1", mem: "4Gi"})
	var other string
	spy := &bindSpy{target: "contested", meddle: func(ctx context.Context, b *corev1.Binding) {
		other = "n1"
		if b.GetTarget().GetName() == "n1" {
			other = "n2"
		}
		_, err := corev1.NewPodsClient(e.conn).Bind(ctx, &corev1.Binding{
			Metadata: &metav1.ObjectMeta{Namespace: "test", Name: b.GetMetadata().GetName()},
			Target:   &corev1.ObjectReference{Kind: "Node", Name: other},
		})
		if err != nil {
			t.Errorf("binding first: %v", err)
		}
	}}
	s := e.startScheduler(Config{}, e.dial(grpc.WithUnaryInterceptor(spy.intercept)))
	e.createPod(newPod("contested", "500m", ""))

	if n := e.nodeOf("contested", 15*time.Second); n != other {
		t.Fatalf("bound to %s, want %s (the other writer's choice)", n, other)
	}
	// The watch shows the other writer's bind before the scheduler hears its
	// own bind refused: wait for the refusal and for the queue to be done
	// with the pod (a retry would hold it in backoff, then bind again).
	e.await(10*time.Second, "the refusal, an idle queue and the cache counting the pod on "+other, func() (bool, string) {
		ni := s.cache.NodeInfo(other)
		out, q := spy.outcomes("contested"), s.queue.Lengths()
		return len(out) >= 1 && q == (queue.Lengths{}) &&
				ni != nil && ni.Requested.MilliCPU == 500 && !s.cache.IsAssumed(e.pod("contested").GetMetadata().GetUid()),
			fmt.Sprintf("binds %v, queue %+v, %v", out, q, ni)
	})
	if out := spy.outcomes("contested"); len(out) != 1 || !apierrors.IsConflict(out[0]) {
		t.Errorf("binds of contested: %v; want one Conflict and no retry", out)
	}
}
