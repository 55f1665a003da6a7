package daemonset

import (
	"context"
	"fmt"

	"go.uber.org/zap"

	"skiff.dev/internal/client"
	"skiff.dev/internal/controller"
	"skiff.dev/internal/events"
	"skiff.dev/internal/informer"
	"skiff.dev/internal/workqueue"
	appsv1 "skiff.dev/proto/apps/v1"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/controller-manager/controllerutil"
	"skiff.dev/services/controller-manager/expectations"
	"skiff.dev/services/controller-manager/history"
	"skiff.dev/services/controller-manager/manager"
)

// Name is the controller's name in --controllers.
const Name = "daemonset"

// Options configure the controller.
type Options struct {
	// Workers is the number of DaemonSets synced in parallel
	// (--concurrent-daemonset-syncs, default 2 as Kubernetes').
	Workers int
}

// Controller runs a DaemonSet's pod on each node that admits it.
type Controller struct {
	dses  *informer.Informer[*appsv1.DaemonSet]
	pods  *informer.Informer[*corev1.Pod]
	nodes *informer.Informer[*corev1.Node]
	crs   *informer.Informer[*appsv1.ControllerRevision]

	dsClient  *client.Resource[*appsv1.DaemonSet, *appsv1.DaemonSetList]
	podClient *client.Resource[*corev1.Pod, *corev1.PodList]
	crClient  *client.Resource[*appsv1.ControllerRevision, *appsv1.ControllerRevisionList]
	history   *history.History

	expectations *expectations.Tracker
	failed       *backoff
	recorder     events.Recorder
	log          *zap.Logger
	clock        workqueue.Clock
	queue        *controller.Controller
}

// New builds the controller on mc's shared informers (DaemonSets, pods,
// nodes, ControllerRevisions). Call Run.
func New(mc *manager.Context, o Options) *Controller {
	if o.Workers <= 0 {
		o.Workers = 2
	}
	parts := mc.For(Name)
	c := &Controller{
		dses:      informer.For(mc.Informers, client.DaemonSets(mc.Conn)),
		pods:      informer.For(mc.Informers, client.Pods(mc.Conn)),
		nodes:     informer.For(mc.Informers, client.Nodes(mc.Conn)),
		crs:       informer.For(mc.Informers, client.ControllerRevisions(mc.Conn)),
		dsClient:  client.DaemonSets(mc.Conn),
		podClient: client.Pods(mc.Conn),
		crClient:  client.ControllerRevisions(mc.Conn),
		recorder:  parts.Recorder,
		log:       parts.Logger,
		clock:     parts.Clock,
	}
	c.history = history.New(c.crClient, c.crs)
	c.expectations = expectations.New(c.clock.Now)
	c.failed = newBackoff(c.clock.Now)
	c.queue = parts.Runner(Name, o.Workers, controller.ReconcileFunc(c.reconcile))
	c.dses.AddHandler(informer.Handler[*appsv1.DaemonSet]{
		OnAdd: c.enqueue,
		OnUpdate: func(old, cur *appsv1.DaemonSet) {
			if old.GetMetadata().GetUid() != cur.GetMetadata().GetUid() {
				c.forget(old)
			}
			c.enqueue(cur)
		},
		OnDelete: func(ds *appsv1.DaemonSet) { c.forget(ds); c.enqueue(ds) },
	})
	c.pods.AddHandler(informer.Handler[*corev1.Pod]{OnAdd: c.addPod, OnUpdate: c.updatePod, OnDelete: c.deletePod})
	c.nodes.AddHandler(informer.Handler[*corev1.Node]{
		OnAdd:    func(*corev1.Node) { c.enqueueAll() },
		OnUpdate: c.updateNode,
		OnDelete: func(*corev1.Node) { c.enqueueAll() },
	})
	c.crs.AddHandler(informer.Handler[*appsv1.ControllerRevision]{OnDelete: c.revisionDeleted})
	return c
}

// Run waits for the informers to sync, then syncs DaemonSets until ctx
// ends; it returns nil then.
func (c *Controller) Run(ctx context.Context) error {
	if !informer.WaitForSync(ctx, c.dses, c.pods, c.nodes, c.crs) {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("%s: informers did not sync", Name)
	}
	return c.queue.Run(ctx)
}

func (c *Controller) enqueue(ds *appsv1.DaemonSet) { c.queue.Enqueue(informer.Key(ds)) }

func (c *Controller) enqueueAll() {
	for _, ds := range c.dses.Store().List() {
		c.enqueue(ds)
	}
}

func (c *Controller) forget(ds *appsv1.DaemonSet) {
	c.expectations.Delete(informer.Key(ds))
	c.failed.forget(ds.GetMetadata().GetUid() + "/")
}

// updateNode wakes the DaemonSets when what decides placement changed:
// labels, taints, unschedulable, or the Ready condition (a pod may become
// available).
func (c *Controller) updateNode(old, cur *corev1.Node) {
	if !nodeChanged(old, cur) {
		return
	}
	c.enqueueAll()
}

func nodeChanged(old, cur *corev1.Node) bool {
	if !mapsEqual(old.GetMetadata().GetLabels(), cur.GetMetadata().GetLabels()) ||
		old.GetSpec().GetUnschedulable() != cur.GetSpec().GetUnschedulable() ||
		len(old.GetSpec().GetTaints()) != len(cur.GetSpec().GetTaints()) {
		return true
	}
	for i, t := range old.GetSpec().GetTaints() {
		u := cur.GetSpec().GetTaints()[i]
		if t.GetKey() != u.GetKey() || t.GetValue() != u.GetValue() || t.GetEffect() != u.GetEffect() {
			return true
		}
	}
	return false
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// ownerOf is the DaemonSet controlling m, if it exists with that uid.
func (c *Controller) ownerOf(m *metav1.ObjectMeta) *appsv1.DaemonSet {
	ref := controllerutil.ControllerOf(m)
	if ref == nil || ref.GetKind() != "DaemonSet" {
		return nil
	}
	ds, ok := c.dses.Store().GetByName(m.GetNamespace(), ref.GetName())
	if !ok || ds.GetMetadata().GetUid() != ref.GetUid() {
		return nil
	}
	return ds
}

func (c *Controller) addPod(p *corev1.Pod) {
	if p.GetMetadata().GetDeletionTimestamp() != nil {
		c.deletePod(p)
		return
	}
	if controllerutil.ControllerOf(p.GetMetadata()) == nil {
		c.enqueueMatching(p)
		return
	}
	if ds := c.ownerOf(p.GetMetadata()); ds != nil {
		key := informer.Key(ds)
		c.expectations.CreationObserved(key)
		c.queue.Enqueue(key)
	}
}

func (c *Controller) updatePod(old, cur *corev1.Pod) {
	if oldRef := controllerutil.ControllerOf(old.GetMetadata()); oldRef != nil && oldRef.GetUid() != controllerutil.ControllerOf(cur.GetMetadata()).GetUid() {
		if ds := c.ownerOf(old.GetMetadata()); ds != nil {
			c.enqueue(ds)
		}
	}
	if controllerutil.ControllerOf(cur.GetMetadata()) == nil {
		c.enqueueMatching(cur)
		return
	}
	if ds := c.ownerOf(cur.GetMetadata()); ds != nil {
		key := informer.Key(ds)
		if cur.GetMetadata().GetDeletionTimestamp() != nil {
			c.expectations.DeletionObserved(key, informer.Key(cur))
		}
		c.queue.Enqueue(key)
	}
}

func (c *Controller) deletePod(p *corev1.Pod) {
	if ds := c.ownerOf(p.GetMetadata()); ds != nil {
		key := informer.Key(ds)
		c.expectations.DeletionObserved(key, informer.Key(p))
		c.queue.Enqueue(key)
	}
}

func (c *Controller) revisionDeleted(r *appsv1.ControllerRevision) {
	if ds := c.ownerOf(r.GetMetadata()); ds != nil {
		c.enqueue(ds)
	}
}
