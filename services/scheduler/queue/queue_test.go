package queue

import (
	"context"
	"testing"
	"time"

	"go.uber.org/goleak"
	"google.golang.org/protobuf/proto"

	"skiff.dev/internal/workqueue"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/scheduler/framework"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func pod(name string, priority int32) *framework.PodInfo {
	return framework.NewPodInfo(&corev1.Pod{
		Metadata: &metav1.ObjectMeta{Namespace: "default", Name: name, Uid: "uid-" + name, Labels: map[string]string{"app": "x"}},
		Spec:     &corev1.PodSpec{Priority: proto.Int32(priority)},
	})
}

func newQueue() (*Queue, *workqueue.FakeClock) {
	clock := workqueue.NewFakeClock(time.Unix(1000, 0))
	return New(Options{Clock: clock, InitialBackoff: time.Second, MaxBackoff: 4 * time.Second, MaxInUnschedulable: time.Minute}), clock
}

func pop(t *testing.T, q *Queue) *QueuedPodInfo {
	t.Helper()
	if q.Lengths().Active == 0 {
		t.Fatalf("nothing to pop: %+v", q.Lengths())
	}
	qp, ok := q.Pop()
	if !ok {
		t.Fatal("queue closed")
	}
	return qp
}

func where(q *Queue, name string) string {
	q.mu.Lock()
	defer q.mu.Unlock()
	uid := "uid-" + name
	if _, ok := q.inFlight[uid]; ok {
		return "inFlight"
	}
	qp, ok := q.pods[uid]
	if !ok {
		return "gone"
	}
	return [...]string{"nowhere", "active", "backoff", "unschedulable"}[qp.where]
}

func TestPopOrder(t *testing.T) {
	q, clock := newQueue()
	q.Add(pod("low", 0))
	clock.Step(time.Millisecond)
	q.Add(pod("high", 100))
	q.Add(pod("low2", 0))
	q.Add(pod("mid", 10))
	var got []string
	for range 4 {
		got = append(got, pop(t, q).Pod.Metadata.Name)
	}
	want := []string{"high", "mid", "low", "low2"}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("popped %v, want %v (priority first, then arrival)", got, want)
		}
	}
}

func TestBackoffDoublesUpToMax(t *testing.T) {
	q, clock := newQueue()
	q.Add(pod("p", 0))
	var waits []time.Duration
	for range 4 {
		qp := pop(t, q)
		q.AddUnschedulableIfNotPresent(qp, q.SchedulingCycle(), false)
		if w := where(q, "p"); w != "backoff" {
			t.Fatalf("after an error the pod is in %s, want backoff", w)
		}
		start := clock.Now()
		next := q.flushBackoff(start)
		waits = append(waits, next.Sub(start))
		clock.Step(next.Sub(start) - time.Millisecond)
		q.flushBackoff(clock.Now())
		if w := where(q, "p"); w != "backoff" {
			t.Fatalf("backoff ended early")
		}
		clock.Step(time.Millisecond)
		q.flushBackoff(clock.Now())
		if w := where(q, "p"); w != "active" {
			t.Fatalf("after its backoff the pod is in %s, want active", w)
		}
	}
	want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 4 * time.Second}
	for i := range want {
		if waits[i] != want[i] {
			t.Fatalf("backoffs %v, want %v", waits, want)
		}
	}
}

func TestUnschedulableWaitsForAMove(t *testing.T) {
	q, clock := newQueue()
	q.Add(pod("p", 0))
	qp := pop(t, q)
	q.AddUnschedulableIfNotPresent(qp, q.SchedulingCycle(), true)
	if w := where(q, "p"); w != "unschedulable" {
		t.Fatalf("pod in %s, want unschedulable", w)
	}
	clock.Step(10 * time.Second)
	q.flushBackoff(clock.Now())
	if w := where(q, "p"); w != "unschedulable" {
		t.Fatalf("time alone moved the pod to %s", w)
	}
	q.MoveAllToActiveOrBackoff("NodeAdd")
	if w := where(q, "p"); w != "active" {
		t.Fatalf("after a node was added (and its backoff is over) the pod is in %s, want active", w)
	}

	// Moved during its backoff: it waits the backoff out.
	qp = pop(t, q)
	q.AddUnschedulableIfNotPresent(qp, q.SchedulingCycle(), true)
	q.MoveAllToActiveOrBackoff("NodeAdd")
	if w := where(q, "p"); w != "backoff" {
		t.Fatalf("moved during its backoff: %s, want backoff", w)
	}
}

func TestUnschedulableIsRetriedAfterMaxWait(t *testing.T) {
	q, clock := newQueue()
	q.Add(pod("p", 0))
	q.AddUnschedulableIfNotPresent(pop(t, q), q.SchedulingCycle(), true)
	clock.Step(59 * time.Second)
	q.flushUnschedulable(clock.Now())
	if w := where(q, "p"); w != "unschedulable" {
		t.Fatalf("pod in %s before its max wait", w)
	}
	clock.Step(time.Second)
	q.flushUnschedulable(clock.Now())
	if w := where(q, "p"); w != "active" {
		t.Fatalf("pod in %s after its max wait, want active", w)
	}
}

func TestMoveDuringFlightIsNotMissed(t *testing.T) {
	q, _ := newQueue()
	q.Add(pod("p", 0))
	qp := pop(t, q)
	cycle := q.SchedulingCycle()
	q.MoveAllToActiveOrBackoff("NodeAdd") // while p was being scheduled
	q.AddUnschedulableIfNotPresent(qp, cycle, true)
	if w := where(q, "p"); w != "backoff" {
		t.Fatalf("pod in %s, want backoff: a node came while it was tried", w)
	}
}

func TestUpdatesAndDeletesInFlight(t *testing.T) {
	q, _ := newQueue()
	q.Add(pod("deleted", 0))
	qp := pop(t, q)
	q.Delete(qp.UID())
	q.AddUnschedulableIfNotPresent(qp, q.SchedulingCycle(), true)
	if w := where(q, "deleted"); w != "gone" {
		t.Errorf("a pod deleted in flight came back to %s", w)
	}

	q.Add(pod("relabelled", 0))
	qp = pop(t, q)
	newer := pod("relabelled", 0)
	newer.Pod.Metadata.Labels["tier"] = "fe"
	q.Update(newer)
	q.AddUnschedulableIfNotPresent(qp, q.SchedulingCycle(), true)
	if w := where(q, "relabelled"); w != "backoff" {
		t.Errorf("a pod relabelled in flight went to %s, want backoff", w)
	}
	if got := q.pods["uid-relabelled"].Pod.Metadata.Labels["tier"]; got != "fe" {
		t.Errorf("the requeued pod is not the newest version")
	}

	q.Add(pod("status", 0))
	qp = pop(t, q)
	st := pod("status", 0)
	st.Pod.Status = &corev1.PodStatus{Conditions: []*corev1.PodCondition{{Type: "PodScheduled", Status: "False"}}}
	q.Update(st)
	q.AddUnschedulableIfNotPresent(qp, q.SchedulingCycle(), true)
	if w := where(q, "status"); w != "unschedulable" {
		t.Errorf("a status-only update in flight sent the pod to %s, want unschedulable", w)
	}
	q.Update(st)
	if w := where(q, "status"); w != "unschedulable" {
		t.Errorf("a status-only update moved an unschedulable pod to %s", w)
	}
	spec := pod("status", 0)
	spec.Pod.Spec.NodeSelector = map[string]string{"disk": "ssd"}
	q.Update(spec)
	if w := where(q, "status"); w != "backoff" {
		t.Errorf("a spec update left the pod in %s, want backoff", w)
	}

	q.Add(pod("done", 0))
	qp = pop(t, q)
	q.Done(qp.UID())
	if l := q.Lengths(); l.InFlight != 0 {
		t.Errorf("in flight after Done: %+v", l)
	}
}

func TestRunFlushesBackoffOnTime(t *testing.T) {
	q, clock := newQueue()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); q.Run(ctx) }()
	defer func() { cancel(); <-done }()

	q.Add(pod("p", 0))
	qp := pop(t, q)
	q.AddUnschedulableIfNotPresent(qp, q.SchedulingCycle(), false)
	popped := make(chan *QueuedPodInfo)
	go func() {
		qp, ok := q.Pop()
		if ok {
			popped <- qp
		}
		close(popped)
	}()
	// Whether Run armed its timer for the end of the backoff before the
	// step (it fires) or wakes after it (the backoff is over), it flushes.
	clock.Step(time.Second)
	select {
	case qp := <-popped:
		if qp == nil || qp.Attempts != 2 {
			t.Fatalf("popped %v", qp)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the pod did not leave backoff when its timer fired")
	}
	cancel()
	<-done
	if _, ok := q.Pop(); ok {
		t.Error("Pop after Run ended should report a closed queue")
	}
}

func TestMoveRejectedByOnlyMovesThatPluginsPods(t *testing.T) {
	q, clock := newQueue()
	q.Add(pod("spread", 0))
	q.Add(pod("cpu", 0))
	for range 2 {
		qp := pop(t, q)
		if qp.Pod.Metadata.Name == "spread" {
			qp.UnschedulablePlugins = []string{"PodTopologySpread"}
		} else {
			qp.UnschedulablePlugins = []string{"NodeResourcesFit"}
		}
		q.AddUnschedulableIfNotPresent(qp, q.SchedulingCycle(), true)
	}
	clock.Step(time.Minute / 2)
	q.MoveRejectedBy("PodTopologySpread", "AssignedPodAdd")
	if w := where(q, "spread"); w != "active" {
		t.Errorf("spread is in %s, want active", w)
	}
	if w := where(q, "cpu"); w != "unschedulable" {
		t.Errorf("cpu is in %s, want unschedulable (a pod placed cannot free cpu)", w)
	}

	// Asked while the pod was in flight: not missed.
	qp := pop(t, q)
	cycle := q.SchedulingCycle()
	q.MoveRejectedBy("PodTopologySpread", "AssignedPodAdd")
	qp.UnschedulablePlugins = []string{"PodTopologySpread"}
	q.AddUnschedulableIfNotPresent(qp, cycle, true)
	if w := where(q, "spread"); w != "backoff" {
		t.Errorf("spread is in %s, want backoff", w)
	}
}

// TestIdleQueuePopsFromBackoff: while activeQ is empty, a pod that was
// unschedulable and got moved during its backoff is popped at once (as
// Kubernetes' SchedulerPopFromBackoffQ); one that met an error waits its
// backoff out, and an active pod always comes first.
func TestIdleQueuePopsFromBackoff(t *testing.T) {
	q, _ := newQueue()
	q.Add(pod("moved", 0))
	q.Add(pod("errored", 5))
	errored := pop(t, q)
	moved := pop(t, q)
	cycle := q.SchedulingCycle()
	q.AddUnschedulableIfNotPresent(errored, cycle, false)
	q.AddUnschedulableIfNotPresent(moved, cycle, true)
	if w := where(q, "moved"); w != "unschedulable" {
		t.Fatalf("moved is %s, want unschedulable", w)
	}
	q.MoveAllToActiveOrBackoff("AssignedPodDelete") // during its backoff
	if w := where(q, "moved"); w != "backoff" {
		t.Fatalf("moved is %s, want backoff", w)
	}

	q.Add(pod("new", 0))
	if qp, _ := q.Pop(); qp.Pod.GetMetadata().GetName() != "new" {
		t.Fatalf("popped %s before the active pod", qp.Pod.GetMetadata().GetName())
	}
	if qp, _ := q.Pop(); qp.Pod.GetMetadata().GetName() != "moved" {
		t.Fatalf("popped %s, want moved (activeQ empty)", qp.Pod.GetMetadata().GetName())
	}
	if w := where(q, "errored"); w != "backoff" {
		t.Fatalf("errored is %s, want backoff", w)
	}
	if l := q.Lengths(); l.Active != 0 || l.Backoff != 1 {
		t.Fatalf("lengths %+v", l)
	}
	q.mu.Lock()
	if p := q.poppableBackoffLocked(); p != nil {
		t.Errorf("an errored pod would be popped before its backoff: %s", p.Key())
	}
	q.mu.Unlock()
}
