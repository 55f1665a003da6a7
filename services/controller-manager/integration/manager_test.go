package integration

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"
	"google.golang.org/protobuf/proto"

	"skiff.dev/internal/client"
	"skiff.dev/internal/informer"
	appsv1 "skiff.dev/proto/apps/v1"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/controller-manager/app"
	"skiff.dev/services/controller-manager/controllerutil"
	"skiff.dev/services/controller-manager/manager/managertest"
	"skiff.dev/services/controller-manager/simnode"
)

// runningManager is a skiff-controller-manager run in-process.
type runningManager struct {
	once    sync.Once
	cancel  context.CancelFunc
	done    chan error
	metrics string // address of /metrics, /readyz
}

// startManager runs the controller-manager program against env's apiserver.
func startManager(t *testing.T, env *managertest.Env, identity string, leaderElect bool, controllers ...string) *runningManager {
	t.Helper()
	o, err := app.ParseFlags([]string{
		"--server", env.Server.Addr(), "--insecure",
		"--metrics-listen", "127.0.0.1:0",
		"--leader-elect=" + map[bool]string{true: "true", false: "false"}[leaderElect],
		"--leader-elect-identity", identity,
		"--leader-elect-lease-duration", electionLeaseDuration.String(),
		"--leader-elect-renew-deadline", electionRenewDeadline.String(),
		"--leader-elect-retry-period", electionRetryPeriod.String(),
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(controllers) > 0 {
		o.Manager.Controllers = controllers
	}
	log := zap.NewNop()
	if testing.Verbose() {
		log = zaptest.NewLogger(t).Named(identity)
	}
	ctx, cancel := context.WithCancel(context.Background())
	m := &runningManager{cancel: cancel, done: make(chan error, 1)}
	ready := make(chan string, 1)
	go func() { m.done <- app.Run(ctx, o, log, func(addr string) { ready <- addr }) }()
	select {
	case m.metrics = <-ready:
	case err := <-m.done:
		t.Fatalf("controller-manager %s exited at start: %v", identity, err)
	case <-time.After(10 * time.Second):
		t.Fatalf("controller-manager %s did not start", identity)
	}
	t.Cleanup(func() { m.stop(t) })
	return m
}

// stop stops the manager and waits for it (idempotent).
func (m *runningManager) stop(t *testing.T) {
	m.once.Do(func() {
		m.cancel()
		select {
		case err := <-m.done:
			if err != nil {
				t.Errorf("controller-manager exited with %v", err)
			}
		case <-time.After(20 * time.Second):
			t.Error("controller-manager did not stop within 20s")
		}
	})
}

func (m *runningManager) ready() bool {
	resp, err := http.Get("http://" + m.metrics + "/readyz")
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

func leaseHolder(env *managertest.Env) string {
	l, err := client.Leases(env.Conn).Get(env.Ctx, "kube-system", "skiff-controller-manager")
	if err != nil {
		return ""
	}
	return l.GetSpec().GetHolderIdentity()
}

func webTemplate(image string) *corev1.PodTemplateSpec {
	return &corev1.PodTemplateSpec{
		Metadata: &metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
		Spec:     &corev1.PodSpec{Containers: []*corev1.Container{{Name: "web", Image: image}}},
	}
}

// activePods returns the pods of env's cache that count as replicas.
func activePods(env *managertest.Env) []*corev1.Pod {
	var out []*corev1.Pod
	for _, p := range env.Pods().Store().List() {
		if controllerutil.IsPodActive(p) {
			out = append(out, p)
		}
	}
	return out
}

func TestManagersOnlyTheLeaderActs(t *testing.T) {
	env := managertest.Start(t)
	env.SimNode(simnode.Options{})
	env.StartInformers()

	a := startManager(t, env, "cm-a", true)
	env.Await(10*time.Second, "cm-a to lead", func() (bool, string) {
		h := leaseHolder(env)
		return h == "cm-a" && a.ready(), "lease holder " + h
	})
	b := startManager(t, env, "cm-b", true)

	rs := &appsv1.ReplicaSet{
		Metadata: &metav1.ObjectMeta{Namespace: "default", Name: "web"},
		Spec: &appsv1.ReplicaSetSpec{
			Replicas: proto.Int32(3),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: webTemplate("demo:v1"),
		},
	}
	created, err := client.ReplicaSets(env.Conn).Create(env.Ctx, rs)
	if err != nil {
		t.Fatal(err)
	}
	env.Await(20*time.Second, "3 pods", func() (bool, string) {
		n := len(activePods(env))
		return n == 3, managertest.Explain("%d pods", n)
	})
	if b.ready() {
		t.Error("the standby cm-b reports ready (its controllers run) while cm-a leads")
	}
	if h := leaseHolder(env); h != "cm-a" {
		t.Errorf("lease holder = %q, want cm-a", h)
	}

	// The leader stops; the standby takes over within the lease duration
	// (at once here: a leader that stops releases the lease).
	stopped := time.Now()
	a.stop(t)
	env.Await(electionLeaseDuration+5*time.Second, "cm-b to lead", func() (bool, string) {
		h := leaseHolder(env)
		return h == "cm-b" && b.ready(), "lease holder " + h
	})
	t.Logf("cm-b took over %v after cm-a stopped", time.Since(stopped).Round(time.Millisecond))

	err = client.RetryOnConflict(env.Ctx, client.DefaultRetry, func() error {
		cur, err := client.ReplicaSets(env.Conn).Get(env.Ctx, "default", "web")
		if err != nil {
			return err
		}
		cur.Spec.Replicas = proto.Int32(5)
		_, err = client.ReplicaSets(env.Conn).Update(env.Ctx, cur)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	env.Await(20*time.Second, "5 pods under the new leader", func() (bool, string) {
		n := len(activePods(env))
		return n == 5, managertest.Explain("%d pods", n)
	})
	for _, p := range activePods(env) {
		if ref := controllerutil.ControllerOf(p.GetMetadata()); ref.GetUid() != created.GetMetadata().GetUid() {
			t.Errorf("pod %s is controlled by %v, want the ReplicaSet", p.GetMetadata().GetName(), ref)
		}
	}
}

// podCounter follows every pod over a whole test: the most that were active
// at once and how many were ever created.
type podCounter struct {
	mu             sync.Mutex
	active         map[string]bool
	maxActive      int
	created        int
	minAvailable   int
	available      map[string]bool
	trackAvailable bool
	// replicas is every ReplicaSet's spec.replicas; maxReplicas their
	// largest sum. maxSurge bounds that sum (as in Kubernetes); the pods
	// themselves may exceed it for a moment, when an old ReplicaSet's
	// delete lands after the new one's create.
	replicas    map[string]int32
	maxReplicas int32
}

// countReplicaSets tracks the sum of the ReplicaSets' spec.replicas.
func (c *podCounter) countReplicaSets(env *managertest.Env) {
	update := func(rs *appsv1.ReplicaSet, gone bool) {
		c.mu.Lock()
		defer c.mu.Unlock()
		if gone {
			delete(c.replicas, informer.Key(rs))
			return
		}
		c.replicas[informer.Key(rs)] = rs.GetSpec().GetReplicas()
		var sum int32
		for _, n := range c.replicas {
			sum += n
		}
		c.maxReplicas = max(c.maxReplicas, sum)
	}
	informer.For(env.Manager.Informers, client.ReplicaSets(env.Conn)).AddHandler(informer.Handler[*appsv1.ReplicaSet]{
		OnAdd:    func(rs *appsv1.ReplicaSet) { update(rs, false) },
		OnUpdate: func(_, rs *appsv1.ReplicaSet) { update(rs, false) },
		OnDelete: func(rs *appsv1.ReplicaSet) { update(rs, true) },
	})
}

func countPods(env *managertest.Env) *podCounter {
	c := &podCounter{active: map[string]bool{}, available: map[string]bool{}, minAvailable: 1 << 30, replicas: map[string]int32{}}
	update := func(p *corev1.Pod) {
		c.mu.Lock()
		defer c.mu.Unlock()
		key := informer.Key(p)
		c.active[key] = controllerutil.IsPodActive(p)
		c.available[key] = controllerutil.IsPodActive(p) && controllerutil.IsPodReady(p)
		n, a := 0, 0
		for k, on := range c.active {
			if on {
				n++
			}
			if c.available[k] {
				a++
			}
		}
		c.maxActive = max(c.maxActive, n)
		if c.trackAvailable {
			c.minAvailable = min(c.minAvailable, a)
		}
	}
	env.Pods().AddHandler(informer.Handler[*corev1.Pod]{
		OnAdd:    func(p *corev1.Pod) { c.mu.Lock(); c.created++; c.mu.Unlock(); update(p) },
		OnUpdate: func(_, p *corev1.Pod) { update(p) },
		OnDelete: func(p *corev1.Pod) {
			c.mu.Lock()
			delete(c.active, informer.Key(p))
			delete(c.available, informer.Key(p))
			c.mu.Unlock()
		},
	})
	return c
}

func (c *podCounter) startTrackingAvailable() {
	c.mu.Lock()
	c.trackAvailable = true
	c.mu.Unlock()
}

func (c *podCounter) snapshot() (maxActive, created, minAvailable int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.maxActive, c.created, c.minAvailable
}

func TestRestartMidRolloutFinishesWithoutExtraPods(t *testing.T) {
	env := managertest.Start(t)
	node := env.SimNode(simnode.Options{})
	counter := countPods(env)
	counter.countReplicaSets(env)
	env.StartInformers()
	first := startManager(t, env, "cm-1", false, "deployment", "replicaset", "garbagecollector")

	d := &appsv1.Deployment{
		Metadata: &metav1.ObjectMeta{Namespace: "default", Name: "web"},
		Spec: &appsv1.DeploymentSpec{
			Replicas: proto.Int32(4),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: webTemplate("demo:v1"),
			Strategy: &appsv1.DeploymentStrategy{Type: "RollingUpdate", RollingUpdate: &appsv1.RollingUpdateDeployment{
				MaxSurge:       &metav1.IntOrString{Value: &metav1.IntOrString_IntVal{IntVal: 1}},
				MaxUnavailable: &metav1.IntOrString{Value: &metav1.IntOrString_IntVal{IntVal: 0}},
			}},
		},
	}
	deps := client.Deployments(env.Conn)
	if _, err := deps.Create(env.Ctx, d); err != nil {
		t.Fatal(err)
	}
	deployment := func() *appsv1.Deployment {
		cur, _ := informer.For(env.Manager.Informers, deps).Store().GetByName("default", "web")
		return cur
	}
	env.Await(20*time.Second, "4 available replicas of v1", func() (bool, string) {
		st := deployment().GetStatus()
		return st.GetAvailableReplicas() == 4 && st.GetUpdatedReplicas() == 4, managertest.Explain("status %v", st)
	})
	counter.startTrackingAvailable()

	// v2 pods stay unready: the rollout stops after its one surge pod.
	node.SetAccept(func(p *corev1.Pod) bool {
		return p.GetSpec().GetContainers()[0].GetImage() == "demo:v1"
	})
	err := client.RetryOnConflict(env.Ctx, client.DefaultRetry, func() error {
		cur, err := deps.Get(env.Ctx, "default", "web")
		if err != nil {
			return err
		}
		cur.Spec.Template = webTemplate("demo:v2")
		_, err = deps.Update(env.Ctx, cur)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	env.Await(20*time.Second, "the rollout's surge pod", func() (bool, string) {
		n := 0
		for _, p := range activePods(env) {
			if p.GetSpec().GetContainers()[0].GetImage() == "demo:v2" {
				n++
			}
		}
		return n == 1, managertest.Explain("%d v2 pods", n)
	})

	// The controller-manager stops mid-rollout; a new one takes over.
	first.stop(t)
	startManager(t, env, "cm-2", false, "deployment", "replicaset", "garbagecollector")
	node.SetAccept(nil)
	env.Await(30*time.Second, "the rollout to finish", func() (bool, string) {
		cur := deployment()
		st := cur.GetStatus()
		pods := activePods(env)
		v2 := 0
		for _, p := range pods {
			if p.GetSpec().GetContainers()[0].GetImage() == "demo:v2" && controllerutil.IsPodReady(p) {
				v2++
			}
		}
		done := st.GetObservedGeneration() == cur.GetMetadata().GetGeneration() &&
			st.GetUpdatedReplicas() == 4 && st.GetAvailableReplicas() == 4 && st.GetReplicas() == 4 && len(pods) == 4 && v2 == 4
		return done, managertest.Explain("status %v, %d active pods, %d v2 ready", st, len(pods), v2)
	})
	maxActive, created, minAvailable := counter.snapshot()
	counter.mu.Lock()
	maxReplicas := counter.maxReplicas
	counter.mu.Unlock()
	if maxReplicas > 5 {
		t.Errorf("at one moment the ReplicaSets asked for %d pods; replicas 4 + maxSurge 1 allows 5", maxReplicas)
	}
	// A pod more, for a moment, is the old ReplicaSet's delete landing
	// after the new one's create; more would be a pod the restart added.
	if maxActive > 6 {
		t.Errorf("at one moment %d pods were active; replicas 4 + maxSurge 1 allows 5 (6 while a delete lags a create)", maxActive)
	}
	if created != 8 {
		t.Errorf("%d pods were created in all; want 8 (4 of v1, then 4 of v2)", created)
	}
	if minAvailable < 4 {
		t.Errorf("available pods fell to %d during the rollout; maxUnavailable 0 allows no fewer than 4", minAvailable)
	}
}
