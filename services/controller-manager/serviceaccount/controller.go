// Package serviceaccount is Kubernetes' serviceaccounts controller: every
// active namespace has a ServiceAccount "default" (made when the namespace
// appears, made again when deleted), which the apiserver's ServiceAccount
// admission plugin gives pods that name none.
package serviceaccount

import (
	"context"
	"fmt"

	"go.uber.org/zap"

	"skiff.dev/internal/apierrors"
	"skiff.dev/internal/client"
	"skiff.dev/internal/controller"
	"skiff.dev/internal/informer"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/controller-manager/controllerutil"
	"skiff.dev/services/controller-manager/manager"
)

// Name is the controller's name in --controllers (Kubernetes': serviceaccount).
const Name = "serviceaccount"

// Default is the ServiceAccount every namespace has.
const Default = "default"

// Options configure the controller. Zero values pick the defaults.
type Options struct {
	// Workers sync namespaces in parallel (default 1).
	Workers int
}

// Controller makes the default ServiceAccount of every namespace.
type Controller struct {
	namespaces *informer.Informer[*corev1.Namespace]
	accounts   *informer.Informer[*corev1.ServiceAccount]
	client     *client.Resource[*corev1.ServiceAccount, *corev1.ServiceAccountList]
	log        *zap.Logger
	runner     *controller.Controller
}

// New builds the controller on mc's shared namespaces and serviceaccounts
// informers. Call Run.
func New(mc *manager.Context, o Options) *Controller {
	parts := mc.For(Name)
	c := &Controller{
		namespaces: informer.For(mc.Informers, client.Namespaces(mc.Conn)),
		accounts:   informer.For(mc.Informers, client.ServiceAccounts(mc.Conn)),
		client:     client.ServiceAccounts(mc.Conn),
		log:        parts.Logger,
	}
	c.runner = parts.Runner(Name, o.Workers, c)
	c.namespaces.AddHandler(informer.Handler[*corev1.Namespace]{
		OnAdd:    func(ns *corev1.Namespace) { c.runner.Enqueue(ns.GetMetadata().GetName()) },
		OnUpdate: func(_, ns *corev1.Namespace) { c.runner.Enqueue(ns.GetMetadata().GetName()) },
	})
	c.accounts.AddHandler(informer.Handler[*corev1.ServiceAccount]{
		OnDelete: func(sa *corev1.ServiceAccount) {
			if sa.GetMetadata().GetName() == Default {
				c.runner.Enqueue(sa.GetMetadata().GetNamespace())
			}
		},
	})
	return c
}

// Run waits for the informers, then keeps the default accounts until ctx
// ends.
func (c *Controller) Run(ctx context.Context) error {
	if !informer.WaitForSync(ctx, c.namespaces, c.accounts) {
		return nil
	}
	return c.runner.Run(ctx)
}

// Reconcile makes the default ServiceAccount of namespace key if the
// namespace is active and has none.
func (c *Controller) Reconcile(ctx context.Context, key string) (controller.Result, error) {
	ns, ok := c.namespaces.Store().Get(key)
	if !ok || controllerutil.NamespaceTerminating(ns) {
		return controller.Result{}, nil
	}
	if _, ok := c.accounts.Store().GetByName(key, Default); ok {
		return controller.Result{}, nil
	}
	_, err := c.client.Create(ctx, &corev1.ServiceAccount{Metadata: &metav1.ObjectMeta{Namespace: key, Name: Default}})
	switch {
	case err == nil:
		c.log.Debug("made the default service account", zap.String("namespace", key))
		return controller.Result{}, nil
	case apierrors.IsAlreadyExists(err):
		return controller.Result{}, nil
	case apierrors.IsNotFound(err), apierrors.IsForbidden(err):
		// The namespace is gone or terminating: nothing to do.
		return controller.Result{}, nil
	}
	return controller.Result{}, fmt.Errorf("creating serviceaccount %s/%s: %w", key, Default, err)
}
