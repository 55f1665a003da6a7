package garbagecollector

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"google.golang.org/protobuf/proto"

	"skiff.dev/internal/apierrors"
	"skiff.dev/internal/client"
	"skiff.dev/internal/informer"
	"skiff.dev/internal/object"
	appsv1 "skiff.dev/proto/apps/v1"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/controller-manager/controllerutil"
	"skiff.dev/services/controller-manager/manager/managertest"
)

// Integration tests: a real apiserver, the collector alone, and ownership
// chains built by hand (no other controller runs).

const (
	ns      = "default"
	hold    = "skiff.dev/hold" // a finalizer only the test removes
	timeout = 15 * time.Second
)

// cluster is one test's apiserver with a running collector.
type cluster struct {
	t   *testing.T
	env *managertest.Env
	gc  *Controller
	ctx context.Context

	rss *client.Resource[*appsv1.ReplicaSet, *appsv1.ReplicaSetList]
	pds *client.Resource[*corev1.Pod, *corev1.PodList]
	cms *client.Resource[*corev1.ConfigMap, *corev1.ConfigMapList]
}

// start starts an apiserver and a collector on it.
func start(t *testing.T) *cluster {
	return startOn(t, managertest.Start(t), true)
}

// startOn builds a collector on env; run says whether to run it until the
// test ends (else the caller runs it).
func startOn(t *testing.T, env *managertest.Env, run bool) *cluster {
	gc := New(env.Manager, Options{})
	managertest.Watch(env, informer.For(env.Manager.Informers, client.ConfigMaps(env.Conn)))
	env.StartInformers()
	if run {
		env.GoErr(gc.Run)
	}
	return &cluster{
		t: t, env: env, gc: gc, ctx: t.Context(), // outlives env in the restart test
		rss: client.ReplicaSets(env.Conn), pds: client.Pods(env.Conn), cms: client.ConfigMaps(env.Conn),
	}
}

func (c *cluster) replicaSet(name string) *appsv1.ReplicaSet {
	c.t.Helper()
	labels := map[string]string{"app": name}
	rs, err := c.rss.Create(c.ctx, &appsv1.ReplicaSet{
		Metadata: &metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: &appsv1.ReplicaSetSpec{
			Replicas: proto.Int32(0),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: &corev1.PodTemplateSpec{
				Metadata: &metav1.ObjectMeta{Labels: labels},
				Spec:     &corev1.PodSpec{Containers: []*corev1.Container{{Name: "c", Image: "nginx"}}},
			},
		},
	})
	if err != nil {
		c.t.Fatalf("create replicaset %s: %v", name, err)
	}
	return rs
}

func (c *cluster) pod(name string, finalizers []string, owners ...*metav1.OwnerReference) *corev1.Pod {
	c.t.Helper()
	p, err := c.pds.Create(c.ctx, &corev1.Pod{
		Metadata: &metav1.ObjectMeta{Namespace: ns, Name: name, OwnerReferences: owners, Finalizers: finalizers},
		Spec:     &corev1.PodSpec{Containers: []*corev1.Container{{Name: "c", Image: "nginx"}}},
	})
	if err != nil {
		c.t.Fatalf("create pod %s: %v", name, err)
	}
	return p
}

func (c *cluster) configMap(name string, finalizers []string, owners ...*metav1.OwnerReference) *corev1.ConfigMap {
	c.t.Helper()
	cm, err := c.cms.Create(c.ctx, &corev1.ConfigMap{
		Metadata: &metav1.ObjectMeta{Namespace: ns, Name: name, OwnerReferences: owners, Finalizers: finalizers},
		Data:     map[string]string{"k": "v"},
	})
	if err != nil {
		c.t.Fatalf("create configmap %s: %v", name, err)
	}
	return cm
}

// controllerRef is an ownerReference with controller and blockOwnerDeletion.
func controllerRef(owner object.Object) *metav1.OwnerReference {
	return controllerutil.NewControllerRef(owner)
}

// plainRef is an ownerReference without controller or blockOwnerDeletion.
func plainRef(owner object.Object) *metav1.OwnerReference {
	r := controllerutil.NewControllerRef(owner)
	r.Controller, r.BlockOwnerDeletion = nil, nil
	return r
}

func (c *cluster) deleteRS(rs *appsv1.ReplicaSet, policy string) {
	c.t.Helper()
	_, err := c.rss.Delete(c.ctx, &metav1.DeleteRequest{Namespace: ns, Name: rs.Metadata.Name, PropagationPolicy: policy})
	if err != nil {
		c.t.Fatalf("delete replicaset %s (%s): %v", rs.Metadata.Name, policy, err)
	}
}

// inGraph waits until the collector's graph holds every object.
func (c *cluster) inGraph(objs ...object.Object) {
	c.t.Helper()
	c.env.Await(timeout, "the graph to hold every object", func() (bool, string) {
		c.gc.mu.Lock()
		defer c.gc.mu.Unlock()
		for _, o := range objs {
			if _, ok := c.gc.graph.Get(o.GetMetadata().GetUid()); !ok {
				return false, "missing " + o.GetMetadata().GetName()
			}
		}
		return true, ""
	})
}

// state is what the API says of an object now: "gone", "deleting" or "live".
func state[T object.Object, L proto.Message](ctx context.Context, r *client.Resource[T, L], name string) (string, T, error) {
	obj, err := r.Get(ctx, ns, name)
	switch {
	case apierrors.IsNotFound(err):
		return "gone", obj, nil
	case err != nil:
		return "", obj, err
	case obj.GetMetadata().GetDeletionTimestamp() != nil:
		return "deleting", obj, nil
	}
	return "live", obj, nil
}

// expect is one object's expected state for awaitStates.
type expect struct {
	what  string // "pod p1"
	state string
}

// stateOf is the state of an object named "kind name", kind one of rs, pod, cm.
func (c *cluster) stateOf(what string) (string, error) {
	kind, name, _ := strings.Cut(what, " ")
	switch kind {
	case "rs":
		st, _, err := state(c.ctx, c.rss, name)
		return st, err
	case "pod":
		st, _, err := state(c.ctx, c.pds, name)
		return st, err
	case "cm":
		st, _, err := state(c.ctx, c.cms, name)
		return st, err
	}
	return "", fmt.Errorf("unknown kind in %q", what)
}

// awaitStates waits until every object is in its state.
func (c *cluster) awaitStates(want ...expect) {
	c.t.Helper()
	c.env.Await(timeout, fmt.Sprint(want), func() (bool, string) {
		for _, w := range want {
			got, err := c.stateOf(w.what)
			if err != nil {
				return false, err.Error()
			}
			if got != w.state {
				return false, fmt.Sprintf("%s is %s, want %s", w.what, got, w.state)
			}
		}
		return true, ""
	})
}

// unhold removes the test's finalizer from a pod.
func (c *cluster) unhold(name string) {
	c.t.Helper()
	err := client.RetryOnConflict(c.ctx, client.DefaultRetry, func() error {
		p, err := c.pds.Get(c.ctx, ns, name)
		if err != nil {
			return err
		}
		dropFinalizer(object.Meta(p), hold)
		_, err = c.pds.Update(c.ctx, p)
		return err
	})
	if err != nil {
		c.t.Fatalf("remove the hold on pod %s: %v", name, err)
	}
}

func ownerUIDs(m *metav1.ObjectMeta) []string {
	var out []string
	for _, r := range m.GetOwnerReferences() {
		out = append(out, r.GetUid())
	}
	return out
}

func TestBackgroundDeletionCollectsThreeLevels(t *testing.T) {
	c := start(t)
	rs := c.replicaSet("owner")
	p1 := c.pod("p1", nil, controllerRef(rs))
	p2 := c.pod("p2", nil, controllerRef(rs))
	cm := c.configMap("cm", nil, controllerRef(p1))
	c.inGraph(rs, p1, p2, cm)

	c.deleteRS(rs, propagationBackground)
	c.awaitStates(expect{"rs owner", "gone"}, expect{"pod p1", "gone"}, expect{"pod p2", "gone"}, expect{"cm cm", "gone"})
}

// deletions records the resourceVersion of every DELETED watch event, by
// "kind name"; revisions are etcd's, so they order events across kinds.
type deletions struct {
	mu sync.Mutex
	rv map[string]int64
}

func watchDeletions[T object.Object, L proto.Message](c *cluster, d *deletions, kind string, r *client.Resource[T, L], from string) {
	c.t.Helper()
	w, err := r.Watch(c.ctx, &metav1.ListOptions{Namespace: ns, ResourceVersion: from})
	if err != nil {
		c.t.Fatalf("watch %s: %v", kind, err)
	}
	c.env.Go(func(ctx context.Context) {
		defer w.Stop()
		for {
			ev, err := w.Next()
			if err != nil {
				return
			}
			if ev.Type != "DELETED" {
				continue
			}
			rv, _ := strconv.ParseInt(ev.Object.GetMetadata().GetResourceVersion(), 10, 64)
			d.mu.Lock()
			d.rv[kind+" "+ev.Object.GetMetadata().GetName()] = rv
			d.mu.Unlock()
		}
	})
}

func (d *deletions) get(what string) (int64, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	rv, ok := d.rv[what]
	return rv, ok
}

func TestForegroundDeletionWaitsForBlockingDependents(t *testing.T) {
	c := start(t)
	rs := c.replicaSet("owner")
	p1 := c.pod("p1", nil, controllerRef(rs))
	p2 := c.pod("p2", []string{hold}, controllerRef(rs)) // blocks the owner until the test lets go
	cm := c.configMap("cm", nil, controllerRef(p1))      // third level, under p1
	loose := c.configMap("loose", []string{hold}, plainRef(rs))
	c.inGraph(rs, p1, p2, cm, loose)

	d := &deletions{rv: map[string]int64{}}
	from := loose.Metadata.ResourceVersion
	watchDeletions(c, d, "rs", c.rss, from)
	watchDeletions(c, d, "pod", c.pds, from)
	watchDeletions(c, d, "cm", c.cms, from)

	c.deleteRS(rs, propagationForeground)
	// p1 and its configmap go; p2 is held by its finalizer, and so is the
	// owner, waiting for it; the non-blocking configmap is being deleted
	// but not waited for.
	c.awaitStates(expect{"pod p1", "gone"}, expect{"cm cm", "gone"}, expect{"pod p2", "deleting"}, expect{"cm loose", "deleting"})
	_, owner, err := state(c.ctx, c.rss, "owner")
	if err != nil {
		t.Fatal(err)
	}
	if m := owner.GetMetadata(); m.GetDeletionTimestamp() == nil || !slices.Contains(m.GetFinalizers(), FinalizerDeleteDependents) {
		t.Fatalf("owner while a blocking dependent remains: deletionTimestamp %v, finalizers %q; want set, with %s",
			m.GetDeletionTimestamp(), m.GetFinalizers(), FinalizerDeleteDependents)
	}

	c.unhold("p2")
	c.awaitStates(expect{"rs owner", "gone"}, expect{"pod p2", "gone"}, expect{"cm loose", "deleting"})

	c.env.Await(timeout, "the watches to see every deletion", func() (bool, string) {
		for _, what := range []string{"rs owner", "pod p1", "pod p2", "cm cm"} {
			if _, ok := d.get(what); !ok {
				return false, "no DELETED event for " + what
			}
		}
		return true, ""
	})
	ownerRV, _ := d.get("rs owner")
	for _, what := range []string{"pod p1", "pod p2", "cm cm"} {
		if rv, _ := d.get(what); rv >= ownerRV {
			t.Errorf("%s deleted at revision %d, not before the owner (%d)", what, rv, ownerRV)
		}
	}
	// p1 has a dependent of its own: it was deleted in the foreground too.
	cmRV, _ := d.get("cm cm")
	p1RV, _ := d.get("pod p1")
	if cmRV >= p1RV {
		t.Errorf("cm deleted at revision %d, not before its owner p1 (%d)", cmRV, p1RV)
	}
}

func TestOrphanDeletionKeepsDependents(t *testing.T) {
	c := start(t)
	rs := c.replicaSet("owner")
	other := c.replicaSet("other")
	p1 := c.pod("p1", nil, controllerRef(rs))
	p2 := c.pod("p2", nil, controllerRef(rs), plainRef(other))
	c.inGraph(rs, other, p1, p2)

	c.deleteRS(rs, propagationOrphan)
	c.awaitStates(expect{"rs owner", "gone"}, expect{"pod p1", "live"}, expect{"pod p2", "live"})
	for _, p := range []struct {
		name string
		want []string
	}{{"p1", nil}, {"p2", []string{other.Metadata.Uid}}} {
		got, err := c.pds.Get(c.ctx, ns, p.name)
		if err != nil {
			t.Fatal(err)
		}
		if uids := ownerUIDs(got.Metadata); !slices.Equal(uids, p.want) {
			t.Errorf("pod %s owners %q, want %q", p.name, uids, p.want)
		}
	}
}

func TestDependentWithAnotherOwnerSurvives(t *testing.T) {
	c := start(t)
	a := c.replicaSet("a")
	b := c.replicaSet("b")
	cm := c.configMap("shared", nil, controllerRef(a), plainRef(b))
	c.inGraph(a, b, cm)

	c.deleteRS(a, propagationBackground)
	c.env.Await(timeout, "the shared configmap to lose its reference to a", func() (bool, string) {
		got, err := c.cms.Get(c.ctx, ns, "shared")
		if err != nil {
			return false, err.Error()
		}
		uids := ownerUIDs(got.Metadata)
		return slices.Equal(uids, []string{b.Metadata.Uid}), fmt.Sprintf("owners %q", uids)
	})
	c.awaitStates(expect{"cm shared", "live"})

	// Then b goes too: the configmap is garbage now.
	c.deleteRS(b, propagationBackground)
	c.awaitStates(expect{"cm shared", "gone"})
}

func TestDanglingReferencesAreCollected(t *testing.T) {
	c := start(t)
	real := c.replicaSet("real")
	never := &metav1.OwnerReference{ApiVersion: "apps/v1", Kind: "ReplicaSet", Name: "never", Uid: "00000000-0000-0000-0000-00000000dead"}
	stale := &metav1.OwnerReference{ApiVersion: "apps/v1", Kind: "ReplicaSet", Name: "real", Uid: "00000000-0000-0000-0000-00000000beef"}
	widget := &metav1.OwnerReference{ApiVersion: "example.com/v1", Kind: "Widget", Name: "w", Uid: "00000000-0000-0000-0000-0000000000aa"}
	c.configMap("alive", nil, controllerRef(real))
	c.configMap("unknown-kind", nil, widget)
	c.configMap("never", nil, never)           // an owner that never existed
	c.configMap("stale", nil, stale)           // the owner's name holds another uid
	c.pod("mixed", nil, never, plainRef(real)) // one dangling, one live owner
	// A cluster-scoped object cannot have a namespaced owner: left alone.
	if _, err := client.Nodes(c.env.Conn).Create(c.ctx, &corev1.Node{Metadata: &metav1.ObjectMeta{Name: "n1", OwnerReferences: []*metav1.OwnerReference{never}}}); err != nil {
		t.Fatal(err)
	}

	c.awaitStates(expect{"cm never", "gone"}, expect{"cm stale", "gone"})
	c.env.Await(timeout, "the mixed pod to lose its dangling reference", func() (bool, string) {
		got, err := c.pds.Get(c.ctx, ns, "mixed")
		if err != nil {
			return false, err.Error()
		}
		uids := ownerUIDs(got.Metadata)
		return slices.Equal(uids, []string{real.Metadata.Uid}), fmt.Sprintf("owners %q", uids)
	})
	c.env.Await(timeout, "Warning events about the unresolvable references", func() (bool, string) {
		l, err := client.Events(c.env.Conn).List(c.ctx, &metav1.ListOptions{Namespace: ns})
		if err != nil {
			return false, err.Error()
		}
		var seen []string
		for _, e := range l.GetItems() {
			seen = append(seen, e.GetReason()+" "+e.GetInvolvedObject().GetName())
		}
		return slices.Contains(seen, reasonOwnerRefInvalidKind+" unknown-kind") && slices.Contains(seen, reasonOwnerRefInvalidNamespace+" n1"),
			fmt.Sprintf("events %q", seen)
	})
	c.awaitStates(expect{"cm alive", "live"}, expect{"cm unknown-kind", "live"}, expect{"pod mixed", "live"})
	if _, err := client.Nodes(c.env.Conn).Get(c.ctx, "", "n1"); err != nil {
		t.Errorf("node n1: %v", err)
	}
}

func TestRestartFinishesHalfDoneJobs(t *testing.T) {
	env1 := managertest.Start(t)
	c := startOn(t, env1, false)
	ctx, cancel := context.WithCancel(env1.Ctx)
	done := make(chan error, 1)
	go func() { done <- c.gc.Run(ctx) }()

	fg := c.replicaSet("fg")
	fgPod := c.pod("fg-pod", nil, controllerRef(fg))
	fgCM := c.configMap("fg-cm", nil, controllerRef(fgPod))
	or := c.replicaSet("or")
	orPod := c.pod("or-pod", nil, controllerRef(or))
	bg := c.replicaSet("bg")
	bgPod := c.pod("bg-pod", nil, controllerRef(bg))
	c.inGraph(fg, fgPod, fgCM, or, orPod, bg, bgPod)

	// The collector stops (and the rest of that process with it).
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(timeout):
		t.Fatal("Run did not return after its context ended")
	}
	env1.Stop()

	// Deletions while no collector runs: they stay half done.
	c.deleteRS(fg, propagationForeground)
	c.deleteRS(or, propagationOrphan)
	c.deleteRS(bg, propagationBackground)
	c.expectStates(expect{"rs fg", "deleting"}, expect{"rs or", "deleting"}, expect{"rs bg", "gone"},
		expect{"pod fg-pod", "live"}, expect{"cm fg-cm", "live"}, expect{"pod or-pod", "live"}, expect{"pod bg-pod", "live"})

	// A new collector on the same apiserver rebuilds the graph and finishes.
	env2 := managertest.NewEnv(t, env1.Server, env1.Conn, env1.Logger)
	c2 := startOn(t, env2, true)
	c2.awaitStates(expect{"rs fg", "gone"}, expect{"pod fg-pod", "gone"}, expect{"cm fg-cm", "gone"},
		expect{"rs or", "gone"}, expect{"pod or-pod", "live"},
		expect{"rs bg", "gone"}, expect{"pod bg-pod", "gone"})
	got, err := c2.pds.Get(c2.ctx, ns, "or-pod")
	if err != nil {
		t.Fatal(err)
	}
	if uids := ownerUIDs(got.Metadata); len(uids) != 0 {
		t.Errorf("orphaned pod still has owners %q", uids)
	}
}

// expectStates checks states once.
func (c *cluster) expectStates(want ...expect) {
	c.t.Helper()
	for _, w := range want {
		got, err := c.stateOf(w.what)
		if err != nil {
			c.t.Fatal(err)
		}
		if got != w.state {
			c.t.Errorf("%s is %s, want %s", w.what, got, w.state)
		}
	}
}

func TestOwnerTheGraphLacksIsLookedUpBeforeDeleting(t *testing.T) {
	c := startOn(t, managertest.Start(t), false) // no workers: the test calls attemptToDelete itself
	rs := c.replicaSet("owner")
	cm := c.configMap("cm", nil, controllerRef(rs))
	dead := &metav1.OwnerReference{ApiVersion: "apps/v1", Kind: "ReplicaSet", Name: "owner", Uid: "00000000-0000-0000-0000-00000000dead"}
	ghost1 := c.configMap("ghost1", nil, dead)
	ghost2 := c.configMap("ghost2", nil, dead)
	c.inGraph(rs, cm, ghost1, ghost2)

	// The ReplicaSets informer lags: the graph has not seen the owner.
	c.gc.mu.Lock()
	delete(c.gc.graph.nodes, rs.Metadata.Uid)
	c.gc.mu.Unlock()

	lookups := func() (present, absent float64) {
		return testutil.ToFloat64(c.gc.m.lookups.WithLabelValues(lookupPresent)), testutil.ToFloat64(c.gc.m.lookups.WithLabelValues(lookupAbsent))
	}
	for _, step := range []struct {
		uid                     string
		wantPresent, wantAbsent float64
	}{
		{cm.Metadata.Uid, 1, 0},     // found by name with its uid: kept
		{ghost1.Metadata.Uid, 1, 1}, // the name holds another uid: gone
		{ghost2.Metadata.Uid, 1, 1}, // the same owner again: known absent, no lookup
	} {
		if _, err := c.gc.reconcileDelete(c.ctx, step.uid); err != nil {
			t.Fatalf("attemptToDelete: %v", err)
		}
		if p, a := lookups(); p != step.wantPresent || a != step.wantAbsent {
			t.Errorf("after %s: lookups present %v absent %v, want %v %v", step.uid, p, a, step.wantPresent, step.wantAbsent)
		}
	}
	c.expectStates(expect{"cm cm", "live"}, expect{"cm ghost1", "gone"}, expect{"cm ghost2", "gone"})
}
