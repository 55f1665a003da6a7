package replicaset

import (
	"context"
	"sync"

	"go.uber.org/zap"

	"skiff.dev/internal/client"
	"skiff.dev/internal/controller"
	"skiff.dev/internal/events"
	"skiff.dev/internal/informer"
	"skiff.dev/internal/labels"
	"skiff.dev/internal/workqueue"
	appsv1 "skiff.dev/proto/apps/v1"
	corev1 "skiff.dev/proto/core/v1"
	"skiff.dev/services/controller-manager/controllerutil"
	"skiff.dev/services/controller-manager/expectations"
	"skiff.dev/services/controller-manager/manager"
)

// Name is the controller's name in --controllers.
const Name = "replicaset"

// Defaults of Options.
const (
	DefaultWorkers       = 5
	DefaultBurstReplicas = 500
)

// Options configure the controller. Zero values pick the defaults.
type Options struct {
	// Workers is the number of ReplicaSets synced in parallel (default 5).
	Workers int
	// BurstReplicas is the most pods one sync creates or deletes (default
	// 500, as the burstReplicas of Kubernetes' ReplicaSet controller).
	BurstReplicas int
}

// Controller keeps each ReplicaSet's pods at spec.replicas.
type Controller struct {
	opts  Options
	log   *zap.Logger
	rec   events.Recorder
	clock workqueue.Clock

	pods      *informer.Informer[*corev1.Pod]
	rss       *informer.Informer[*appsv1.ReplicaSet]
	podClient *client.Resource[*corev1.Pod, *corev1.PodList]
	rsClient  *client.Resource[*appsv1.ReplicaSet, *appsv1.ReplicaSetList]

	expectations *expectations.Tracker
	queue        *controller.Controller
	bursts       *bursts // the creations in flight

	// selectors caches each ReplicaSet's parsed selector by uid, with the
	// generation it was parsed at (the apiserver keeps a selector
	// immutable; the generation guards the cache anyway).
	selectors sync.Map // uid -> cachedSelector
	// warm holds the uids of ReplicaSets whose last creations all
	// succeeded: their next creations skip the slow start's ramp.
	warm sync.Map
	// verified holds the uids of ReplicaSets whose cache was found to
	// hold every pod they have (see unseenPods); the others are checked
	// before they get more pods.
	verified sync.Map
}

type cachedSelector struct {
	generation int64
	sel        labels.Selector
}

// selectorOf returns rs's selector, parsed once per uid and generation.
func (c *Controller) selectorOf(rs *appsv1.ReplicaSet) (labels.Selector, error) {
	m := rs.GetMetadata()
	if v, ok := c.selectors.Load(m.GetUid()); ok && v.(cachedSelector).generation == m.GetGeneration() {
		return v.(cachedSelector).sel, nil
	}
	sel, err := controllerutil.Selector(rs.GetSpec().GetSelector())
	if err != nil {
		return sel, err
	}
	c.selectors.Store(m.GetUid(), cachedSelector{m.GetGeneration(), sel})
	// The delete handler forgets the selector after the cache dropped the
	// ReplicaSet; if that happened before the Store above, forget it here.
	if cur, ok := c.rss.Store().Get(keyOf(rs)); !ok || cur.GetMetadata().GetUid() != m.GetUid() {
		c.selectors.Delete(m.GetUid())
	}
	return sel, nil
}

// New builds the controller on the shared pods and ReplicaSets informers
// and registers its handlers; the manager starts the informers.
func New(mc *manager.Context, o Options) *Controller {
	return newController(mc, o,
		informer.For(mc.Informers, client.Pods(mc.Conn)),
		informer.For(mc.Informers, client.ReplicaSets(mc.Conn)))
}

// newController builds the controller on the given informers (tests pass a
// pods informer whose events lag).
func newController(mc *manager.Context, o Options, pods *informer.Informer[*corev1.Pod], rss *informer.Informer[*appsv1.ReplicaSet]) *Controller {
	if o.Workers <= 0 {
		o.Workers = DefaultWorkers
	}
	if o.BurstReplicas <= 0 {
		o.BurstReplicas = DefaultBurstReplicas
	}
	parts := mc.For(Name)
	c := &Controller{
		opts:         o,
		log:          parts.Logger,
		rec:          parts.Recorder,
		clock:        parts.Clock,
		pods:         pods,
		rss:          rss,
		podClient:    client.Pods(mc.Conn),
		rsClient:     client.ReplicaSets(mc.Conn),
		expectations: expectations.New(parts.Clock.Now),
	}
	c.queue = parts.Runner(Name, o.Workers, controller.ReconcileFunc(c.Reconcile))
	c.bursts = newBursts(c.queue.Enqueue)
	pods.AddIndex(orphanIndex, orphanNamespace)
	rss.AddHandler(informer.Handler[*appsv1.ReplicaSet]{
		OnAdd:    c.addReplicaSet,
		OnUpdate: c.updateReplicaSet,
		OnDelete: c.deleteReplicaSet,
	})
	pods.AddHandler(informer.Handler[*corev1.Pod]{
		OnAdd:    c.addPod,
		OnUpdate: c.updatePod,
		OnDelete: c.deletePod,
	})
	return c
}

// Run waits for the informers to sync, then syncs ReplicaSets until ctx
// ends, and returns nil once the creations in flight have returned.
func (c *Controller) Run(ctx context.Context) error {
	if !informer.WaitForSync(ctx, c.pods, c.rss) {
		return nil
	}
	defer c.bursts.wait()
	return c.queue.Run(ctx)
}

func keyOf(rs *appsv1.ReplicaSet) string { return informer.Key(rs) }
