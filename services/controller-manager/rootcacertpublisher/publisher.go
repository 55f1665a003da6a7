// Package rootcacertpublisher is Kubernetes' root-ca-cert-publisher: every
// active namespace has the ConfigMap kube-root-ca.crt whose key ca.crt is
// the cluster CA bundle (the one that verifies the apiserver's serving
// certificate), made when the namespace appears, made again when deleted
// and put right when changed. Pods read it through the projected volume
// the ServiceAccount admission plugin mounts
// (/var/run/secrets/kubernetes.io/serviceaccount/ca.crt).
package rootcacertpublisher

import (
	"context"
	"errors"
	"fmt"
	"maps"

	"go.uber.org/zap"
	"google.golang.org/protobuf/proto"

	"skiff.dev/internal/apierrors"
	"skiff.dev/internal/client"
	"skiff.dev/internal/controller"
	"skiff.dev/internal/informer"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/controller-manager/controllerutil"
	"skiff.dev/services/controller-manager/manager"
)

// Name is the controller's name in --controllers (Kubernetes').
const Name = "root-ca-cert-publisher"

// The ConfigMap, its key and its annotation, as Kubernetes'.
const (
	ConfigMapName         = "kube-root-ca.crt"
	Key                   = "ca.crt"
	DescriptionAnnotation = "kubernetes.io/description"
	Description           = "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. " +
		"No other usage is guaranteed across distributions of Kubernetes clusters."
)

// Options configure the controller.
type Options struct {
	// RootCA is the CA bundle (PEM) to publish: required.
	RootCA []byte
	// Workers sync namespaces in parallel (default 1).
	Workers int
}

// Publisher keeps kube-root-ca.crt in every namespace.
type Publisher struct {
	rootCA     string
	namespaces *informer.Informer[*corev1.Namespace]
	configMaps *informer.Informer[*corev1.ConfigMap] // kube-root-ca.crt only
	client     *client.Resource[*corev1.ConfigMap, *corev1.ConfigMapList]
	log        *zap.Logger
	runner     *controller.Controller
}

// New builds the publisher on mc's shared namespaces informer and an
// informer of the ConfigMaps named kube-root-ca.crt. Call Run.
func New(mc *manager.Context, o Options) (*Publisher, error) {
	if len(o.RootCA) == 0 {
		return nil, errors.New("root-ca-cert-publisher: no CA bundle to publish (--root-ca-file, else --tls-ca-file)")
	}
	parts := mc.For(Name)
	cms := client.ConfigMaps(mc.Conn)
	p := &Publisher{
		rootCA:     string(o.RootCA),
		namespaces: informer.For(mc.Informers, client.Namespaces(mc.Conn)),
		configMaps: informer.New(informer.FromClient(cms), informer.Options{Logger: parts.Logger,
			ListOptions: &metav1.ListOptions{FieldSelector: "metadata.name=" + ConfigMapName}}),
		client: cms,
		log:    parts.Logger,
	}
	p.runner = parts.Runner(Name, o.Workers, p)
	p.namespaces.AddHandler(informer.Handler[*corev1.Namespace]{
		OnAdd:    func(ns *corev1.Namespace) { p.runner.Enqueue(ns.GetMetadata().GetName()) },
		OnUpdate: func(_, ns *corev1.Namespace) { p.runner.Enqueue(ns.GetMetadata().GetName()) },
	})
	enqueue := func(cm *corev1.ConfigMap) { p.runner.Enqueue(cm.GetMetadata().GetNamespace()) }
	p.configMaps.AddHandler(informer.Handler[*corev1.ConfigMap]{
		OnUpdate: func(_, cm *corev1.ConfigMap) { enqueue(cm) },
		OnDelete: enqueue,
	})
	return p, nil
}

// Run runs its ConfigMap informer, waits for the informers, then keeps
// the ConfigMaps until ctx ends.
func (p *Publisher) Run(ctx context.Context) error {
	done := make(chan struct{})
	go func() {
		defer close(done)
		p.configMaps.Run(ctx)
	}()
	defer func() { <-done }()
	if !informer.WaitForSync(ctx, p.namespaces, p.configMaps) {
		return nil
	}
	return p.runner.Run(ctx)
}

// Reconcile makes or puts right kube-root-ca.crt of namespace key.
func (p *Publisher) Reconcile(ctx context.Context, key string) (controller.Result, error) {
	ns, ok := p.namespaces.Store().Get(key)
	if !ok || controllerutil.NamespaceTerminating(ns) {
		return controller.Result{}, nil
	}
	want := map[string]string{Key: p.rootCA}
	cm, ok := p.configMaps.Store().GetByName(key, ConfigMapName)
	if !ok {
		_, err := p.client.Create(ctx, &corev1.ConfigMap{
			Metadata: &metav1.ObjectMeta{Namespace: key, Name: ConfigMapName, Annotations: map[string]string{DescriptionAnnotation: Description}},
			Data:     want,
		})
		switch {
		case err == nil, apierrors.IsAlreadyExists(err): // the informer will tell
			return controller.Result{}, nil
		case apierrors.IsNotFound(err), apierrors.IsForbidden(err): // the namespace is gone or terminating
			return controller.Result{}, nil
		}
		return controller.Result{}, fmt.Errorf("creating configmap %s/%s: %w", key, ConfigMapName, err)
	}
	if maps.Equal(cm.GetData(), want) && len(cm.GetBinaryData()) == 0 && cm.GetMetadata().GetAnnotations()[DescriptionAnnotation] != "" {
		return controller.Result{}, nil
	}
	fixed := proto.Clone(cm).(*corev1.ConfigMap) // the informer's copy is shared
	fixed.Data, fixed.BinaryData = want, nil
	if fixed.Metadata.Annotations == nil {
		fixed.Metadata.Annotations = map[string]string{}
	}
	fixed.Metadata.Annotations[DescriptionAnnotation] = Description
	if _, err := p.client.Update(ctx, fixed); err != nil {
		if apierrors.IsNotFound(err) {
			return controller.Result{}, nil // deleted meanwhile: its delete event queues a create
		}
		return controller.Result{}, fmt.Errorf("updating configmap %s/%s: %w", key, ConfigMapName, err)
	}
	p.log.Info("put kube-root-ca.crt right", zap.String("namespace", key))
	return controller.Result{}, nil
}
