package deployment

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"skiff.dev/internal/client"
	"skiff.dev/internal/deployutil"
	"skiff.dev/internal/informer"
	appsv1 "skiff.dev/proto/apps/v1"
	appsv1beta1 "skiff.dev/proto/apps/v1beta1"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/controller-manager/controllerutil"
	"skiff.dev/services/controller-manager/manager/managertest"
	"skiff.dev/services/controller-manager/replicaset"
	"skiff.dev/services/controller-manager/simnode"
)

// These tests run the Deployment controller with the ReplicaSet controller
// and a simulated node on a real apiserver: Deployments roll out through
// ReplicaSets to pods that become ready.

// patience bounds every wait for something that should happen.
const patience = 15 * time.Second

type cluster struct {
	*managertest.Env
	t    *testing.T
	node *simnode.Node
	deps *informer.Informer[*appsv1.Deployment]
	rses *informer.Informer[*appsv1.ReplicaSet]
}

// start runs both controllers and a node whose pods become ready when
// accept says so (nil: always).
func start(t *testing.T, accept func(*corev1.Pod) bool) *cluster {
	t.Helper()
	env := managertest.Start(t)
	c := &cluster{
		Env:  env,
		t:    t,
		deps: informer.For(env.Manager.Informers, client.Deployments(env.Conn)),
		rses: informer.For(env.Manager.Informers, client.ReplicaSets(env.Conn)),
	}
	dc := New(env.Manager, Options{})
	rc := replicaset.New(env.Manager, replicaset.Options{})
	c.node = env.SimNode(simnode.Options{Accept: accept})
	env.StartInformers()
	env.GoErr(dc.Run)
	env.GoErr(rc.Run)
	return c
}

// webDeployment is Deployment "default/<name>" selecting app=<name>.
func webDeployment(name string, replicas int32, image string) *appsv1.Deployment {
	return &appsv1.Deployment{
		Metadata: &metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: &appsv1.DeploymentSpec{
			Replicas: proto.Int32(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: &corev1.PodTemplateSpec{
				Metadata: &metav1.ObjectMeta{Labels: map[string]string{"app": name}},
				Spec:     &corev1.PodSpec{Containers: []*corev1.Container{{Name: "c", Image: image}}},
			},
		},
	}
}

func rollingBounds(surge, unavailable *metav1.IntOrString) *appsv1.DeploymentStrategy {
	return &appsv1.DeploymentStrategy{Type: RollingUpdate, RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: surge, MaxUnavailable: unavailable}}
}

func (c *cluster) create(d *appsv1.Deployment) *appsv1.Deployment {
	c.t.Helper()
	out, err := client.Deployments(c.Conn).Create(c.Ctx, d)
	if err != nil {
		c.t.Fatalf("creating deployment: %v", err)
	}
	return out
}

// update changes Deployment name as mutate says, retrying on conflict.
func (c *cluster) update(name string, mutate func(*appsv1.Deployment)) *appsv1.Deployment {
	c.t.Helper()
	var out *appsv1.Deployment
	err := client.RetryOnConflict(c.Ctx, client.DefaultRetry, func() error {
		d, err := client.Deployments(c.Conn).Get(c.Ctx, "default", name)
		if err != nil {
			return err
		}
		mutate(d)
		out, err = client.Deployments(c.Conn).Update(c.Ctx, d)
		return err
	})
	if err != nil {
		c.t.Fatalf("updating deployment %s: %v", name, err)
	}
	return out
}

func (c *cluster) setImage(name, image string) *appsv1.Deployment {
	return c.update(name, func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Image = image })
}

func (c *cluster) deployment(name string) *appsv1.Deployment {
	d, _ := c.deps.Store().GetByName("default", name)
	return d
}

// replicaSetsOf lists the ReplicaSets Deployment name controls, oldest first.
func (c *cluster) replicaSetsOf(name string) []*appsv1.ReplicaSet {
	d := c.deployment(name)
	var out []*appsv1.ReplicaSet
	for _, rs := range c.rses.Store().ByNamespace("default") {
		if controllerutil.ControllerOf(rs.GetMetadata()).GetUid() == d.GetMetadata().GetUid() {
			out = append(out, rs)
		}
	}
	slices.SortFunc(out, func(a, b *appsv1.ReplicaSet) int { return byAge(stateOf(a), stateOf(b)) })
	return out
}

func imageOf(t *corev1.PodTemplateSpec) string { return t.GetSpec().GetContainers()[0].GetImage() }

func (c *cluster) rsWithImage(name, image string) *appsv1.ReplicaSet {
	for _, rs := range c.replicaSetsOf(name) {
		if imageOf(rs.GetSpec().GetTemplate()) == image {
			return rs
		}
	}
	return nil
}

// podsOf lists the pods labelled app=name.
func (c *cluster) podsOf(name string) []*corev1.Pod {
	return c.Pods().Store().ByIndex(informer.IndexLabel, "app="+name)
}

// rolledOut explains how far Deployment name is from running replicas
// ready pods of image, with every other ReplicaSet emptied and the status
// saying so.
func (c *cluster) rolledOut(name string, replicas int32, image string) (bool, string) {
	d := c.deployment(name)
	if d == nil {
		return false, "no deployment"
	}
	if imageOf(d.GetSpec().GetTemplate()) != image {
		return false, managertest.Explain("template image %q", imageOf(d.GetSpec().GetTemplate()))
	}
	for _, rs := range c.replicaSetsOf(name) {
		spec, st := rsReplicas(rs), rs.GetStatus()
		if imageOf(rs.GetSpec().GetTemplate()) == image {
			if spec != replicas || st.GetAvailableReplicas() != replicas || st.GetReplicas() != replicas {
				return false, managertest.Explain("new replicaset %s: spec %d, status %v", rs.GetMetadata().GetName(), spec, st)
			}
		} else if spec != 0 || st.GetReplicas() != 0 {
			return false, managertest.Explain("old replicaset %s: spec %d, status %v", rs.GetMetadata().GetName(), spec, st)
		}
	}
	var pods int32
	for _, p := range c.podsOf(name) {
		if imageOf(&corev1.PodTemplateSpec{Spec: p.GetSpec()}) != image || !controllerutil.IsPodReady(p) {
			return false, managertest.Explain("pod %s: image %s, ready %v", p.GetMetadata().GetName(), p.GetSpec().GetContainers()[0].GetImage(), controllerutil.IsPodReady(p))
		}
		pods++
	}
	if pods != replicas {
		return false, managertest.Explain("%d pods", pods)
	}
	st := d.GetStatus()
	if st.GetObservedGeneration() < d.GetMetadata().GetGeneration() || st.GetReplicas() != replicas || st.GetUpdatedReplicas() != replicas ||
		st.GetReadyReplicas() != replicas || st.GetAvailableReplicas() != replicas || st.GetUnavailableReplicas() != 0 {
		return false, managertest.Explain("deployment generation %d, status %v", d.GetMetadata().GetGeneration(), st)
	}
	if c := getCondition(st, ConditionProgressing); c.GetReason() != ReasonNewReplicaSetAvailable || c.GetStatus() != "True" {
		return false, managertest.Explain("Progressing %v", c)
	}
	if c := getCondition(st, ConditionAvailable); c.GetStatus() != "True" {
		return false, managertest.Explain("Available %v", c)
	}
	return true, ""
}

func (c *cluster) awaitRollout(name string, replicas int32, image string) {
	c.t.Helper()
	c.Await(patience, fmt.Sprintf("%s rolled out to %d x %s", name, replicas, image), func() (bool, string) {
		return c.rolledOut(name, replicas, image)
	})
}

// awaitEvent waits for an event about object name whose reason and message
// contain the given strings.
func (c *cluster) awaitEvent(name, reason, message string) {
	c.t.Helper()
	c.Await(patience, fmt.Sprintf("event %s %q", reason, message), func() (bool, string) {
		l, err := client.Events(c.Conn).List(c.Ctx, &metav1.ListOptions{Namespace: "default", FieldSelector: "involvedObject.name=" + name})
		if err != nil {
			return false, err.Error()
		}
		var seen []string
		for _, e := range l.GetItems() {
			if e.GetReason() == reason && strings.Contains(e.GetMessage(), message) {
				return true, ""
			}
			seen = append(seen, e.GetReason()+": "+e.GetMessage())
		}
		return false, managertest.Explain("events: %q", seen)
	})
}

// podWatch follows the pods of one Deployment on the shared informer,
// event by event, in the order the apiserver wrote them.
type podWatch struct {
	mu      sync.Mutex
	app     string
	pods    map[string]*corev1.Pod
	armed   bool
	minUp   int // least available pods seen while armed
	maxPods int // most pods seen while armed
	// firstNew, once a pod with image newImage appears, is how many pods
	// of other images existed then (-1: none appeared yet).
	newImage string
	firstNew int
}

func (c *cluster) watchPods(app string) *podWatch {
	w := &podWatch{app: app, pods: map[string]*corev1.Pod{}, firstNew: -1}
	c.Pods().AddHandler(informer.Handler[*corev1.Pod]{
		OnAdd:    func(p *corev1.Pod) { w.observe(p, false) },
		OnUpdate: func(_, p *corev1.Pod) { w.observe(p, false) },
		OnDelete: func(p *corev1.Pod) { w.observe(p, true) },
	})
	return w
}

func (w *podWatch) observe(p *corev1.Pod, gone bool) {
	if p.GetMetadata().GetLabels()["app"] != w.app {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	key := informer.Key(p)
	if gone {
		delete(w.pods, key)
	} else {
		if _, seen := w.pods[key]; !seen && w.newImage != "" && w.firstNew < 0 && p.GetSpec().GetContainers()[0].GetImage() == w.newImage {
			w.firstNew = 0
			for _, q := range w.pods {
				if q.GetSpec().GetContainers()[0].GetImage() != w.newImage {
					w.firstNew++
				}
			}
		}
		w.pods[key] = p
	}
	if w.armed {
		w.minUp = min(w.minUp, w.available())
		w.maxPods = max(w.maxPods, len(w.pods))
	}
}

// available counts ready pods not being deleted (minReadySeconds is 0).
func (w *podWatch) available() int {
	n := 0
	for _, p := range w.pods {
		if p.GetMetadata().GetDeletionTimestamp() == nil && controllerutil.IsPodReady(p) {
			n++
		}
	}
	return n
}

// arm starts recording; newImage names the image of the rollout to come.
func (w *podWatch) arm(newImage string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.armed, w.newImage = true, newImage
	w.minUp, w.maxPods = w.available(), len(w.pods)
}

func (w *podWatch) result() (minUp, maxPods, firstNew int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.minUp, w.maxPods, w.firstNew
}

func TestCreateOwnsReplicaSetAndPods(t *testing.T) {
	c := start(t, nil)
	d := c.create(webDeployment("web", 3, "nginx:1"))
	c.awaitRollout("web", 3, "nginx:1")

	rses := c.replicaSetsOf("web")
	if len(rses) != 1 {
		t.Fatalf("%d replicasets, want 1", len(rses))
	}
	rs := rses[0]
	m := rs.GetMetadata()
	hash := m.GetLabels()[PodTemplateHashLabel]
	if hash == "" || m.GetName() != "web-"+hash {
		t.Errorf("replicaset %q with pod-template-hash %q, want web-<hash>", m.GetName(), hash)
	}
	if got := PodTemplateHash(c.deployment("web").GetSpec().GetTemplate(), nil); got != hash {
		t.Errorf("pod-template-hash %q, want the template's hash %q", hash, got)
	}
	if rs.GetSpec().GetSelector().GetMatchLabels()[PodTemplateHashLabel] != hash || rs.GetSpec().GetTemplate().GetMetadata().GetLabels()[PodTemplateHashLabel] != hash {
		t.Errorf("selector %v / template labels %v lack the hash", rs.GetSpec().GetSelector(), rs.GetSpec().GetTemplate().GetMetadata().GetLabels())
	}
	ann := m.GetAnnotations()
	if ann[RevisionAnnotation] != "1" || ann[DesiredReplicasAnnotation] != "3" || ann[MaxReplicasAnnotation] != "4" {
		t.Errorf("replicaset annotations %v, want revision 1, desired 3, max 4 (25%% surge)", ann)
	}
	if got := c.deployment("web").GetMetadata().GetAnnotations()[RevisionAnnotation]; got != "1" {
		t.Errorf("deployment revision %q, want 1", got)
	}
	ref := controllerutil.ControllerOf(m)
	if ref.GetKind() != "Deployment" || ref.GetName() != "web" || ref.GetUid() != d.GetMetadata().GetUid() || ref.GetApiVersion() != "apps/v1" {
		t.Errorf("replicaset controller ref %v, want Deployment web %s", ref, d.GetMetadata().GetUid())
	}
	for _, p := range c.podsOf("web") {
		ref := controllerutil.ControllerOf(p.GetMetadata())
		if ref.GetKind() != "ReplicaSet" || ref.GetUid() != m.GetUid() {
			t.Errorf("pod %s controller ref %v, want ReplicaSet %s", p.GetMetadata().GetName(), ref, m.GetName())
		}
		if p.GetMetadata().GetLabels()[PodTemplateHashLabel] != hash {
			t.Errorf("pod %s labels %v lack the hash", p.GetMetadata().GetName(), p.GetMetadata().GetLabels())
		}
	}
	c.awaitEvent("web", EventScalingReplicaSet, fmt.Sprintf("Scaled up replica set %s to 3", m.GetName()))
}

func TestScale(t *testing.T) {
	c := start(t, nil)
	c.create(webDeployment("web", 3, "nginx:1"))
	c.awaitRollout("web", 3, "nginx:1")
	scales := appsv1.NewDeploymentsClient(c.Conn)
	for _, n := range []int32{10, 0, 2} {
		if _, err := scales.UpdateScale(c.Ctx, &appsv1.Scale{
			Metadata: &metav1.ObjectMeta{Name: "web", Namespace: "default"},
			Spec:     &appsv1.ScaleSpec{Replicas: n},
		}); err != nil {
			t.Fatalf("scaling to %d: %v", n, err)
		}
		c.awaitRollout("web", n, "nginx:1")
		if rses := c.replicaSetsOf("web"); len(rses) != 1 {
			t.Fatalf("%d replicasets after scaling to %d, want 1", len(rses), n)
		}
		if got := c.replicaSetsOf("web")[0].GetMetadata().GetAnnotations()[DesiredReplicasAnnotation]; got != fmt.Sprint(n) {
			t.Errorf("desired-replicas %s after scaling to %d", got, n)
		}
	}
	name := c.replicaSetsOf("web")[0].GetMetadata().GetName()
	c.awaitEvent("web", EventScalingReplicaSet, fmt.Sprintf("Scaled down replica set %s to 0", name))
}

func TestRollingUpdateKeepsPodsAvailable(t *testing.T) {
	c := start(t, nil)
	d := webDeployment("web", 3, "nginx:1")
	d.Spec.Strategy = rollingBounds(num(1), num(0))
	c.create(d)
	c.awaitRollout("web", 3, "nginx:1")
	w := c.watchPods("web")
	w.arm("nginx:2")

	c.setImage("web", "nginx:2")
	c.awaitRollout("web", 3, "nginx:2")

	minUp, maxPods, _ := w.result()
	if minUp < 3 {
		t.Errorf("available pods went down to %d during the rollout, want never below 3", minUp)
	}
	if maxPods > 4 {
		t.Errorf("%d pods at once during the rollout, want at most 3+maxSurge=4", maxPods)
	}
	rses := c.replicaSetsOf("web")
	if len(rses) != 2 {
		t.Fatalf("%d replicasets, want 2", len(rses))
	}
	oldRS, newRS := rses[0], rses[1]
	if rsReplicas(oldRS) != 0 || rsReplicas(newRS) != 3 {
		t.Errorf("old at %d, new at %d; want 0 and 3", rsReplicas(oldRS), rsReplicas(newRS))
	}
	if o, n := oldRS.GetMetadata().GetAnnotations()[RevisionAnnotation], newRS.GetMetadata().GetAnnotations()[RevisionAnnotation]; o != "1" || n != "2" {
		t.Errorf("revisions old %s, new %s; want 1, 2", o, n)
	}
	if got := c.deployment("web").GetMetadata().GetAnnotations()[RevisionAnnotation]; got != "2" {
		t.Errorf("deployment revision %q, want 2", got)
	}
	t.Logf("rollout: at least %d available, at most %d pods", minUp, maxPods)
}

func TestRecreate(t *testing.T) {
	c := start(t, nil)
	d := webDeployment("web", 3, "nginx:1")
	d.Spec.Strategy = &appsv1.DeploymentStrategy{Type: Recreate}
	c.create(d)
	c.awaitRollout("web", 3, "nginx:1")
	w := c.watchPods("web")
	w.arm("nginx:2")

	c.setImage("web", "nginx:2")
	c.awaitRollout("web", 3, "nginx:2")
	if _, _, firstNew := w.result(); firstNew != 0 {
		t.Errorf("%d old pods still existed when the first new pod was created, want 0", firstNew)
	}
}

func TestRollback(t *testing.T) {
	c := start(t, nil)
	c.create(webDeployment("web", 2, "nginx:1"))
	c.awaitRollout("web", 2, "nginx:1")
	c.setImage("web", "nginx:2")
	c.awaitRollout("web", 2, "nginx:2")

	// The legacy way: apps/v1beta1 spec.rollbackTo (the annotation in
	// apps/v1), revision 0 being the previous one.
	beta := client.DeploymentsV1beta1(c.Conn)
	if err := client.RetryOnConflict(c.Ctx, client.DefaultRetry, func() error {
		d, err := beta.Get(c.Ctx, "default", "web")
		if err != nil {
			return err
		}
		d.Spec.RollbackTo = &appsv1beta1.RollbackConfig{Revision: 0}
		_, err = beta.Update(c.Ctx, d)
		return err
	}); err != nil {
		t.Fatalf("asking for a rollback: %v", err)
	}
	c.awaitRollout("web", 2, "nginx:1")
	d := c.deployment("web")
	if _, ok := d.GetMetadata().GetAnnotations()[RollbackToAnnotation]; ok {
		t.Errorf("the rollback annotation is still there: %v", d.GetMetadata().GetAnnotations())
	}
	v1 := c.rsWithImage("web", "nginx:1")
	if got := v1.GetMetadata().GetAnnotations(); got[RevisionAnnotation] != "3" || got[RevisionHistoryAnnotation] != "1" {
		t.Errorf("the rolled-back-to replicaset has annotations %v, want revision 3, history 1", got)
	}
	if n := len(c.replicaSetsOf("web")); n != 2 {
		t.Errorf("%d replicasets, want 2 (the old one reused)", n)
	}
	c.awaitEvent("web", EventDeploymentRollback, `Rolled back deployment "web" to revision 1`)

	// The client-side way: RollbackTemplate, as skiffctl rollout undo.
	tmpl, err := deployutil.RollbackTemplate(c.deployment("web"), c.replicaSetsOf("web"), 2)
	if err != nil {
		t.Fatal(err)
	}
	c.update("web", func(d *appsv1.Deployment) { d.Spec.Template = tmpl })
	c.awaitRollout("web", 2, "nginx:2")
	if got := c.rsWithImage("web", "nginx:2").GetMetadata().GetAnnotations()[RevisionAnnotation]; got != "4" {
		t.Errorf("revision %s, want 4", got)
	}

	// A revision that does not exist: a warning, and nothing else changes.
	c.update("web", func(d *appsv1.Deployment) { d.Metadata.Annotations[RollbackToAnnotation] = "42" })
	c.awaitEvent("web", EventRollbackRevisionNotFound, "Unable to find the revision to rollback to.")
	c.Await(patience, "the rollback annotation removed", func() (bool, string) {
		ann := c.deployment("web").GetMetadata().GetAnnotations()
		_, ok := ann[RollbackToAnnotation]
		return !ok, managertest.Explain("annotations %v", ann)
	})
	if got := imageOf(c.deployment("web").GetSpec().GetTemplate()); got != "nginx:2" {
		t.Errorf("image %s after a failed rollback, want nginx:2", got)
	}
}

func TestPauseAndResume(t *testing.T) {
	c := start(t, nil)
	c.create(webDeployment("web", 3, "nginx:1"))
	c.awaitRollout("web", 3, "nginx:1")

	c.update("web", func(d *appsv1.Deployment) { d.Spec.Paused = true })
	c.setImage("web", "nginx:2")
	c.Await(patience, "the paused deployment's status for the new template", func() (bool, string) {
		d := c.deployment("web")
		cond := getCondition(d.GetStatus(), ConditionProgressing)
		return d.GetStatus().GetObservedGeneration() >= d.GetMetadata().GetGeneration() && cond.GetReason() == ReasonDeploymentPaused,
			managertest.Explain("generation %d, status %v", d.GetMetadata().GetGeneration(), d.GetStatus())
	})
	// The sync that observed the new generation would have made the new
	// ReplicaSet before writing the status: there is none.
	if rses := c.replicaSetsOf("web"); len(rses) != 1 {
		t.Fatalf("%d replicasets while paused, want 1", len(rses))
	}

	// Scaling still works while paused.
	c.update("web", func(d *appsv1.Deployment) { d.Spec.Replicas = proto.Int32(5) })
	c.Await(patience, "5 ready pods of nginx:1 while paused", func() (bool, string) {
		rs := c.rsWithImage("web", "nginx:1")
		return rsReplicas(rs) == 5 && rs.GetStatus().GetAvailableReplicas() == 5 && len(c.replicaSetsOf("web")) == 1,
			managertest.Explain("replicasets %d, nginx:1 status %v", len(c.replicaSetsOf("web")), rs.GetStatus())
	})

	c.update("web", func(d *appsv1.Deployment) { d.Spec.Paused = false })
	c.awaitRollout("web", 5, "nginx:2")
}

func TestProgressDeadlineExceeded(t *testing.T) {
	c := start(t, func(p *corev1.Pod) bool { return p.GetSpec().GetContainers()[0].GetImage() != "broken" })
	d := webDeployment("web", 3, "nginx:1")
	d.Spec.ProgressDeadlineSeconds = proto.Int32(2)
	c.create(d)
	c.awaitRollout("web", 3, "nginx:1")

	c.setImage("web", "broken")
	c.Await(patience, "the rollout to time out", func() (bool, string) {
		cond := getCondition(c.deployment("web").GetStatus(), ConditionProgressing)
		return cond.GetStatus() == "False" && cond.GetReason() == ReasonProgressDeadlineExceeded, managertest.Explain("Progressing %v", cond)
	})
	// maxUnavailable 25% of 3 is 0: the old pods all stay.
	if old := c.rsWithImage("web", "nginx:1"); rsReplicas(old) != 3 || old.GetStatus().GetAvailableReplicas() != 3 {
		t.Errorf("old replicaset at %d, status %v; want 3 available", rsReplicas(old), old.GetStatus())
	}
	if cond := getCondition(c.deployment("web").GetStatus(), ConditionAvailable); cond.GetStatus() != "True" {
		t.Errorf("Available %v, want True", cond)
	}

	// Fixing the node lets the rollout finish.
	c.node.SetAccept(nil)
	c.awaitRollout("web", 3, "broken")
}

func TestAdoptionAndCollision(t *testing.T) {
	c := start(t, nil)
	// A paused Deployment creates no ReplicaSet: learn its defaulted template.
	d := webDeployment("web", 2, "nginx:1")
	d.Spec.Paused = true
	d = c.create(d)
	hash := PodTemplateHash(d.GetSpec().GetTemplate(), nil)

	// Someone else's ReplicaSet holds the name the template hashes to.
	squatter := &appsv1.ReplicaSet{
		Metadata: &metav1.ObjectMeta{Name: "web-" + hash, Namespace: "default"},
		Spec: &appsv1.ReplicaSetSpec{
			Replicas: proto.Int32(0),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "other"}},
			Template: &corev1.PodTemplateSpec{
				Metadata: &metav1.ObjectMeta{Labels: map[string]string{"app": "other"}},
				Spec:     &corev1.PodSpec{Containers: []*corev1.Container{{Name: "c", Image: "other"}}},
			},
		},
	}
	if _, err := client.ReplicaSets(c.Conn).Create(c.Ctx, squatter); err != nil {
		t.Fatal(err)
	}
	// And an orphan ReplicaSet the selector matches, running an older template.
	orphan := proto.Clone(squatter).(*appsv1.ReplicaSet)
	orphan.Metadata.Name = "web-orphan"
	orphan.Spec.Selector.MatchLabels = map[string]string{"app": "web", "track": "orphan"}
	orphan.Spec.Template.Metadata.Labels = map[string]string{"app": "web", "track": "orphan"}
	orphan.Spec.Replicas = proto.Int32(1)
	if _, err := client.ReplicaSets(c.Conn).Create(c.Ctx, orphan); err != nil {
		t.Fatal(err)
	}

	c.update("web", func(d *appsv1.Deployment) { d.Spec.Paused = false })
	c.awaitRollout("web", 2, "nginx:1")

	d = c.deployment("web")
	if d.GetStatus().GetCollisionCount() != 1 {
		t.Errorf("collisionCount %d, want 1", d.GetStatus().GetCollisionCount())
	}
	newRS := c.rsWithImage("web", "nginx:1")
	if want := "web-" + PodTemplateHash(d.GetSpec().GetTemplate(), proto.Int32(1)); newRS.GetMetadata().GetName() != want {
		t.Errorf("new replicaset %s, want %s", newRS.GetMetadata().GetName(), want)
	}
	adopted, ok := c.rses.Store().GetByName("default", "web-orphan")
	if !ok || controllerutil.ControllerOf(adopted.GetMetadata()).GetUid() != d.GetMetadata().GetUid() {
		t.Errorf("the orphan was not adopted: %v", adopted.GetMetadata())
	}
	sq, _ := c.rses.Store().GetByName("default", "web-"+hash)
	if controllerutil.ControllerOf(sq.GetMetadata()) != nil || imageOf(sq.GetSpec().GetTemplate()) != "other" {
		t.Errorf("the squatter was touched: %v", sq)
	}

	// Changing the orphan's labels away from the selector releases it.
	if err := client.RetryOnConflict(c.Ctx, client.DefaultRetry, func() error {
		rs, err := client.ReplicaSets(c.Conn).Get(c.Ctx, "default", "web-orphan")
		if err != nil {
			return err
		}
		rs.Metadata.Labels = map[string]string{"app": "elsewhere"}
		_, err = client.ReplicaSets(c.Conn).Update(c.Ctx, rs)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	c.Await(patience, "the relabelled replicaset released", func() (bool, string) {
		rs, _ := c.rses.Store().GetByName("default", "web-orphan")
		return controllerutil.ControllerOf(rs.GetMetadata()) == nil, managertest.Explain("owners %v", rs.GetMetadata().GetOwnerReferences())
	})
}

func TestRevisionHistoryLimit(t *testing.T) {
	c := start(t, nil)
	d := webDeployment("web", 1, "nginx:1")
	d.Spec.RevisionHistoryLimit = proto.Int32(1)
	c.create(d)
	for _, img := range []string{"nginx:1", "nginx:2", "nginx:3", "nginx:4"} {
		c.setImage("web", img)
		c.awaitRollout("web", 1, img)
	}
	c.Await(patience, "one old replicaset kept", func() (bool, string) {
		var imgs []string
		for _, rs := range c.replicaSetsOf("web") {
			imgs = append(imgs, imageOf(rs.GetSpec().GetTemplate()))
		}
		return slices.Equal(imgs, []string{"nginx:3", "nginx:4"}), managertest.Explain("replicasets of %q", imgs)
	})
}

// TestStatusWithoutReplicaSetController checks the Deployment controller's
// own part with nothing else running: the ReplicaSet it creates and the
// status it writes before any pod exists.
func TestStatusWithoutReplicaSetController(t *testing.T) {
	env := managertest.Start(t)
	dc := New(env.Manager, Options{Workers: 1})
	env.StartInformers()
	env.GoErr(dc.Run)
	deps := informer.For(env.Manager.Informers, client.Deployments(env.Conn))
	if _, err := client.Deployments(env.Conn).Create(env.Ctx, webDeployment("web", 4, "nginx:1")); err != nil {
		t.Fatal(err)
	}
	env.Await(patience, "status of a deployment without pods", func() (bool, string) {
		d, _ := deps.Store().GetByName("default", "web")
		st := d.GetStatus()
		prog, avail := getCondition(st, ConditionProgressing), getCondition(st, ConditionAvailable)
		return st.GetObservedGeneration() == d.GetMetadata().GetGeneration() && st.GetUnavailableReplicas() == 4 &&
				prog.GetReason() == ReasonNewReplicaSetCreated && avail.GetReason() == ReasonMinimumReplicasUnavailable,
			managertest.Explain("status %v", st)
	})
	ctx, cancel := context.WithTimeout(env.Ctx, patience)
	defer cancel()
	l, err := client.ReplicaSets(env.Conn).List(ctx, &metav1.ListOptions{Namespace: "default"})
	if err != nil || len(l.GetItems()) != 1 || rsReplicas(l.GetItems()[0]) != 4 {
		t.Fatalf("replicasets %v, %v; want one at 4 (no old pods to surge over)", l, err)
	}
}
