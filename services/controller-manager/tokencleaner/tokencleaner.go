// Package tokencleaner is the token cleaner of skiff-controller-manager,
// as Kubernetes' pkg/controller/bootstrap TokenCleaner: it deletes a
// bootstrap token's Secret (kube-system, type
// bootstrap.kubernetes.io/token) once the token's expiration has passed,
// so that `skiff-apiserver token list` and the Secrets do not keep dead
// tokens. An expired token authenticates nobody before it is deleted
// (authn checks the expiration itself); this controller only tidies.
package tokencleaner

import (
	"context"
	"fmt"
	"time"

	"go.uber.org/zap"

	"skiff.dev/internal/apierrors"
	"skiff.dev/internal/bootstraptoken"
	"skiff.dev/internal/client"
	"skiff.dev/internal/controller"
	"skiff.dev/internal/informer"
	"skiff.dev/internal/workqueue"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/controller-manager/manager"
)

// Name is the controller's name in --controllers.
const Name = "tokencleaner"

// Controller deletes the Secrets of expired bootstrap tokens.
type Controller struct {
	log     *zap.Logger
	clock   workqueue.Clock
	secrets *informer.Informer[*corev1.Secret]
	client  *client.Resource[*corev1.Secret, *corev1.SecretList]
	queue   *controller.Controller
}

// New builds the controller on the shared Secrets informer.
func New(mc *manager.Context) *Controller {
	parts := mc.For(Name)
	c := &Controller{
		log:     parts.Logger,
		clock:   parts.Clock,
		secrets: informer.For(mc.Informers, client.Secrets(mc.Conn)),
		client:  client.Secrets(mc.Conn),
	}
	c.queue = parts.Runner(Name, 1, controller.ReconcileFunc(c.Reconcile))
	enqueue := func(s *corev1.Secret) {
		if _, ok := expiration(s); ok {
			c.queue.Enqueue(informer.Key(s))
		}
	}
	c.secrets.AddHandler(informer.Handler[*corev1.Secret]{OnAdd: enqueue, OnUpdate: func(_, s *corev1.Secret) { enqueue(s) }})
	return c
}

// Run waits for the informer, then works until ctx ends.
func (c *Controller) Run(ctx context.Context) error {
	if !informer.WaitForSync(ctx, c.secrets) {
		return nil
	}
	return c.queue.Run(ctx)
}

// Reconcile deletes the Secret key if its token has expired, or looks
// again when it will.
func (c *Controller) Reconcile(ctx context.Context, key string) (controller.Result, error) {
	ns, name, err := controller.SplitKey(key)
	if err != nil {
		return controller.Result{}, controller.Terminal(err)
	}
	s, ok := c.secrets.Store().GetByName(ns, name)
	if !ok {
		return controller.Result{}, nil
	}
	at, ok := expiration(s)
	if !ok {
		return controller.Result{}, nil
	}
	if left := at.Sub(c.clock.Now()); left > 0 {
		return controller.Result{RequeueAfter: left}, nil
	}
	// The uid precondition: a token of the same id made again after this
	// one expired is not deleted on this one's account.
	_, err = c.client.Delete(ctx, &metav1.DeleteRequest{
		Namespace: ns, Name: name,
		Preconditions: &metav1.Preconditions{Uid: s.GetMetadata().GetUid()},
	})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return controller.Result{}, nil
	}
	if err != nil {
		return controller.Result{}, fmt.Errorf("delete expired bootstrap token %s: %w", key, err)
	}
	// The token's id is in the name; its secret is never logged.
	c.log.Info("deleted an expired bootstrap token", zap.String("secret", key), zap.Time("expired", at))
	return controller.Result{}, nil
}

// expiration is when s's token expires, if s is a bootstrap token's
// Secret with an expiration and not being deleted.
func expiration(s *corev1.Secret) (time.Time, bool) {
	if s.GetMetadata().GetNamespace() != bootstraptoken.Namespace || s.GetType() != bootstraptoken.SecretType ||
		s.GetMetadata().GetDeletionTimestamp() != nil {
		return time.Time{}, false
	}
	return bootstraptoken.Expiration(s)
}
