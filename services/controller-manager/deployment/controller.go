package deployment

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
	"skiff.dev/services/controller-manager/manager"
)

// Name is the controller's name in --controllers.
const Name = "deployment"

// Options configure the controller.
type Options struct {
	// Workers is the number of Deployments synced in parallel (default 5).
	Workers int
}

// Controller rolls Deployments out through ReplicaSets.
type Controller struct {
	deployments *informer.Informer[*appsv1.Deployment]
	rses        *informer.Informer[*appsv1.ReplicaSet]
	pods        *informer.Informer[*corev1.Pod]

	dClient  *client.Resource[*appsv1.Deployment, *appsv1.DeploymentList]
	rsClient *client.Resource[*appsv1.ReplicaSet, *appsv1.ReplicaSetList]
	recorder events.Recorder
	log      *zap.Logger
	clock    workqueue.Clock
	queue    *controller.Controller
}

// New builds the controller from the manager's shared pieces: it asks the
// shared factory for the Deployment, ReplicaSet and Pod informers and
// registers its handlers. Call Run.
func New(mc *manager.Context, o Options) *Controller {
	if o.Workers <= 0 {
		o.Workers = 5
	}
	parts := mc.For(Name)
	c := &Controller{
		deployments: informer.For(mc.Informers, client.Deployments(mc.Conn)),
		rses:        informer.For(mc.Informers, client.ReplicaSets(mc.Conn)),
		pods:        informer.For(mc.Informers, client.Pods(mc.Conn)),
		dClient:     client.Deployments(mc.Conn),
		rsClient:    client.ReplicaSets(mc.Conn),
		recorder:    parts.Recorder,
		log:         parts.Logger,
		clock:       parts.Clock,
	}
	c.queue = parts.Runner(Name, o.Workers, controller.ReconcileFunc(c.reconcile))
	c.deployments.AddHandler(informer.Handler[*appsv1.Deployment]{
		OnAdd:    c.enqueue,
		OnUpdate: func(_, cur *appsv1.Deployment) { c.enqueue(cur) },
		OnDelete: c.enqueue,
	})
	c.rses.AddHandler(informer.Handler[*appsv1.ReplicaSet]{
		OnAdd:    c.rsChanged,
		OnUpdate: c.rsUpdated,
		OnDelete: c.rsChanged,
	})
	c.pods.AddHandler(informer.Handler[*corev1.Pod]{OnDelete: c.podDeleted})
	return c
}

// Run waits for the informers to sync, then syncs Deployments until ctx
// ends; it returns nil then.
func (c *Controller) Run(ctx context.Context) error {
	if !informer.WaitForSync(ctx, c.deployments, c.rses, c.pods) {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("%s: informers did not sync", Name)
	}
	return c.queue.Run(ctx)
}

func (c *Controller) enqueue(d *appsv1.Deployment) { c.queue.Enqueue(informer.Key(d)) }

// deploymentOf resolves a controllerRef to the Deployment it names, if it
// still exists with that uid.
func (c *Controller) deploymentOf(namespace string, ref *metav1.OwnerReference) (*appsv1.Deployment, bool) {
	if ref == nil || ref.GetKind() != "Deployment" {
		return nil, false
	}
	d, ok := c.deployments.Store().GetByName(namespace, ref.GetName())
	if !ok || d.GetMetadata().GetUid() != ref.GetUid() {
		return nil, false
	}
	return d, true
}

// rsChanged enqueues the Deployment controlling rs or, for an orphan, every
// Deployment that could adopt it.
func (c *Controller) rsChanged(rs *appsv1.ReplicaSet) {
	m := rs.GetMetadata()
	if ref := controllerutil.ControllerOf(m); ref != nil {
		if d, ok := c.deploymentOf(m.GetNamespace(), ref); ok {
			c.enqueue(d)
		}
		return
	}
	for _, d := range c.matchingDeployments(rs) {
		c.enqueue(d)
	}
}

// rsUpdated also tells the former controller of a ReplicaSet that changed
// hands.
func (c *Controller) rsUpdated(old, cur *appsv1.ReplicaSet) {
	oldRef, curRef := controllerutil.ControllerOf(old.GetMetadata()), controllerutil.ControllerOf(cur.GetMetadata())
	if oldRef != nil && oldRef.GetUid() != curRef.GetUid() {
		if d, ok := c.deploymentOf(old.GetMetadata().GetNamespace(), oldRef); ok {
			c.enqueue(d)
		}
	}
	c.rsChanged(cur)
}

// matchingDeployments are the Deployments in rs's namespace whose selector
// matches rs's labels.
func (c *Controller) matchingDeployments(rs *appsv1.ReplicaSet) []*appsv1.Deployment {
	var out []*appsv1.Deployment
	for _, d := range c.deployments.Store().ByNamespace(rs.GetMetadata().GetNamespace()) {
		sel, err := controllerutil.Selector(d.GetSpec().GetSelector())
		if err != nil || sel.Empty() {
			continue
		}
		if sel.Matches(rs.GetMetadata().GetLabels()) {
			out = append(out, d)
		}
	}
	return out
}

// podDeleted wakes a Recreate Deployment waiting for its old pods to go.
func (c *Controller) podDeleted(p *corev1.Pod) {
	m := p.GetMetadata()
	ref := controllerutil.ControllerOf(m)
	if ref == nil || ref.GetKind() != "ReplicaSet" {
		return
	}
	rs, ok := c.rses.Store().GetByName(m.GetNamespace(), ref.GetName())
	if !ok || rs.GetMetadata().GetUid() != ref.GetUid() {
		return
	}
	d, ok := c.deploymentOf(m.GetNamespace(), controllerutil.ControllerOf(rs.GetMetadata()))
	if ok && d.GetSpec().GetStrategy().GetType() == Recreate {
		c.enqueue(d)
	}
}
