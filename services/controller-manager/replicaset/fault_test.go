package replicaset

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"go.uber.org/zap/zaptest"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"skiff.dev/internal/apierrors"
	"skiff.dev/internal/client"
	"skiff.dev/internal/events"
	"skiff.dev/internal/informer"
	"skiff.dev/internal/object"
	appsv1 "skiff.dev/proto/apps/v1"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/controller-manager/manager"
)

// TestFailures drives one sync against an apiserver double that refuses
// pod creations or deletions (and, for creations, which run in a burst
// after the sync, the sync that reports them), and checks what a failure
// leaves behind: the calls made (a slow start stops after its first failed
// batch), the expectations (lowered for everything that will never be
// observed), the events, the ReplicaFailure condition, and the error
// (retried).
func TestFailures(t *testing.T) {
	unavailable := apierrors.NewServiceUnavailable("etcd is away")
	cases := []struct {
		name      string
		replicas  int32
		pods      []*corev1.Pod
		fail      func(call int, name string) error // the answer to the call-th pod write
		wantCalls int
		// Up to this many calls (if more than wantCalls): every call but
		// the failed one succeeded, its pod expected and its event recorded.
		wantCallsUpTo int
		wantEvents    []string
		wantReason    string // of the ReplicaFailure condition; "" none
		wantAdds      int
		wantDels      int
	}{
		{name: "every create fails: one call only",
			replicas: 20, fail: func(int, string) error { return unavailable },
			wantCalls: 1, wantEvents: []string{"Warning FailedCreate"}, wantReason: "FailedCreate"},
		// Calls 4-7 are one batch, sent concurrently: those sent before
		// the failure was recorded are made, no later one.
		{name: "the fourth create fails: no call after it",
			replicas: 20, fail: func(call int, _ string) error {
				if call == 4 {
					return unavailable
				}
				return nil
			},
			wantCalls: 4, wantCallsUpTo: 7, wantReason: "FailedCreate"},
		{name: "deletions: one fails, one finds its pod gone, one works",
			replicas: 1,
			pods: []*corev1.Pod{
				testPod("keep", ownedBy("rs1", true), onNode("n"), ready(epoch)),
				testPod("gone", ownedBy("rs1", true)), testPod("refused", ownedBy("rs1", true)), testPod("deleted", ownedBy("rs1", true)),
			},
			fail: func(_ int, name string) error {
				switch name {
				case "gone":
					return apierrors.NewNotFound("pods", name)
				case "refused":
					return unavailable
				}
				return nil
			},
			wantCalls: 3, wantReason: "FailedDelete", wantDels: 1,
			wantEvents: []string{"Normal SuccessfulDelete", "Warning FailedDelete"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rs := testRS(tc.replicas, 0)
			api := &fakeAPI{fail: tc.fail, pods: tc.pods}
			rec := &fakeRecorder{}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			mc := &manager.Context{Conn: api, Recorder: func(string) events.Recorder { return rec }, Logger: zaptest.NewLogger(t)}
			pods := runInformer(ctx, t, tc.pods)
			rss := runInformer(ctx, t, []*appsv1.ReplicaSet{rs})
			c := newController(mc, Options{}, pods, rss)

			_, err := c.Reconcile(ctx, "ns/web")
			c.bursts.wait()
			if int(tc.replicas) > len(tc.pods) {
				// Creations: the burst runs after the sync, and the next
				// sync reports how it went.
				if err != nil {
					t.Errorf("the sync that starts the creations: %v", err)
				}
				_, err = c.Reconcile(ctx, "ns/web")
			}
			if (err != nil) != (tc.wantReason != "") {
				t.Errorf("Reconcile: %v", err)
			}
			if got := api.podCalls(); tc.wantCallsUpTo > tc.wantCalls && got >= tc.wantCalls && got <= tc.wantCallsUpTo {
				tc.wantAdds = got - 1
				tc.wantEvents = append(repeat("Normal SuccessfulCreate", got-1), "Warning FailedCreate")
			} else if got != tc.wantCalls {
				t.Errorf("%d pod calls, want %d (up to %d)", got, tc.wantCalls, tc.wantCallsUpTo)
			}
			if adds, dels := c.expectations.Pending("ns/web"); adds != tc.wantAdds || dels != tc.wantDels {
				t.Errorf("expectations: %d creations, %d deletions pending, want %d and %d", adds, dels, tc.wantAdds, tc.wantDels)
			}
			if got := rec.sorted(); strings.Join(got, ",") != strings.Join(tc.wantEvents, ",") {
				t.Errorf("events %q, want %q", got, tc.wantEvents)
			}
			st := api.lastStatus()
			var reason string
			for _, c := range st.GetConditions() {
				if c.GetType() == ReplicaFailure {
					reason = c.GetReason()
				}
			}
			if reason != tc.wantReason {
				t.Errorf("ReplicaFailure reason %q, want %q (status %v)", reason, tc.wantReason, st)
			}
			if st.GetReplicas() != int32(len(tc.pods)) || st.GetObservedGeneration() != 3 {
				t.Errorf("status %v", st)
			}
		})
	}
}

func repeat(s string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = s
	}
	return out
}

// fakeAPI answers the pod creates, deletes and Lists and the status writes of one
// sync; anything else is an error.
type fakeAPI struct {
	fail func(call int, name string) error
	pods []*corev1.Pod // what a List of pods answers

	mu     sync.Mutex
	calls  int
	status *appsv1.ReplicaSetStatus
}

func (f *fakeAPI) Invoke(_ context.Context, method string, args, reply any, _ ...grpc.CallOption) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch method {
	case "/skiff.core.v1.Pods/Create":
		f.calls++
		if err := f.fail(f.calls, ""); err != nil {
			return err
		}
		p := proto.Clone(args.(*corev1.Pod)).(*corev1.Pod)
		p.Metadata.Name = p.Metadata.GenerateName + "x"
		// As on the wire: the caller may decode the pod into a smaller
		// message (PartialObjectMetadata).
		b, err := proto.Marshal(p)
		if err != nil {
			return err
		}
		return proto.UnmarshalOptions{DiscardUnknown: true}.Unmarshal(b, reply.(proto.Message))
	case "/skiff.core.v1.Pods/List":
		reply.(*corev1.PodList).Items = f.pods
		return nil
	case "/skiff.core.v1.Pods/Delete":
		f.calls++
		req := args.(*metav1.DeleteRequest)
		return f.fail(f.calls, req.GetName())
	case "/skiff.apps.v1.ReplicaSets/UpdateStatus":
		f.status = args.(*appsv1.ReplicaSet).GetStatus()
		proto.Merge(reply.(proto.Message), args.(proto.Message))
		return nil
	}
	return errors.New("fakeAPI: unexpected " + method)
}

func (f *fakeAPI) NewStream(context.Context, *grpc.StreamDesc, string, ...grpc.CallOption) (grpc.ClientStream, error) {
	return nil, errors.New("fakeAPI: no streams")
}

func (f *fakeAPI) podCalls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls
}

func (f *fakeAPI) lastStatus() *appsv1.ReplicaSetStatus {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.status
}

type fakeRecorder struct {
	mu     sync.Mutex
	events []string
}

func (r *fakeRecorder) Event(_ object.Object, typ, reason, _ string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, typ+" "+reason)
}

func (r *fakeRecorder) Eventf(obj object.Object, typ, reason, _ string, _ ...any) {
	r.Event(obj, typ, reason, "")
}

// sorted returns the events, Normal ones first (their order across
// concurrent calls is not defined otherwise).
func (r *fakeRecorder) sorted() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var normal, warning []string
	for _, e := range r.events {
		if strings.HasPrefix(e, "Normal") {
			normal = append(normal, e)
		} else {
			warning = append(warning, e)
		}
	}
	return append(normal, warning...)
}

// runInformer runs an informer over a fixed list of objects until ctx ends.
func runInformer[T object.Object](ctx context.Context, t *testing.T, items []T) *informer.Informer[T] {
	t.Helper()
	inf := informer.New[T](staticSource[T]{items}, informer.Options{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		inf.Run(ctx)
	}()
	t.Cleanup(func() { <-done })
	wctx, cancel := context.WithTimeout(ctx, patience)
	defer cancel()
	if !informer.WaitForSync(wctx, inf) {
		t.Fatal("informer did not sync")
	}
	return inf
}

// staticSource lists fixed objects and watches nothing.
type staticSource[T object.Object] struct{ items []T }

func (s staticSource[T]) List(context.Context, *metav1.ListOptions) ([]T, *metav1.ListMeta, error) {
	return s.items, &metav1.ListMeta{ResourceVersion: "1"}, nil
}

func (s staticSource[T]) Watch(ctx context.Context, _ *metav1.ListOptions) (informer.Stream[T], error) {
	ctx, cancel := context.WithCancel(ctx)
	return idleStream[T]{ctx, cancel}, nil
}

func (s staticSource[T]) Resource() string { return "static" }

type idleStream[T object.Object] struct {
	ctx    context.Context
	cancel context.CancelFunc
}

func (s idleStream[T]) Next() (client.Event[T], error) {
	<-s.ctx.Done()
	return client.Event[T]{}, s.ctx.Err()
}

func (s idleStream[T]) Stop() { s.cancel() }

// A ReplicaSet replaced under its name (a new uid between two events)
// leaves nothing of the old one behind, as a deleted one does.
func TestReplacedReplicaSetIsForgotten(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	mc := &manager.Context{Conn: &fakeAPI{fail: func(int, string) error { return nil }}, Logger: zaptest.NewLogger(t)}
	old := testRS(1, 0)
	c := newController(mc, Options{}, runInformer(ctx, t, []*corev1.Pod{}), runInformer(ctx, t, []*appsv1.ReplicaSet{old}))
	c.warm.Store(old.GetMetadata().GetUid(), struct{}{})
	c.verified.Store(old.GetMetadata().GetUid(), struct{}{})
	c.expectations.ExpectCreations("ns/web", 3)
	cur := proto.Clone(old).(*appsv1.ReplicaSet)
	cur.Metadata.Uid = "rs2"
	c.updateReplicaSet(old, cur)
	for name, m := range map[string]*sync.Map{"warm": &c.warm, "verified": &c.verified, "selectors": &c.selectors} {
		if _, ok := m.Load(old.GetMetadata().GetUid()); ok {
			t.Errorf("%s still holds the replaced ReplicaSet's uid", name)
		}
	}
	if adds, _ := c.expectations.Pending("ns/web"); adds != 0 {
		t.Errorf("%d creations still expected of the replaced ReplicaSet", adds)
	}
}
