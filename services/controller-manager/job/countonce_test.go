package job

import (
	"sync"
	"testing"
	"time"

	"skiff.dev/internal/client"
	"skiff.dev/internal/informer"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/controller-manager/controllerutil"
	"skiff.dev/services/controller-manager/manager/managertest"
	"skiff.dev/services/controller-manager/simnode"
)

// TestJobCountsAPodOnceWhenItsFinalizerRemovalIsSeenMidSync forces the
// interleaving a busy machine makes by chance (CI saw a Job of 100
// completions end with 134 succeeded): a sync removes a succeeded pod's
// tracking finalizer and counts it; the next sync starts while the pods
// informer has not shown that removal yet, and the informer shows it
// while the sync reads its view. The pod must not look both not counted
// (the cache's old copy, finalizer still there) and not in flight (its
// removal observed): it would be counted again.
//
// The test holds the pods informer (a handler blocks on the update of a
// pod "hold" that a sync's hook writes before the sync removes any
// finalizer), so that the removals queue up behind it; the next sync's
// hook, between its reads of the controller's memory and of the cache,
// lets the informer go and waits until it has shown every removal.
func TestJobCountsAPodOnceWhenItsFinalizerRemovalIsSeenMidSync(t *testing.T) {
	env := managertest.Start(t)
	jobs := informer.For(env.Manager.Informers, client.Jobs(env.Conn))
	managertest.Watch(env, jobs)
	var mu sync.Mutex
	allowed := 1 // pods that may finish: the first one, then all
	finished := map[string]bool{}
	finish := func(p *corev1.Pod) (int32, bool) {
		mu.Lock()
		defer mu.Unlock()
		name := p.GetMetadata().GetName()
		if name == "hold" {
			return 0, false
		}
		if !finished[name] && len(finished) < allowed {
			finished[name] = true
		}
		return 0, finished[name]
	}
	node := env.SimNode(simnode.Options{Finish: finish})

	const holdAnnotation = "skiff.test/hold"
	gate := make(chan struct{})
	env.Pods().AddHandler(informer.Handler[*corev1.Pod]{OnUpdate: func(old, cur *corev1.Pod) {
		if cur.GetMetadata().GetName() == "hold" && cur.GetMetadata().GetAnnotations()[holdAnnotation] == "true" &&
			old.GetMetadata().GetAnnotations()[holdAnnotation] != "true" {
			select {
			case <-gate:
			case <-env.Ctx.Done():
			}
		}
	}})
	if _, err := client.Pods(env.Conn).Create(env.Ctx, &corev1.Pod{
		Metadata: &metav1.ObjectMeta{Namespace: "default", Name: "hold"},
		Spec:     &corev1.PodSpec{Containers: []*corev1.Container{{Name: "c", Image: "busybox"}}},
	}); err != nil {
		t.Fatal(err)
	}
	hold := func() error {
		return client.RetryOnConflict(env.Ctx, client.DefaultRetry, func() error {
			p, err := client.Pods(env.Conn).Get(env.Ctx, "default", "hold")
			if err != nil {
				return err
			}
			if p.Metadata.Annotations == nil {
				p.Metadata.Annotations = map[string]string{}
			}
			p.Metadata.Annotations[holdAnnotation] = "true"
			_, err = client.Pods(env.Conn).Update(env.Ctx, p)
			return err
		})
	}

	ctrl := New(env.Manager, Options{SyncBatchPeriod: 10 * time.Millisecond})
	// Poked once the controller's own handler has seen a pod change.
	seen := make(chan struct{}, 1)
	env.Pods().AddHandler(informer.Handler[*corev1.Pod]{OnUpdate: func(_, _ *corev1.Pod) {
		select {
		case seen <- struct{}{}:
		default:
		}
	}})
	uncounted := func() bool { // a pod of the Job succeeded, its finalizer still there
		for _, p := range env.Pods().Store().List() {
			if controllerutil.ControllerOf(p.GetMetadata()).GetName() == "once" && p.GetStatus().GetPhase() == "Succeeded" && hasTrackingFinalizer(p) {
				return true
			}
		}
		return false
	}
	armed := false
	forced := make(chan struct{})
	ctrl.cacheReadHook = func(key string) {
		if key != "default/once" {
			return
		}
		select {
		case <-forced:
			return // done once
		default:
		}
		if !armed {
			// This sync is about to remove a finalizer: hold the
			// informer before it does.
			if len(ctrl.finalizers.pending(key)) == 0 && uncounted() {
				if err := hold(); err != nil {
					t.Errorf("holding the pods informer: %v", err)
					return
				}
				armed = true
			}
			return
		}
		if len(ctrl.finalizers.pending(key)) == 0 {
			return // the removal is yet to come
		}
		// Removals in flight, queued behind the held event: the informer
		// shows them now, in the middle of this sync's reads.
		close(gate)
		deadline := time.NewTimer(patience)
		defer deadline.Stop()
		for len(ctrl.finalizers.pending(key)) > 0 {
			select {
			case <-seen:
			case <-deadline.C:
				t.Errorf("finalizer removals %v never observed", ctrl.finalizers.pending(key))
				return
			}
		}
		close(forced)
	}
	env.StartInformers()
	env.GoErr(ctrl.Run)

	if _, err := client.Jobs(env.Conn).Create(env.Ctx, newJob("once", 2, 2)); err != nil {
		t.Fatal(err)
	}
	select {
	case <-forced:
	case <-time.After(patience):
		t.Fatal("the interleaving was never forced")
	}
	mu.Lock()
	allowed = 1000
	mu.Unlock()
	node.Recheck()

	c := &cluster{Env: env, jobs: jobs}
	j := c.awaitCondition("once", "Complete")
	var pods, succeeded int32
	for _, p := range env.Pods().Store().List() {
		if controllerutil.ControllerOf(p.GetMetadata()).GetUid() != j.GetMetadata().GetUid() {
			continue
		}
		pods++
		if p.GetStatus().GetPhase() == "Succeeded" {
			succeeded++
		}
	}
	if st := j.GetStatus(); st.GetSucceeded() != succeeded || succeeded != 2 || pods != 2 {
		t.Errorf("status.succeeded %d; the Job has %d pods, %d of them succeeded; want 2, 2, 2", st.GetSucceeded(), pods, succeeded)
	}
}

// TestJobCreatesNoMorePodsThanNeeded: pods that finish as soon as they
// run never make the controller exceed parallelism (active pods, counted
// on the pods' watch events, in the order the apiserver wrote them) nor
// create more pods than completions.
func TestJobCreatesNoMorePodsThanNeeded(t *testing.T) {
	for _, tc := range []struct {
		name                     string
		completions, parallelism int32
	}{
		{"parallelism below completions", 30, 4},
		{"parallelism above completions", 100, 500},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := start(t, exitWith(0), Options{})
			var mu sync.Mutex
			created, maxActive := 0, 0
			active := map[string]bool{}
			track := func(p *corev1.Pod, gone bool) {
				if controllerutil.ControllerOf(p.GetMetadata()).GetName() != "many" {
					return
				}
				mu.Lock()
				defer mu.Unlock()
				uid := p.GetMetadata().GetUid()
				if ph := p.GetStatus().GetPhase(); gone || ph == "Succeeded" || ph == "Failed" {
					delete(active, uid)
					return
				}
				active[uid] = true
				maxActive = max(maxActive, len(active))
			}
			// Added before the Job exists: no pod of it is replayed.
			c.Pods().AddHandler(informer.Handler[*corev1.Pod]{
				OnAdd: func(p *corev1.Pod) {
					mu.Lock()
					if controllerutil.ControllerOf(p.GetMetadata()).GetName() == "many" {
						created++
					}
					mu.Unlock()
					track(p, false)
				},
				OnUpdate: func(_, p *corev1.Pod) { track(p, false) },
				OnDelete: func(p *corev1.Pod) { track(p, true) },
			})
			c.create(newJob("many", tc.completions, tc.parallelism))
			j := c.awaitCondition("many", "Complete")
			mu.Lock()
			defer mu.Unlock()
			if st := j.GetStatus(); st.GetSucceeded() != tc.completions || created != int(tc.completions) || maxActive > int(min(tc.parallelism, tc.completions)) {
				t.Errorf("status.succeeded %d, %d pods created, at most %d active at once; want %d, %d, at most %d",
					st.GetSucceeded(), created, maxActive, tc.completions, tc.completions, min(tc.parallelism, tc.completions))
			}
		})
	}
}
