package namespace

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"go.uber.org/zap"
	"google.golang.org/protobuf/proto"

	"skiff.dev/internal/apierrors"
	"skiff.dev/internal/client"
	"skiff.dev/internal/controller"
	"skiff.dev/internal/events"
	"skiff.dev/internal/informer"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/controller-manager/dynamic"
	"skiff.dev/services/controller-manager/manager"
)

// Name is the controller's name in --controllers.
const Name = "namespace"

// Finalizer is the controller's entry in a Namespace's spec.finalizers.
const Finalizer = "kubernetes"

// ReasonDeletionFailed is the Warning event of a namespace whose content
// could not be deleted.
const ReasonDeletionFailed = "NamespaceDeletionContentFailure"

// DefaultRecheck is how soon a namespace with content left (being deleted
// gracefully, or held by finalizers) is looked at again.
const DefaultRecheck = 2 * time.Second

// Options configure the controller. Zero values pick the defaults.
type Options struct {
	// Workers finalize namespaces in parallel (default 1).
	Workers int
	// Recheck is how soon a namespace with content left is looked at again
	// (default DefaultRecheck).
	Recheck time.Duration
}

// Controller empties deleted namespaces; see the package documentation.
type Controller struct {
	namespaces *informer.Informer[*corev1.Namespace]
	client     *client.Resource[*corev1.Namespace, *corev1.NamespaceList]
	dyn        *dynamic.Client
	recorder   events.Recorder
	log        *zap.Logger
	recheck    time.Duration
	runner     *controller.Controller
}

// New builds the controller on mc's shared namespaces informer. Call Run.
func New(mc *manager.Context, o Options) *Controller {
	parts := mc.For(Name)
	c := &Controller{
		namespaces: informer.For(mc.Informers, client.Namespaces(mc.Conn)),
		client:     client.Namespaces(mc.Conn),
		dyn:        dynamic.New(mc.Conn),
		recorder:   parts.Recorder,
		log:        parts.Logger,
		recheck:    o.Recheck,
	}
	if c.recheck <= 0 {
		c.recheck = DefaultRecheck
	}
	c.runner = parts.Runner(Name, o.Workers, c)
	enqueue := func(ns *corev1.Namespace) {
		if ns.GetMetadata().GetDeletionTimestamp() != nil {
			c.runner.Enqueue(ns.GetMetadata().GetName())
		}
	}
	c.namespaces.AddHandler(informer.Handler[*corev1.Namespace]{
		OnAdd:    enqueue,
		OnUpdate: func(_, cur *corev1.Namespace) { enqueue(cur) },
	})
	return c
}

// Run waits for the namespaces informer, then finalizes deleted namespaces
// until ctx ends.
func (c *Controller) Run(ctx context.Context) error {
	if !informer.WaitForSync(ctx, c.namespaces) {
		return nil
	}
	return c.runner.Run(ctx)
}

// Reconcile empties the namespace named key if it is being deleted.
func (c *Controller) Reconcile(ctx context.Context, key string) (controller.Result, error) {
	ns, ok := c.namespaces.Store().Get(key)
	if !ok || ns.GetMetadata().GetDeletionTimestamp() == nil || !slices.Contains(ns.GetSpec().GetFinalizers(), Finalizer) {
		return controller.Result{}, nil
	}
	resources, err := c.namespacedResources(ctx)
	if err != nil {
		return controller.Result{}, err
	}
	if err := c.deleteContent(ctx, ns, resources); err != nil {
		c.recorder.Event(ns, events.EventTypeWarning, ReasonDeletionFailed, err.Error())
		return controller.Result{}, err
	}
	left, err := c.remaining(ctx, key, resources)
	if err != nil {
		return controller.Result{}, err
	}
	if len(left) > 0 {
		c.log.Debug("namespace content left", zap.String("namespace", key), zap.Strings("objects", left))
		return controller.Result{RequeueAfter: c.recheck}, nil
	}
	return controller.Result{}, c.finalize(ctx, ns)
}

// namespacedResources are the resources to empty: namespaced, with list
// and delete.
func (c *Controller) namespacedResources(ctx context.Context) ([]dynamic.Resource, error) {
	all, err := c.dyn.Resources(ctx)
	if err != nil {
		return nil, err
	}
	var out []dynamic.Resource
	for _, r := range all {
		if r.Namespaced && r.Supports("list") && r.Supports("delete") {
			out = append(out, r)
		}
	}
	return out, nil
}

// deleteContent deletes every object in the namespace not yet being deleted.
func (c *Controller) deleteContent(ctx context.Context, ns *corev1.Namespace, resources []dynamic.Resource) error {
	name := ns.GetMetadata().GetName()
	var errs []string
	for _, r := range resources {
		objs, err := c.dyn.List(ctx, r, name)
		if err != nil {
			errs = append(errs, err.Error())
			continue
		}
		for _, obj := range objs {
			m := obj.GetMetadata()
			if m.GetDeletionTimestamp() != nil {
				continue
			}
			err := c.dyn.Delete(ctx, r, &metav1.DeleteRequest{Namespace: name, Name: m.GetName(),
				Preconditions: &metav1.Preconditions{Uid: m.GetUid()}, PropagationPolicy: "Background"})
			if err != nil && !apierrors.IsConflict(err) { // Conflict: replaced meanwhile; the next pass sees it
				errs = append(errs, err.Error())
			}
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("namespace %s: %s", name, strings.Join(errs, "; "))
	}
	return nil
}

// remaining names what is still in the namespace ("pods/web-1").
func (c *Controller) remaining(ctx context.Context, ns string, resources []dynamic.Resource) ([]string, error) {
	var left []string
	for _, r := range resources {
		objs, err := c.dyn.List(ctx, r, ns)
		if err != nil {
			return nil, err
		}
		for _, obj := range objs {
			left = append(left, r.GroupResource()+"/"+obj.GetMetadata().GetName())
		}
	}
	return left, nil
}

// finalize removes the controller's finalizer; the apiserver then deletes
// the namespace (when no other finalizer is left).
func (c *Controller) finalize(ctx context.Context, ns *corev1.Namespace) error {
	next := proto.Clone(ns).(*corev1.Namespace)
	next.Spec.Finalizers = slices.DeleteFunc(next.Spec.Finalizers, func(f string) bool { return f == Finalizer })
	_, err := c.client.Update(ctx, next)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("namespace %s: removing finalizer %s: %w", ns.GetMetadata().GetName(), Finalizer, err)
	}
	c.log.Info("namespace emptied and finalized", zap.String("namespace", ns.GetMetadata().GetName()))
	return nil
}
