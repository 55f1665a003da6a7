package replicaset

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"skiff.dev/internal/client"
	"skiff.dev/internal/informer"
	appsv1 "skiff.dev/proto/apps/v1"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/controller-manager/controllerutil"
	"skiff.dev/services/controller-manager/manager/managertest"
	"skiff.dev/services/controller-manager/simnode"
)

// patience bounds every wait for something that should happen.
const patience = 15 * time.Second

// cluster is one test's apiserver with the controller built (not yet running).
type cluster struct {
	*managertest.Env
	ctrl *Controller
	rss  *informer.Informer[*appsv1.ReplicaSet]
	node *simnode.Node
}

type clusterOpts struct {
	node    bool                   // start a simulated node
	accept  func(*corev1.Pod) bool // the node's Accept
	noRun   bool                   // do not run the controller: the test calls Reconcile
	lagPods time.Duration          // the controller's pods informer lags this much
	ctrl    Options                // the controller's options
	// conn, when set, wraps the controller's connection to the apiserver.
	conn func(grpc.ClientConnInterface) grpc.ClientConnInterface
}

func start(t *testing.T, o clusterOpts) *cluster {
	t.Helper()
	env := managertest.Start(t)
	c := &cluster{Env: env, rss: informer.For(env.Manager.Informers, client.ReplicaSets(env.Conn))}
	if o.lagPods > 0 {
		pods := informer.New(laggingSource{informer.FromClient(client.Pods(env.Conn)), o.lagPods}, informer.Options{})
		managertest.Watch(env, pods)
		env.Go(pods.Run)
		mc := env.Manager
		if o.conn != nil {
			wrapped := *env.Manager
			wrapped.Conn = o.conn(env.Conn)
			mc = &wrapped
		}
		c.ctrl = newController(mc, o.ctrl, pods, c.rss)
	} else {
		c.ctrl = New(env.Manager, o.ctrl)
	}
	if o.node {
		c.node = env.SimNode(simnode.Options{Accept: o.accept})
	}
	env.StartInformers()
	if !o.noRun {
		env.GoErr(c.ctrl.Run)
	}
	return c
}

// newRS returns a ReplicaSet "default/<name>" selecting app=<name>.
func newRS(name string, replicas, minReady int32) *appsv1.ReplicaSet {
	return &appsv1.ReplicaSet{
		Metadata: &metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: &appsv1.ReplicaSetSpec{
			Replicas:        proto.Int32(replicas),
			MinReadySeconds: minReady,
			Selector:        &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: &corev1.PodTemplateSpec{
				Metadata: &metav1.ObjectMeta{
					Labels:      map[string]string{"app": name, "tier": "front"},
					Annotations: map[string]string{"note": "from the template"},
				},
				Spec: &corev1.PodSpec{Containers: []*corev1.Container{{Name: "c", Image: "nginx"}}},
			},
		},
	}
}

func (c *cluster) create(rs *appsv1.ReplicaSet) *appsv1.ReplicaSet {
	c.T.Helper()
	got, err := client.ReplicaSets(c.Conn).Create(c.Ctx, rs)
	if err != nil {
		c.T.Fatalf("create replicaset: %v", err)
	}
	return got
}

// scale sets spec.replicas.
func (c *cluster) scale(name string, replicas int32) {
	c.T.Helper()
	rsc := client.ReplicaSets(c.Conn)
	err := client.RetryOnConflict(c.Ctx, client.DefaultRetry, func() error {
		rs, err := rsc.Get(c.Ctx, "default", name)
		if err != nil {
			return err
		}
		rs.Spec.Replicas = proto.Int32(replicas)
		_, err = rsc.Update(c.Ctx, rs)
		return err
	})
	if err != nil {
		c.T.Fatalf("scale %s to %d: %v", name, replicas, err)
	}
}

// owned returns the active pods the cache shows controlled by rs.
func (c *cluster) owned(rs *appsv1.ReplicaSet) []*corev1.Pod {
	var out []*corev1.Pod
	for _, p := range c.Pods().Store().ByOwner(rs.GetMetadata().GetUid()) {
		if ref := controllerutil.ControllerOf(p.GetMetadata()); ref != nil && ref.GetUid() == rs.GetMetadata().GetUid() && controllerutil.IsPodActive(p) {
			out = append(out, p)
		}
	}
	return out
}

// status returns rs's status as the cache has it.
func (c *cluster) status(name string) *appsv1.ReplicaSetStatus {
	rs, _ := c.rss.Store().GetByName("default", name)
	return rs.GetStatus()
}

// awaitReplicas waits until rs has n active pods and a status that says so
// for its current generation.
func (c *cluster) awaitReplicas(rs *appsv1.ReplicaSet, n int, ready int32) {
	c.T.Helper()
	c.Await(patience, fmt.Sprintf("%d pods (%d ready) for %s", n, ready, rs.Metadata.Name), func() (bool, string) {
		cur, ok := c.rss.Store().GetByName("default", rs.Metadata.Name)
		if !ok {
			return false, "not in the cache"
		}
		pods := c.owned(rs)
		st := cur.GetStatus()
		return len(pods) == n && st.GetReplicas() == int32(n) && st.GetReadyReplicas() == ready &&
				st.GetObservedGeneration() == cur.GetMetadata().GetGeneration(),
			managertest.Explain("%d pods; status %v at generation %d", len(pods), st, cur.GetMetadata().GetGeneration())
	})
}

func TestCreatesPodsFromTheTemplate(t *testing.T) {
	c := start(t, clusterOpts{})
	rs := c.create(newRS("web", 3, 0))
	c.awaitReplicas(rs, 3, 0)

	for _, p := range c.owned(rs) {
		m := p.GetMetadata()
		ref := controllerutil.ControllerOf(m)
		if ref.GetApiVersion() != "apps/v1" || ref.GetKind() != "ReplicaSet" || ref.GetName() != "web" ||
			ref.GetUid() != rs.Metadata.Uid || !ref.GetBlockOwnerDeletion() || len(m.GetOwnerReferences()) != 1 {
			t.Errorf("pod %s: owner references %v", m.GetName(), m.GetOwnerReferences())
		}
		if !strings.HasPrefix(m.GetName(), "web-") || m.GetGenerateName() != "web-" {
			t.Errorf("pod %s: generateName %q", m.GetName(), m.GetGenerateName())
		}
		if m.GetLabels()["app"] != "web" || m.GetLabels()["tier"] != "front" || m.GetAnnotations()["note"] != "from the template" {
			t.Errorf("pod %s: labels %v annotations %v", m.GetName(), m.GetLabels(), m.GetAnnotations())
		}
		if cs := p.GetSpec().GetContainers(); len(cs) != 1 || cs[0].GetImage() != "nginx" {
			t.Errorf("pod %s: containers %v", m.GetName(), cs)
		}
	}
	st := c.status("web")
	if st.GetFullyLabeledReplicas() != 3 || st.GetAvailableReplicas() != 0 {
		t.Errorf("status %v", st)
	}
	c.awaitEvent(rs, "SuccessfulCreate", 3)
}

// awaitEvent waits until the API has an Event of reason about rs, counted
// at least n times (aggregation folds identical ones).
func (c *cluster) awaitEvent(rs *appsv1.ReplicaSet, reason string, n int32) {
	c.T.Helper()
	c.Await(patience, "event "+reason, func() (bool, string) {
		l, err := client.Events(c.Conn).List(c.Ctx, &metav1.ListOptions{Namespace: "default", FieldSelector: "involvedObject.uid=" + rs.Metadata.Uid + ",reason=" + reason})
		if err != nil {
			return false, err.Error()
		}
		var got int32
		for _, e := range l.GetItems() {
			got += e.GetCount()
		}
		return got >= n, managertest.Explain("%d so far", got)
	})
}

func TestScaleUpAndDown(t *testing.T) {
	c := start(t, clusterOpts{node: true})
	rs := c.create(newRS("web", 3, 0))
	c.awaitReplicas(rs, 3, 3)
	c.scale("web", 10)
	c.awaitReplicas(rs, 10, 10)
	c.scale("web", 0)
	c.awaitReplicas(rs, 0, 0)
	c.awaitEvent(rs, "SuccessfulDelete", 10)
}

// TestScaleDownDeletesNotReadyFirst: of five pods, the two a node refused
// (Pending, not ready) go first.
func TestScaleDownDeletesNotReadyFirst(t *testing.T) {
	var mu sync.Mutex
	refused := map[string]bool{}
	c := start(t, clusterOpts{node: true, accept: func(p *corev1.Pod) bool {
		mu.Lock()
		defer mu.Unlock()
		if len(refused) < 2 && !refused[p.Metadata.Name] {
			refused[p.Metadata.Name] = true
		}
		return !refused[p.Metadata.Name]
	}})
	rs := c.create(newRS("web", 5, 0))
	c.awaitReplicas(rs, 5, 3)
	c.scale("web", 3)
	c.awaitReplicas(rs, 3, 3)
	for _, p := range c.owned(rs) {
		mu.Lock()
		if refused[p.Metadata.Name] {
			t.Errorf("pod %s, never ready, was kept over a ready one", p.Metadata.Name)
		}
		mu.Unlock()
	}
}

func TestStatusReadyAndAvailable(t *testing.T) {
	c := start(t, clusterOpts{node: true, accept: func(*corev1.Pod) bool { return false }})
	// Record every status the cache shows, with when it was seen.
	type seen struct {
		at     time.Time
		status *appsv1.ReplicaSetStatus
	}
	var mu sync.Mutex
	var history []seen
	c.rss.AddHandler(informer.Handler[*appsv1.ReplicaSet]{OnUpdate: func(_, rs *appsv1.ReplicaSet) {
		mu.Lock()
		history = append(history, seen{time.Now(), rs.GetStatus()})
		mu.Unlock()
	}})
	rs := c.create(newRS("web", 3, 2))
	c.awaitReplicas(rs, 3, 0)
	if st := c.status("web"); st.GetAvailableReplicas() != 0 {
		t.Fatalf("available before any pod is ready: %v", st)
	}

	c.node.SetAccept(nil)
	c.awaitReplicas(rs, 3, 3)
	c.Await(patience, "3 available", func() (bool, string) {
		st := c.status("web")
		return st.GetAvailableReplicas() == 3, managertest.Explain("status %v", st)
	})
	// Each pod became available no sooner than 2s after it became ready,
	// and soon after (the controller looked again then, without an event).
	var lastReady time.Time
	for _, p := range c.owned(rs) {
		if t := controllerutil.PodReadyCondition(p).GetLastTransitionTime().AsTime(); t.After(lastReady) {
			lastReady = t
		}
	}
	mu.Lock()
	defer mu.Unlock()
	var sawReadyNotAvailable bool
	for _, s := range history {
		if s.status.GetReadyReplicas() == 3 && s.status.GetAvailableReplicas() < 3 {
			sawReadyNotAvailable = true
		}
		if s.status.GetAvailableReplicas() == 3 {
			if d := s.at.Sub(lastReady); d < 2*time.Second || d > 5*time.Second {
				t.Errorf("3 available %v after the last pod became ready, want 2s to 5s", d)
			}
			break
		}
	}
	if !sawReadyNotAvailable {
		t.Errorf("never saw 3 ready and fewer available: %v", history)
	}

	// A pod failing its readiness probe is neither ready nor available.
	if err := simnode.MarkNotReady(c.Ctx, c.Conn, c.owned(rs)[0]); err != nil {
		t.Fatal(err)
	}
	c.Await(patience, "2 ready, 2 available", func() (bool, string) {
		st := c.status("web")
		return st.GetReadyReplicas() == 2 && st.GetAvailableReplicas() == 2 && st.GetReplicas() == 3, managertest.Explain("status %v", st)
	})
}

func TestDeletedPodIsReplaced(t *testing.T) {
	c := start(t, clusterOpts{})
	rs := c.create(newRS("web", 3, 0))
	c.awaitReplicas(rs, 3, 0)
	victim := c.owned(rs)[1].Metadata.Name
	if _, err := client.Pods(c.Conn).Delete(c.Ctx, &metav1.DeleteRequest{Namespace: "default", Name: victim}); err != nil {
		t.Fatal(err)
	}
	c.Await(patience, "a replacement", func() (bool, string) {
		pods := c.owned(rs)
		for _, p := range pods {
			if p.Metadata.Name == victim {
				return false, victim + " still cached"
			}
		}
		return len(pods) == 3, managertest.Explain("%d pods", len(pods))
	})
}

func TestAdoptsAndReleases(t *testing.T) {
	c := start(t, clusterOpts{})
	pods := client.Pods(c.Conn)
	orphan, err := pods.Create(c.Ctx, &corev1.Pod{
		Metadata: &metav1.ObjectMeta{Name: "stray", Namespace: "default", Labels: map[string]string{"app": "web"}},
		Spec:     &corev1.PodSpec{Containers: []*corev1.Container{{Name: "c", Image: "nginx"}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	rs := c.create(newRS("web", 3, 0))
	// The orphan is adopted and counts: only 2 pods are created.
	c.awaitReplicas(rs, 3, 0)
	var adopted *corev1.Pod
	for _, p := range c.owned(rs) {
		if p.Metadata.Name == "stray" {
			adopted = p
		}
	}
	if adopted == nil {
		t.Fatalf("stray not adopted: owned %q", names(c.owned(rs)))
	}
	if adopted.Metadata.Uid != orphan.Metadata.Uid {
		t.Fatalf("stray was replaced, not adopted")
	}

	// Its labels change: it is released and replaced.
	err = client.RetryOnConflict(c.Ctx, client.DefaultRetry, func() error {
		p, err := pods.Get(c.Ctx, "default", "stray")
		if err != nil {
			return err
		}
		p.Metadata.Labels = map[string]string{"app": "debug"}
		_, err = pods.Update(c.Ctx, p)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	c.Await(patience, "stray released and replaced", func() (bool, string) {
		p, ok := c.Pods().Store().GetByName("default", "stray")
		if !ok {
			return false, "stray not cached"
		}
		if len(p.Metadata.OwnerReferences) != 0 {
			return false, managertest.Explain("stray still has owner references %v", p.Metadata.OwnerReferences)
		}
		owned := c.owned(rs)
		return len(owned) == 3, managertest.Explain("%d pods owned", len(owned))
	})
}

// TestReplicaSetBeingDeleted drives Reconcile by hand: a ReplicaSet with a
// deletionTimestamp replaces no pod and adopts no orphan.
func TestReplicaSetBeingDeleted(t *testing.T) {
	c := start(t, clusterOpts{noRun: true})
	rs := c.create(newRS("web", 2, 0))
	key := "default/web"
	c.Await(patience, "the replicaset cached", func() (bool, string) {
		_, ok := c.rss.Store().GetByName("default", "web")
		return ok, "not yet"
	})
	if _, err := c.ctrl.Reconcile(c.Ctx, key); err != nil {
		t.Fatal(err)
	}
	c.Await(patience, "2 pods cached and observed", func() (bool, string) {
		return len(c.owned(rs)) == 2 && c.ctrl.expectations.Satisfied(key), managertest.Explain("%d pods", len(c.owned(rs)))
	})

	// Delete with the orphan policy: the ReplicaSet stays, with a
	// deletionTimestamp, until the garbage collector (not running) is done.
	if _, err := client.ReplicaSets(c.Conn).Delete(c.Ctx, &metav1.DeleteRequest{Namespace: "default", Name: "web", PropagationPolicy: "Orphan"}); err != nil {
		t.Fatal(err)
	}
	victim := c.owned(rs)[0].Metadata.Name
	if _, err := client.Pods(c.Conn).Delete(c.Ctx, &metav1.DeleteRequest{Namespace: "default", Name: victim}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.Pods(c.Conn).Create(c.Ctx, &corev1.Pod{
		Metadata: &metav1.ObjectMeta{Name: "stray", Namespace: "default", Labels: map[string]string{"app": "web"}},
		Spec:     &corev1.PodSpec{Containers: []*corev1.Container{{Name: "c", Image: "nginx"}}},
	}); err != nil {
		t.Fatal(err)
	}
	c.Await(patience, "the cache up to date", func() (bool, string) {
		cur, _ := c.rss.Store().GetByName("default", "web")
		_, stray := c.Pods().Store().GetByName("default", "stray")
		return cur.GetMetadata().GetDeletionTimestamp() != nil && stray && len(c.owned(rs)) == 1 && c.ctrl.expectations.Satisfied(key), "not yet"
	})
	if _, err := c.ctrl.Reconcile(c.Ctx, key); err != nil {
		t.Fatal(err)
	}
	l, err := client.Pods(c.Conn).List(c.Ctx, &metav1.ListOptions{Namespace: "default"})
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Items) != 2 {
		t.Errorf("%d pods after the sync of a replicaset being deleted, want 2 (one of its own, the stray)", len(l.Items))
	}
	for _, p := range l.Items {
		if p.Metadata.Name == "stray" && len(p.Metadata.OwnerReferences) > 0 {
			t.Errorf("stray adopted by a replicaset being deleted: %v", p.Metadata.OwnerReferences)
		}
	}
}

// TestNoExtraPodsWhileTheInformerLags: the controller's pods informer shows
// every event half a second late; scaling from 0 in one step creates the
// pods asked for, not one more, because the syncs in between (status
// writes, the first pods seen, the bursts waking their ReplicaSet while
// their calls are in flight) count the creations not seen yet. With bursts
// of 40, eight of them overlap.
func TestNoExtraPodsWhileTheInformerLags(t *testing.T) {
	for _, tc := range []struct {
		name     string
		replicas int
		burst    int
	}{
		{"one burst", 50, 0},
		{"overlapping bursts", 320, 40},
	} {
		t.Run(tc.name, func(t *testing.T) {
			noExtraPods(t, tc.replicas, Options{BurstReplicas: tc.burst})
		})
	}
}

func noExtraPods(t *testing.T, want int, o Options) {
	c := start(t, clusterOpts{lagPods: 500 * time.Millisecond, ctrl: o})
	created := c.countCreations()
	rs := c.create(newRS("web", 0, 0))
	c.awaitReplicas(rs, 0, 0)
	c.scale("web", int32(want))
	c.awaitSettled(rs, want)
	if n := created(); n != want {
		t.Errorf("%d pods created in all, want %d", n, want)
	}
}

// countCreations counts every pod created from now on, from a watch; the
// function it returns waits until the watch has seen every pod the API
// lists now and returns the count.
func (c *cluster) countCreations() func() int {
	c.T.Helper()
	w, err := client.Pods(c.Conn).Watch(c.Ctx, &metav1.ListOptions{Namespace: "default"})
	if err != nil {
		c.T.Fatal(err)
	}
	var mu sync.Mutex
	added, maxRV := 0, int64(0)
	go func() {
		for {
			ev, err := w.Next()
			if err != nil {
				return
			}
			mu.Lock()
			if ev.Type == "ADDED" {
				added++
			}
			var rv int64
			fmt.Sscan(ev.Object.GetMetadata().GetResourceVersion(), &rv)
			maxRV = max(maxRV, rv)
			mu.Unlock()
		}
	}()
	c.T.Cleanup(w.Stop)
	return func() int {
		c.T.Helper()
		l, err := client.Pods(c.Conn).List(c.Ctx, &metav1.ListOptions{Namespace: "default"})
		if err != nil {
			c.T.Fatal(err)
		}
		var last int64
		for _, p := range l.Items {
			var rv int64
			fmt.Sscan(p.Metadata.ResourceVersion, &rv)
			last = max(last, rv)
		}
		c.Await(patience, "the watch to reach the last pod", func() (bool, string) {
			mu.Lock()
			defer mu.Unlock()
			return maxRV >= last, managertest.Explain("at %d, want %d", maxRV, last)
		})
		mu.Lock()
		defer mu.Unlock()
		return added
	}
}

// awaitSettled waits until the controller's (lagging) cache holds want
// active pods of rs, its status says so and nothing is expected, and then
// checks that the API has want pods.
func (c *cluster) awaitSettled(rs *appsv1.ReplicaSet, want int) {
	c.T.Helper()
	c.Await(patience, "the pods in the lagging cache and the status", func() (bool, string) {
		n := 0
		for _, p := range c.ctrl.pods.Store().ByOwner(rs.Metadata.Uid) {
			if controllerutil.IsPodActive(p) {
				n++
			}
		}
		st := c.status(rs.GetMetadata().GetName())
		key := "default/" + rs.GetMetadata().GetName()
		return n == want && int(st.GetReplicas()) == want && c.ctrl.expectations.Satisfied(key),
			managertest.Explain("%d pods cached, status %v", n, st)
	})
	l, err := client.Pods(c.Conn).List(c.Ctx, &metav1.ListOptions{Namespace: "default"})
	if err != nil {
		c.T.Fatal(err)
	}
	if len(l.Items) != want {
		c.T.Fatalf("%d pods, want %d", len(l.Items), want)
	}
}

// TestNoPodsForPodsOnTheirWayToTheCache: the pods a ReplicaSet has but
// its controller's cache does not show yet are counted before it scales up.
// They are the previous leader's creations, landed after the new
// controller's informer listed, or a creation whose call failed after the
// apiserver wrote the pod (the apiserver died before it answered). Before,
// the controller created a pod for each.
func TestNoPodsForPodsOnTheirWayToTheCache(t *testing.T) {
	t.Run("created by the previous leader", func(t *testing.T) {
		c := start(t, clusterOpts{lagPods: 500 * time.Millisecond, noRun: true})
		created := c.countCreations()
		rs := c.create(newRS("web", 5, 0))
		for i := range 5 {
			p := proto.Clone(rs.GetSpec().GetTemplate()).(*corev1.PodTemplateSpec)
			pod := &corev1.Pod{Metadata: p.GetMetadata(), Spec: p.GetSpec()}
			pod.Metadata.Namespace, pod.Metadata.Name = "default", fmt.Sprintf("web-old-%d", i)
			pod.Metadata.OwnerReferences = []*metav1.OwnerReference{{
				ApiVersion: "apps/v1", Kind: "ReplicaSet", Name: "web", Uid: rs.GetMetadata().GetUid(), Controller: proto.Bool(true),
			}}
			if _, err := client.Pods(c.Conn).Create(c.Ctx, pod); err != nil {
				t.Fatal(err)
			}
		}
		c.GoErr(c.ctrl.Run)
		c.awaitSettled(rs, 5)
		if n := created(); n != 5 {
			t.Errorf("%d pods created in all, want the previous leader's 5", n)
		}
	})
	t.Run("a creation that failed after the pod was written", func(t *testing.T) {
		c := start(t, clusterOpts{lagPods: 500 * time.Millisecond, conn: func(conn grpc.ClientConnInterface) grpc.ClientConnInterface {
			return &failAfterCall{ClientConnInterface: conn, method: "/skiff.core.v1.Pods/Create", call: 2}
		}})
		created := c.countCreations()
		rs := c.create(newRS("web", 5, 0))
		c.awaitSettled(rs, 5)
		if n := created(); n != 5 {
			t.Errorf("%d pods created in all, want 5", n)
		}
	})
}

// failAfterCall makes the call-th call of method, and answers it with
// Unavailable, as a connection lost with the apiserver before its answer.
type failAfterCall struct {
	grpc.ClientConnInterface
	method string
	call   int

	mu sync.Mutex
	n  int
}

func (f *failAfterCall) Invoke(ctx context.Context, method string, args, reply any, opts ...grpc.CallOption) error {
	err := f.ClientConnInterface.Invoke(ctx, method, args, reply, opts...)
	if method != f.method {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.n++; f.n == f.call && err == nil {
		return status.Error(codes.Unavailable, "connection lost before the answer")
	}
	return err
}

// laggingSource delays every watch event of a Source by lag.
type laggingSource struct {
	informer.Source[*corev1.Pod]
	lag time.Duration
}

func (s laggingSource) Watch(ctx context.Context, o *metav1.ListOptions) (informer.Stream[*corev1.Pod], error) {
	inner, err := s.Source.Watch(ctx, o)
	if err != nil {
		return nil, err
	}
	l := &laggingStream{inner: inner, lag: s.lag, events: make(chan timedEvent, 1<<14), stop: make(chan struct{})}
	go l.pump()
	return l, nil
}

type timedEvent struct {
	ev  client.Event[*corev1.Pod]
	err error
	at  time.Time
}

type laggingStream struct {
	inner    informer.Stream[*corev1.Pod]
	lag      time.Duration
	events   chan timedEvent
	stop     chan struct{}
	stopOnce sync.Once
}

func (l *laggingStream) pump() {
	for {
		ev, err := l.inner.Next()
		select {
		case l.events <- timedEvent{ev, err, time.Now()}:
		case <-l.stop:
			return
		}
		if err != nil {
			return
		}
	}
}

func (l *laggingStream) Next() (client.Event[*corev1.Pod], error) {
	select {
	case te := <-l.events:
		if d := time.Until(te.at.Add(l.lag)); d > 0 && te.err == nil {
			t := time.NewTimer(d)
			defer t.Stop()
			select {
			case <-t.C:
			case <-l.stop:
				return client.Event[*corev1.Pod]{}, context.Canceled
			}
		}
		return te.ev, te.err
	case <-l.stop:
		return client.Event[*corev1.Pod]{}, context.Canceled
	}
}

func (l *laggingStream) Stop() {
	l.stopOnce.Do(func() { close(l.stop) })
	l.inner.Stop()
}
