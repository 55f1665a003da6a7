package daemonset

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"skiff.dev/internal/client"
	"skiff.dev/internal/informer"
	appsv1 "skiff.dev/proto/apps/v1"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/controller-manager/manager/managertest"
	"skiff.dev/services/controller-manager/simnode"
)

// These tests run the DaemonSet controller on a real apiserver with a
// simulated node agent that makes bound pods Running and Ready. The
// scheduler's part is played by the test's binder, which binds each daemon
// pod to the node its matchFields metadata.name In names, as the
// scheduler's NodeAffinity filter admits only that node (the
// controller-manager module does not depend on the scheduler's; the bench
// scenario daemonset.rollout_1000_nodes_s runs the real scheduler).

const patience = 20 * time.Second

type cluster struct {
	*managertest.Env
	t    *testing.T
	dses *informer.Informer[*appsv1.DaemonSet]
	crs  *informer.Informer[*appsv1.ControllerRevision]
}

func start(t *testing.T, nodes ...string) *cluster {
	t.Helper()
	env := managertest.Start(t)
	c := &cluster{Env: env, t: t,
		dses: informer.For(env.Manager.Informers, client.DaemonSets(env.Conn)),
		crs:  informer.For(env.Manager.Informers, client.ControllerRevisions(env.Conn)),
	}
	managertest.Watch(env, c.dses)
	managertest.Watch(env, c.crs)
	for _, n := range nodes {
		c.addNode(n, map[string]string{"role": "worker"})
	}
	dc := New(env.Manager, Options{})
	env.SimNode(simnode.Options{Accept: func(p *corev1.Pod) bool { return p.GetSpec().GetNodeName() != "" }})
	c.startBinder()
	env.StartInformers()
	env.GoErr(dc.Run)
	return c
}

// startBinder binds each unbound daemon pod to its target node.
func (c *cluster) startBinder() {
	queue := make(chan *corev1.Pod, 1<<14)
	enqueue := func(p *corev1.Pod) {
		if p.GetSpec().GetNodeName() == "" && p.GetMetadata().GetDeletionTimestamp() == nil && TargetNode(p) != "" {
			queue <- p
		}
	}
	c.Pods().AddHandler(informer.Handler[*corev1.Pod]{OnAdd: enqueue})
	pods := corev1.NewPodsClient(c.Conn)
	for range 4 {
		c.Go(func(ctx context.Context) {
			for {
				select {
				case <-ctx.Done():
					return
				case p := <-queue:
					_, _ = pods.Bind(ctx, &corev1.Binding{
						Metadata: &metav1.ObjectMeta{Namespace: p.GetMetadata().GetNamespace(), Name: p.GetMetadata().GetName()},
						Target:   &corev1.ObjectReference{Kind: "Node", Name: TargetNode(p)},
					})
				}
			}
		})
	}
}

func (c *cluster) addNode(name string, labels map[string]string) {
	c.t.Helper()
	l := map[string]string{"kubernetes.io/hostname": name}
	for k, v := range labels {
		l[k] = v
	}
	if _, err := client.Nodes(c.Conn).Create(c.Ctx, &corev1.Node{Metadata: &metav1.ObjectMeta{Name: name, Labels: l}}); err != nil {
		c.t.Fatalf("create node %s: %v", name, err)
	}
}

func (c *cluster) updateNode(name string, mutate func(*corev1.Node)) {
	c.t.Helper()
	err := client.RetryOnConflict(c.Ctx, client.DefaultRetry, func() error {
		n, err := client.Nodes(c.Conn).Get(c.Ctx, "", name)
		if err != nil {
			return err
		}
		mutate(n)
		_, err = client.Nodes(c.Conn).Update(c.Ctx, n)
		return err
	})
	if err != nil {
		c.t.Fatalf("update node %s: %v", name, err)
	}
}

func agentDS(name string, image string, ru *appsv1.RollingUpdateDaemonSet) *appsv1.DaemonSet {
	ds := &appsv1.DaemonSet{
		Metadata: &metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: &appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: &corev1.PodTemplateSpec{
				Metadata: &metav1.ObjectMeta{Labels: map[string]string{"app": name}},
				Spec: &corev1.PodSpec{
					NodeSelector: map[string]string{"role": "worker"},
					Containers:   []*corev1.Container{{Name: "agent", Image: image}},
				},
			},
		},
	}
	if ru != nil {
		ds.Spec.UpdateStrategy = &appsv1.DaemonSetUpdateStrategy{Type: "RollingUpdate", RollingUpdate: ru}
	}
	return ds
}

func (c *cluster) create(ds *appsv1.DaemonSet) {
	c.t.Helper()
	if _, err := client.DaemonSets(c.Conn).Create(c.Ctx, ds); err != nil {
		c.t.Fatalf("create daemonset: %v", err)
	}
}

func (c *cluster) setImage(name, image string) {
	c.t.Helper()
	err := client.RetryOnConflict(c.Ctx, client.DefaultRetry, func() error {
		ds, err := client.DaemonSets(c.Conn).Get(c.Ctx, "default", name)
		if err != nil {
			return err
		}
		ds.Spec.Template.Spec.Containers[0].Image = image
		_, err = client.DaemonSets(c.Conn).Update(c.Ctx, ds)
		return err
	})
	if err != nil {
		c.t.Fatalf("set image: %v", err)
	}
}

// podsByNode are the live (not being deleted) pods of DaemonSet name, by node.
func (c *cluster) podsByNode(name string) map[string][]*corev1.Pod {
	out := map[string][]*corev1.Pod{}
	for _, p := range c.Pods().Store().ByNamespace("default") {
		if p.GetMetadata().GetLabels()["app"] != name || p.GetMetadata().GetDeletionTimestamp() != nil {
			continue
		}
		out[TargetNode(p)] = append(out[TargetNode(p)], p)
	}
	return out
}

// settled: exactly one ready pod of image on each of nodes and none elsewhere.
func (c *cluster) settled(name, image string, nodes ...string) (bool, string) {
	by := c.podsByNode(name)
	if len(by) != len(nodes) {
		return false, fmt.Sprintf("pods on %d nodes, want %d", len(by), len(nodes))
	}
	for _, n := range nodes {
		ps := by[n]
		if len(ps) != 1 || !simnode.IsReady(ps[0]) || ps[0].GetSpec().GetContainers()[0].GetImage() != image {
			return false, fmt.Sprintf("node %s: %d pods, not yet one ready %s", n, len(ps), image)
		}
	}
	return true, ""
}

func (c *cluster) status(name string) *appsv1.DaemonSetStatus {
	ds, _ := c.dses.Store().GetByName("default", name)
	return ds.GetStatus()
}

func TestDaemonSetFollowsNodes(t *testing.T) {
	c := start(t, "n1", "n2")
	c.create(agentDS("agent", "agent:1", nil))
	c.Await(patience, "a ready pod on n1 and n2", func() (bool, string) { return c.settled("agent", "agent:1", "n1", "n2") })
	c.Await(patience, "status counts 2", func() (bool, string) {
		st := c.status("agent")
		return st.GetDesiredNumberScheduled() == 2 && st.GetNumberAvailable() == 2 && st.GetUpdatedNumberScheduled() == 2 && st.GetObservedGeneration() == 1, fmt.Sprint(st)
	})

	// The pods as the scheduler needs them.
	p := c.podsByNode("agent")["n1"][0]
	if p.GetMetadata().GetLabels()[RevisionLabel] == "" || p.GetMetadata().GetLabels()[TemplateGenerationLabel] != "1" {
		t.Errorf("pod labels %v", p.GetMetadata().GetLabels())
	}
	if got := len(p.GetSpec().GetTolerations()); got != 6 {
		t.Errorf("pod has %d tolerations, want the 6 the controller adds", got)
	}

	t.Log("a node joins")
	c.addNode("n3", map[string]string{"role": "worker"})
	c.addNode("other", map[string]string{"role": "db"})
	c.Await(patience, "a pod on n3 too, none on other", func() (bool, string) { return c.settled("agent", "agent:1", "n1", "n2", "n3") })

	t.Log("n3 is relabelled out of the node selector; n2 is tainted NoSchedule (the pod stays), other joins the selector")
	c.updateNode("n3", func(n *corev1.Node) { n.Metadata.Labels["role"] = "db" })
	c.updateNode("n2", func(n *corev1.Node) {
		n.Spec = &corev1.NodeSpec{Taints: []*corev1.Taint{{Key: "maintenance", Effect: "NoSchedule"}}}
	})
	c.updateNode("other", func(n *corev1.Node) { n.Metadata.Labels["role"] = "worker" })
	c.Await(patience, "pods on n1, n2 and other", func() (bool, string) { return c.settled("agent", "agent:1", "n1", "n2", "other") })
	c.Await(patience, "n2 (tainted NoSchedule) not desired, its pod counted misscheduled", func() (bool, string) {
		st := c.status("agent")
		return st.GetDesiredNumberScheduled() == 2 && st.GetNumberMisscheduled() == 1, fmt.Sprint(st)
	})

	t.Log("n2 is tainted NoExecute: its pod goes")
	c.updateNode("n2", func(n *corev1.Node) {
		n.Spec = &corev1.NodeSpec{Taints: []*corev1.Taint{{Key: "maintenance", Effect: "NoExecute"}}}
	})
	c.Await(patience, "pods on n1 and other only", func() (bool, string) { return c.settled("agent", "agent:1", "n1", "other") })

	t.Log("n1 leaves")
	if _, err := client.Nodes(c.Conn).Delete(c.Ctx, &metav1.DeleteRequest{Name: "n1"}); err != nil {
		t.Fatal(err)
	}
	c.Await(patience, "desired 1 (n1's bound pod is the pod GC's)", func() (bool, string) {
		st := c.status("agent")
		return st.GetDesiredNumberScheduled() == 1 && st.GetCurrentNumberScheduled() == 1, fmt.Sprint(st)
	})
}

// TestDaemonSetRollingUpdate rolls an image across 6 nodes with
// maxUnavailable 2 and checks, at every pod event, that no more than 2
// nodes lack an available pod.
func TestDaemonSetRollingUpdate(t *testing.T) {
	nodes := []string{"n1", "n2", "n3", "n4", "n5", "n6"}
	c := start(t, nodes...)
	c.create(agentDS("agent", "agent:1", &appsv1.RollingUpdateDaemonSet{
		MaxUnavailable: &metav1.IntOrString{Value: &metav1.IntOrString_IntVal{IntVal: 2}},
		MaxSurge:       &metav1.IntOrString{Value: &metav1.IntOrString_IntVal{IntVal: 0}},
	}))
	c.Await(patience, "one ready pod per node", func() (bool, string) { return c.settled("agent", "agent:1", nodes...) })

	var mu sync.Mutex
	worst := 0
	watching := false
	c.Pods().AddHandler(informer.Handler[*corev1.Pod]{
		OnUpdate: func(_, _ *corev1.Pod) { c.measure(&mu, &watching, &worst, nodes) },
		OnDelete: func(*corev1.Pod) { c.measure(&mu, &watching, &worst, nodes) },
	})
	mu.Lock()
	watching = true
	mu.Unlock()
	c.setImage("agent", "agent:2")
	c.Await(patience, "agent:2 on every node", func() (bool, string) { return c.settled("agent", "agent:2", nodes...) })
	c.Await(patience, "status: 6 updated and available", func() (bool, string) {
		st := c.status("agent")
		return st.GetUpdatedNumberScheduled() == 6 && st.GetNumberAvailable() == 6 && st.GetObservedGeneration() == 2, fmt.Sprint(st)
	})
	mu.Lock()
	defer mu.Unlock()
	t.Logf("at most %d nodes were without an available pod", worst)
	if worst > 2 {
		t.Errorf("%d nodes were without an available pod at once, maxUnavailable is 2", worst)
	}
	if worst == 0 {
		t.Errorf("no node was ever without an available pod: the check saw nothing")
	}
	revs := 0
	for _, r := range c.crs.Store().ByNamespace("default") {
		if r.GetMetadata().GetOwnerReferences()[0].GetName() == "agent" {
			revs++
		}
	}
	if revs != 2 {
		t.Errorf("%d ControllerRevisions, want 2", revs)
	}
}

func (c *cluster) measure(mu *sync.Mutex, watching *bool, worst *int, nodes []string) {
	mu.Lock()
	defer mu.Unlock()
	if !*watching {
		return
	}
	by := c.podsByNode("agent")
	missing := 0
	for _, n := range nodes {
		ok := false
		for _, p := range by[n] {
			ok = ok || simnode.IsReady(p)
		}
		if !ok {
			missing++
		}
	}
	*worst = max(*worst, missing)
}

// TestDaemonSetSurge rolls with maxSurge 1: the new pod comes first, and
// every node keeps an available pod throughout.
func TestDaemonSetSurge(t *testing.T) {
	nodes := []string{"n1", "n2", "n3"}
	c := start(t, nodes...)
	c.create(agentDS("agent", "agent:1", &appsv1.RollingUpdateDaemonSet{
		MaxUnavailable: &metav1.IntOrString{Value: &metav1.IntOrString_IntVal{IntVal: 0}},
		MaxSurge:       &metav1.IntOrString{Value: &metav1.IntOrString_IntVal{IntVal: 1}},
	}))
	c.Await(patience, "one ready pod per node", func() (bool, string) { return c.settled("agent", "agent:1", nodes...) })
	var mu sync.Mutex
	worst, watching := 0, true
	c.Pods().AddHandler(informer.Handler[*corev1.Pod]{
		OnUpdate: func(_, _ *corev1.Pod) { c.measure(&mu, &watching, &worst, nodes) },
		OnDelete: func(*corev1.Pod) { c.measure(&mu, &watching, &worst, nodes) },
	})
	c.setImage("agent", "agent:2")
	c.Await(patience, "agent:2 on every node", func() (bool, string) { return c.settled("agent", "agent:2", nodes...) })
	mu.Lock()
	defer mu.Unlock()
	if worst != 0 {
		t.Errorf("%d nodes were without an available pod at once, maxUnavailable is 0", worst)
	}
}

var _ = proto.Bool

// TestDaemonSetAdoptsOrphans: a pod the selector matches, with no
// controller, is adopted and counts for its node; one that stops matching
// is released.
func TestDaemonSetAdoptsOrphans(t *testing.T) {
	c := start(t, "n1", "n2")
	orphan := &corev1.Pod{
		Metadata: &metav1.ObjectMeta{Name: "orphan", Namespace: "default", Labels: map[string]string{"app": "agent"}},
		Spec:     &corev1.PodSpec{NodeName: "n1", Containers: []*corev1.Container{{Name: "agent", Image: "agent:1"}}},
	}
	if _, err := client.Pods(c.Conn).Create(c.Ctx, orphan); err != nil {
		t.Fatal(err)
	}
	// OnDelete: the adopted pod has no revision label, so a rolling update
	// would replace it (as Kubernetes' does).
	ds := agentDS("agent", "agent:1", nil)
	ds.Spec.UpdateStrategy = &appsv1.DaemonSetUpdateStrategy{Type: "OnDelete"}
	c.create(ds)
	c.Await(patience, "the orphan adopted on n1, a new pod on n2", func() (bool, string) {
		if ok, why := c.settled("agent", "agent:1", "n1", "n2"); !ok {
			return false, why
		}
		p := c.podsByNode("agent")["n1"][0]
		ref := p.GetMetadata().GetOwnerReferences()
		return p.GetMetadata().GetName() == "orphan" && len(ref) == 1 && ref[0].GetKind() == "DaemonSet", fmt.Sprintf("n1 runs %s owned by %v", p.GetMetadata().GetName(), ref)
	})

	err := client.RetryOnConflict(c.Ctx, client.DefaultRetry, func() error {
		p, err := client.Pods(c.Conn).Get(c.Ctx, "default", "orphan")
		if err != nil {
			return err
		}
		p.Metadata.Labels["app"] = "debug"
		_, err = client.Pods(c.Conn).Update(c.Ctx, p)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	c.Await(patience, "the relabelled pod released, a new pod on n1", func() (bool, string) {
		p, ok := c.Pods().Store().GetByName("default", "orphan")
		if !ok || len(p.GetMetadata().GetOwnerReferences()) != 0 {
			return false, "orphan still owned"
		}
		return c.settled("agent", "agent:1", "n1", "n2")
	})
}

// TestDaemonSetOnDelete: with the OnDelete strategy a template change
// replaces no pod; a pod deleted by hand comes back with the new
// template, the others keep the old one.
func TestDaemonSetOnDelete(t *testing.T) {
	nodes := []string{"n1", "n2", "n3"}
	c := start(t, nodes...)
	ds := agentDS("agent", "agent:1", nil)
	ds.Spec.UpdateStrategy = &appsv1.DaemonSetUpdateStrategy{Type: "OnDelete"}
	c.create(ds)
	c.Await(patience, "one ready pod per node", func() (bool, string) { return c.settled("agent", "agent:1", nodes...) })

	c.setImage("agent", "agent:2")
	c.Await(patience, "the change observed, no pod updated", func() (bool, string) {
		st := c.status("agent")
		return st.GetObservedGeneration() == 2 && st.GetUpdatedNumberScheduled() == 0 && st.GetNumberAvailable() == 3, fmt.Sprint(st)
	})
	if ok, why := c.settled("agent", "agent:1", nodes...); !ok {
		t.Fatalf("OnDelete replaced pods on a template change: %s", why)
	}

	old := c.podsByNode("agent")["n1"][0]
	if _, err := client.Pods(c.Conn).Delete(c.Ctx, &metav1.DeleteRequest{Namespace: "default", Name: old.GetMetadata().GetName()}); err != nil {
		t.Fatal(err)
	}
	c.Await(patience, "n1's pod replaced with agent:2, the others kept", func() (bool, string) {
		by := c.podsByNode("agent")
		for _, n := range nodes {
			want := "agent:1"
			if n == "n1" {
				want = "agent:2"
			}
			ps := by[n]
			if len(ps) != 1 || !simnode.IsReady(ps[0]) || ps[0].GetSpec().GetContainers()[0].GetImage() != want {
				return false, fmt.Sprintf("node %s: %d pods, not yet one ready %s", n, len(ps), want)
			}
		}
		return c.status("agent").GetUpdatedNumberScheduled() == 1, fmt.Sprint(c.status("agent"))
	})
}
