package statefulset

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"skiff.dev/internal/client"
	"skiff.dev/internal/informer"
	appsv1 "skiff.dev/proto/apps/v1"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/controller-manager/controllerutil"
	"skiff.dev/services/controller-manager/garbagecollector"
	"skiff.dev/services/controller-manager/manager/managertest"
	"skiff.dev/services/controller-manager/simnode"
)

// patience bounds every wait for something that should happen.
const patience = 20 * time.Second

// cluster is one test's apiserver, the controller running and a simulated
// node (no scheduler, no volume binder: claims stay Pending and the node
// runs pods regardless, as it does not look at volumes).
type cluster struct {
	*managertest.Env
	sets   *informer.Informer[*appsv1.StatefulSet]
	claims *informer.Informer[*corev1.PersistentVolumeClaim]
	node   *simnode.Node

	mu        sync.Mutex
	created   []string // pod names in the order their creations were seen
	deleted   []string // pod names in the order their deletions were first seen
	violation string   // an OrderedReady creation seen while a lower ordinal was not ready
}

// start starts the cluster with the controller and, by name, the other
// controllers asked for (garbagecollector).
func start(t *testing.T, others ...string) *cluster {
	t.Helper()
	env := managertest.Start(t)
	c := &cluster{
		Env:    env,
		sets:   informer.For(env.Manager.Informers, client.StatefulSets(env.Conn)),
		claims: informer.For(env.Manager.Informers, client.PersistentVolumeClaims(env.Conn)),
	}
	managertest.Watch(env, c.sets)
	managertest.Watch(env, c.claims)
	ctrl := New(env.Manager, Options{})
	if slices.Contains(others, garbagecollector.Name) {
		env.GoErr(garbagecollector.New(env.Manager, garbagecollector.Options{}).Run)
	}
	pods := env.Pods()
	pods.AddHandler(informer.Handler[*corev1.Pod]{
		OnAdd: func(p *corev1.Pod) { c.sawCreate(pods, p) },
		OnUpdate: func(old, cur *corev1.Pod) {
			if !isTerminating(old) && isTerminating(cur) {
				c.sawDelete(cur)
			}
		},
		OnDelete: func(p *corev1.Pod) { c.sawDelete(p) },
	})
	c.node = env.SimNode(simnode.Options{})
	env.StartInformers()
	env.GoErr(ctrl.Run)
	return c
}

func (c *cluster) sawCreate(pods *informer.Informer[*corev1.Pod], p *corev1.Pod) {
	c.mu.Lock()
	defer c.mu.Unlock()
	name := p.GetMetadata().GetName()
	c.created = append(c.created, name)
	set, ord := parentAndOrdinal(name)
	for i := 0; i < ord; i++ {
		prev, ok := pods.Store().GetByName(p.GetMetadata().GetNamespace(), fmt.Sprintf("%s-%d", set, i))
		if c.violation == "" && (!ok || !isRunningAndReady(prev)) {
			c.violation = fmt.Sprintf("%s created while %s-%d was not Running and Ready", name, set, i)
		}
	}
}

func (c *cluster) sawDelete(p *corev1.Pod) {
	c.mu.Lock()
	defer c.mu.Unlock()
	name := p.GetMetadata().GetName()
	if n := len(c.deleted); n == 0 || c.deleted[n-1] != name {
		c.deleted = append(c.deleted, name)
	}
}

// order returns the creations and deletions seen since the last call.
func (c *cluster) order() (created, deleted []string, violation string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	created, deleted, violation = c.created, c.deleted, c.violation
	c.created, c.deleted, c.violation = nil, nil, ""
	return
}

// webSet is Kubernetes' example StatefulSet "web": nginx pods behind the
// headless service "nginx", each with a claim "www".
func webSet(replicas int32) *appsv1.StatefulSet {
	return &appsv1.StatefulSet{
		Metadata: &metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: &appsv1.StatefulSetSpec{
			Replicas:    proto.Int32(replicas),
			ServiceName: "nginx",
			Selector:    &metav1.LabelSelector{MatchLabels: map[string]string{"app": "nginx"}},
			Template: &corev1.PodTemplateSpec{
				Metadata: &metav1.ObjectMeta{Labels: map[string]string{"app": "nginx"}},
				Spec: &corev1.PodSpec{Containers: []*corev1.Container{{
					Name: "nginx", Image: "nginx:1.27",
					VolumeMounts: []*corev1.VolumeMount{{Name: "www", MountPath: "/usr/share/nginx/html"}},
				}}},
			},
			VolumeClaimTemplates: []*corev1.PersistentVolumeClaim{{
				Metadata: &metav1.ObjectMeta{Name: "www"},
				Spec: &corev1.PersistentVolumeClaimSpec{
					AccessModes: []string{"ReadWriteOnce"},
					Resources:   &corev1.VolumeResourceRequirements{Requests: map[string]string{"storage": "1Gi"}},
				},
			}},
		},
	}
}

func (c *cluster) create(set *appsv1.StatefulSet) *appsv1.StatefulSet {
	c.T.Helper()
	got, err := client.StatefulSets(c.Conn).Create(c.Ctx, set)
	if err != nil {
		c.T.Fatalf("create statefulset: %v", err)
	}
	return got
}

// change applies fn to the set, retrying on conflicts.
func (c *cluster) change(name string, fn func(*appsv1.StatefulSet)) {
	c.T.Helper()
	sc := client.StatefulSets(c.Conn)
	err := client.RetryOnConflict(c.Ctx, client.DefaultRetry, func() error {
		set, err := sc.Get(c.Ctx, "default", name)
		if err != nil {
			return err
		}
		fn(set)
		_, err = sc.Update(c.Ctx, set)
		return err
	})
	if err != nil {
		c.T.Fatalf("update %s: %v", name, err)
	}
}

// podsOf returns the names of the set's active pods in the cache, sorted.
func (c *cluster) podsOf(set *appsv1.StatefulSet) []*corev1.Pod {
	var out []*corev1.Pod
	for _, p := range c.Pods().Store().ByOwner(set.GetMetadata().GetUid()) {
		if ref := controllerutil.ControllerOf(p.GetMetadata()); ref.GetUid() == set.GetMetadata().GetUid() && !isTerminating(p) {
			out = append(out, p)
		}
	}
	slices.SortFunc(out, func(a, b *corev1.Pod) int { return ordinalOf(a) - ordinalOf(b) })
	return out
}

func podNames(pods []*corev1.Pod) []string {
	out := make([]string, len(pods))
	for i, p := range pods {
		out[i] = p.GetMetadata().GetName()
	}
	return out
}

func claimNames(claims []*corev1.PersistentVolumeClaim) []string {
	var out []string
	for _, c := range claims {
		out = append(out, c.GetMetadata().GetName())
	}
	slices.Sort(out)
	return out
}

// awaitReady waits until the set has exactly the pods named, all Running
// and Ready, and a status saying so for its generation.
func (c *cluster) awaitReady(set *appsv1.StatefulSet, want ...string) {
	c.T.Helper()
	c.Await(patience, fmt.Sprintf("pods %v ready", want), func() (bool, string) {
		cur, ok := c.sets.Store().GetByName("default", set.GetMetadata().GetName())
		if !ok {
			return false, "not in the cache"
		}
		pods := c.podsOf(set)
		for _, p := range pods {
			if !isRunningAndReady(p) {
				return false, p.GetMetadata().GetName() + " not ready"
			}
		}
		st := cur.GetStatus()
		n := int32(len(want))
		return slices.Equal(podNames(pods), want) && len(c.Pods().Store().ByOwner(set.GetMetadata().GetUid())) == len(want) &&
				st.GetReplicas() == n && st.GetReadyReplicas() == n && st.GetAvailableReplicas() == n &&
				st.GetObservedGeneration() == cur.GetMetadata().GetGeneration(),
			managertest.Explain("pods %v; status %v", podNames(pods), st)
	})
}

func TestScaleKeepsOrdinalsAndClaims(t *testing.T) {
	c := start(t)
	set := c.create(webSet(0))
	c.awaitReady(set)

	c.change("web", func(s *appsv1.StatefulSet) { s.Spec.Replicas = proto.Int32(5) })
	all := []string{"web-0", "web-1", "web-2", "web-3", "web-4"}
	c.awaitReady(set, all...)
	created, _, violation := c.order()
	if !slices.Equal(created, all) || violation != "" {
		t.Fatalf("OrderedReady scale up: created %v (want %v); %s", created, all, violation)
	}
	claims := c.claims.Store().ByNamespace("default")
	wantClaims := []string{"www-web-0", "www-web-1", "www-web-2", "www-web-3", "www-web-4"}
	if got := claimNames(claims); !slices.Equal(got, wantClaims) {
		t.Fatalf("claims %v, want %v", got, wantClaims)
	}
	uids := map[string]string{}
	for _, cl := range claims {
		uids[cl.GetMetadata().GetName()] = cl.GetMetadata().GetUid()
		if cl.GetMetadata().GetLabels()["app"] != "nginx" || len(cl.GetMetadata().GetOwnerReferences()) != 0 {
			t.Errorf("claim %s: labels %v owners %v (Retain: none)", cl.GetMetadata().GetName(), cl.GetMetadata().GetLabels(), cl.GetMetadata().GetOwnerReferences())
		}
	}
	for _, p := range c.podsOf(set) {
		m, s := p.GetMetadata(), p.GetSpec()
		ord := ordinalOf(p)
		if m.GetLabels()[PodNameLabel] != m.GetName() || m.GetLabels()[PodIndexLabel] != fmt.Sprint(ord) || m.GetLabels()[RevisionLabel] == "" {
			t.Errorf("pod %s labels %v", m.GetName(), m.GetLabels())
		}
		if s.GetHostname() != m.GetName() || s.GetSubdomain() != "nginx" {
			t.Errorf("pod %s hostname %q subdomain %q", m.GetName(), s.GetHostname(), s.GetSubdomain())
		}
		if v := s.GetVolumes(); len(v) == 0 || v[0].GetName() != "www" || v[0].GetPersistentVolumeClaim().GetClaimName() != "www-"+m.GetName() {
			t.Errorf("pod %s volumes %v", m.GetName(), v)
		}
	}

	c.change("web", func(s *appsv1.StatefulSet) { s.Spec.Replicas = proto.Int32(2) })
	c.awaitReady(set, "web-0", "web-1")
	_, deleted, _ := c.order()
	if want := []string{"web-4", "web-3", "web-2"}; !slices.Equal(deleted, want) {
		t.Fatalf("OrderedReady scale down deleted %v, want %v", deleted, want)
	}
	if got := claimNames(c.claims.Store().ByNamespace("default")); !slices.Equal(got, wantClaims) {
		t.Fatalf("claims after scale down %v, want %v (Retain)", got, wantClaims)
	}

	c.change("web", func(s *appsv1.StatefulSet) { s.Spec.Replicas = proto.Int32(5) })
	c.awaitReady(set, all...)
	created, _, violation = c.order()
	if want := all[2:]; !slices.Equal(created, want) || violation != "" {
		t.Fatalf("scale up again: created %v (want %v); %s", created, want, violation)
	}
	for _, cl := range c.claims.Store().ByNamespace("default") {
		if uids[cl.GetMetadata().GetName()] != cl.GetMetadata().GetUid() {
			t.Errorf("claim %s was made again", cl.GetMetadata().GetName())
		}
	}
	for _, cl := range c.claims.Store().ByNamespace("default") {
		if ph := cl.GetStatus().GetPhase(); ph == "Bound" {
			t.Errorf("claim %s is %s with no binder running", cl.GetMetadata().GetName(), ph)
		}
	}
}

func TestRollingUpdateWithPartition(t *testing.T) {
	c := start(t)
	set := c.create(webSet(5))
	all := []string{"web-0", "web-1", "web-2", "web-3", "web-4"}
	c.awaitReady(set, all...)
	before := map[string]string{}
	for _, p := range c.podsOf(set) {
		before[p.GetMetadata().GetName()] = podRevision(p)
	}
	first, _ := c.sets.Store().GetByName("default", "web")
	oldRev := first.GetStatus().GetCurrentRevision()
	if oldRev == "" || first.GetStatus().GetUpdateRevision() != oldRev || first.GetStatus().GetCurrentReplicas() != 5 || first.GetStatus().GetUpdatedReplicas() != 5 {
		t.Fatalf("status before the update: %v", first.GetStatus())
	}
	c.order()

	c.change("web", func(s *appsv1.StatefulSet) {
		s.Spec.UpdateStrategy.RollingUpdate.Partition = proto.Int32(2)
		s.Spec.Template.Spec.Containers[0].Image = "nginx:1.28"
	})
	c.Await(patience, "ordinals >= 2 updated", func() (bool, string) {
		cur, _ := c.sets.Store().GetByName("default", "web")
		st := cur.GetStatus()
		pods := c.podsOf(set)
		updated := 0
		for _, p := range pods {
			if podRevision(p) == st.GetUpdateRevision() && isRunningAndReady(p) {
				updated++
			}
		}
		return len(pods) == 5 && updated == 3 && st.GetUpdatedReplicas() == 3 && st.GetCurrentReplicas() == 2 &&
				st.GetReadyReplicas() == 5 && st.GetObservedGeneration() == cur.GetMetadata().GetGeneration(),
			managertest.Explain("%d updated; status %v", updated, st)
	})
	_, deleted, _ := c.order()
	if want := []string{"web-4", "web-3", "web-2"}; !slices.Equal(deleted, want) {
		t.Fatalf("update deleted %v, want %v", deleted, want)
	}
	cur, _ := c.sets.Store().GetByName("default", "web")
	st := cur.GetStatus()
	if st.GetCurrentRevision() != oldRev || st.GetUpdateRevision() == oldRev {
		t.Fatalf("revisions: current %s update %s (old %s)", st.GetCurrentRevision(), st.GetUpdateRevision(), oldRev)
	}
	for _, p := range c.podsOf(set) {
		name, rev := p.GetMetadata().GetName(), podRevision(p)
		wantRev, wantImage := st.GetUpdateRevision(), "nginx:1.28"
		if ordinalOf(p) < 2 {
			wantRev, wantImage = oldRev, "nginx:1.27"
		}
		if rev != wantRev || p.GetSpec().GetContainers()[0].GetImage() != wantImage {
			t.Errorf("pod %s: revision %s image %s, want %s %s", name, rev, p.GetSpec().GetContainers()[0].GetImage(), wantRev, wantImage)
		}
	}
	revs, err := client.ControllerRevisions(c.Conn).List(c.Ctx, &metav1.ListOptions{Namespace: "default"})
	if err != nil || len(revs.GetItems()) != 2 {
		t.Fatalf("revisions: %v %v", err, revs.GetItems())
	}

	// Partition 0 finishes the update: web-1, then web-0; then the update
	// revision is the current one.
	c.change("web", func(s *appsv1.StatefulSet) { s.Spec.UpdateStrategy.RollingUpdate.Partition = proto.Int32(0) })
	c.Await(patience, "update complete", func() (bool, string) {
		cur, _ := c.sets.Store().GetByName("default", "web")
		st := cur.GetStatus()
		return st.GetCurrentRevision() == st.GetUpdateRevision() && st.GetCurrentRevision() != oldRev && st.GetUpdatedReplicas() == 5 &&
			st.GetCurrentReplicas() == 5 && st.GetReadyReplicas() == 5, managertest.Explain("status %v", st)
	})
	if _, deleted, _ := c.order(); !slices.Equal(deleted, []string{"web-1", "web-0"}) {
		t.Fatalf("second step deleted %v, want [web-1 web-0]", deleted)
	}
}

func TestParallelAndFailedPodRecreated(t *testing.T) {
	c := start(t)
	// No pod becomes ready: Parallel creates them all anyway.
	c.node.SetAccept(func(*corev1.Pod) bool { return false })
	set := webSet(3)
	set.Spec.PodManagementPolicy = "Parallel"
	set = c.create(set)
	c.Await(patience, "3 pods, none ready", func() (bool, string) {
		pods := c.podsOf(set)
		return len(pods) == 3, managertest.Explain("pods %v", podNames(pods))
	})
	c.node.SetAccept(nil)
	c.awaitReady(set, "web-0", "web-1", "web-2")

	old, _ := c.Pods().Store().GetByName("default", "web-1")
	failed := proto.Clone(old).(*corev1.Pod)
	failed.Status.Phase = "Failed"
	if _, err := client.Pods(c.Conn).UpdateStatus(c.Ctx, failed); err != nil {
		t.Fatal(err)
	}
	c.Await(patience, "web-1 made again", func() (bool, string) {
		p, ok := c.Pods().Store().GetByName("default", "web-1")
		return ok && p.GetMetadata().GetUid() != old.GetMetadata().GetUid() && isRunningAndReady(p), "waiting"
	})
	c.awaitReady(set, "web-0", "web-1", "web-2")
	c.Await(patience, "event RecreatingFailedPod", func() (bool, string) {
		l, err := client.Events(c.Conn).List(c.Ctx, &metav1.ListOptions{Namespace: "default", FieldSelector: "involvedObject.uid=" + set.GetMetadata().GetUid() + ",reason=RecreatingFailedPod"})
		if err != nil {
			return false, err.Error()
		}
		return len(l.GetItems()) > 0, "none yet"
	})
}
