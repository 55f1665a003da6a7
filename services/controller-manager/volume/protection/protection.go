package protection

import (
	"context"
	"fmt"
	"slices"

	"go.uber.org/zap"
	"google.golang.org/protobuf/proto"

	"skiff.dev/internal/apierrors"
	"skiff.dev/internal/client"
	"skiff.dev/internal/controller"
	"skiff.dev/internal/informer"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/controller-manager/manager"
)

// The controllers' names in --controllers (Kubernetes').
const (
	PVCName = "pvc-protection"
	PVName  = "pv-protection"
)

// The finalizers (the same as the admission plugin's).
const (
	PVCFinalizer = "kubernetes.io/pvc-protection"
	PVFinalizer  = "kubernetes.io/pv-protection"
)

// Options configure either controller. Zero values pick the defaults.
type Options struct {
	// Workers sync objects in parallel (default 1).
	Workers int
}

// indexClaims indexes pods by the namespace/name of the claims their
// volumes name.
const indexClaims = "pvcs"

// PodUsesClaim says whether pod holds claim name of its namespace: it is
// scheduled, not terminated, and one of its volumes names the claim.
func PodUsesClaim(pod *corev1.Pod, name string) bool {
	if pod.GetSpec().GetNodeName() == "" {
		return false // the node agent will not start a pod on a claim being deleted
	}
	if ph := pod.GetStatus().GetPhase(); ph == "Succeeded" || ph == "Failed" {
		return false
	}
	return slices.ContainsFunc(pod.GetSpec().GetVolumes(), func(v *corev1.Volume) bool {
		return v.GetPersistentVolumeClaim().GetClaimName() == name
	})
}

// ClaimInUse says whether any of pods (of the claim's namespace) uses it.
func ClaimInUse(pvc *corev1.PersistentVolumeClaim, pods []*corev1.Pod) bool {
	return slices.ContainsFunc(pods, func(p *corev1.Pod) bool {
		return p.GetMetadata().GetNamespace() == pvc.GetMetadata().GetNamespace() && PodUsesClaim(p, pvc.GetMetadata().GetName())
	})
}

// VolumeInUse says whether a volume still serves a claim: it is Bound.
func VolumeInUse(pv *corev1.PersistentVolume) bool {
	return pv.GetStatus().GetPhase() == "Bound"
}

// PVCController removes kubernetes.io/pvc-protection from deleted claims
// that no pod uses.
type PVCController struct {
	claims *informer.Informer[*corev1.PersistentVolumeClaim]
	pods   *informer.Informer[*corev1.Pod]
	client *client.Resource[*corev1.PersistentVolumeClaim, *corev1.PersistentVolumeClaimList]
	podAPI *client.Resource[*corev1.Pod, *corev1.PodList]
	log    *zap.Logger
	runner *controller.Controller
}

// NewPVCProtection builds the pvc-protection controller on mc's shared
// informers. Call Run.
func NewPVCProtection(mc *manager.Context, o Options) *PVCController {
	parts := mc.For(PVCName)
	c := &PVCController{
		claims: informer.For(mc.Informers, client.PersistentVolumeClaims(mc.Conn)),
		pods:   informer.For(mc.Informers, client.Pods(mc.Conn)),
		client: client.PersistentVolumeClaims(mc.Conn),
		podAPI: client.Pods(mc.Conn),
		log:    parts.Logger,
	}
	c.runner = parts.Runner(PVCName, o.Workers, c)
	c.pods.AddIndex(indexClaims, func(p *corev1.Pod) []string {
		var keys []string
		for _, v := range p.GetSpec().GetVolumes() {
			if n := v.GetPersistentVolumeClaim().GetClaimName(); n != "" {
				keys = append(keys, informer.KeyOf(p.GetMetadata().GetNamespace(), n))
			}
		}
		return keys
	})
	enqueueClaim := func(pvc *corev1.PersistentVolumeClaim) { c.runner.Enqueue(informer.Key(pvc)) }
	c.claims.AddHandler(informer.Handler[*corev1.PersistentVolumeClaim]{
		OnAdd: enqueueClaim, OnUpdate: func(_, cur *corev1.PersistentVolumeClaim) { enqueueClaim(cur) },
	})
	podChanged := func(p *corev1.Pod) {
		for _, v := range p.GetSpec().GetVolumes() {
			if n := v.GetPersistentVolumeClaim().GetClaimName(); n != "" {
				c.runner.Enqueue(informer.KeyOf(p.GetMetadata().GetNamespace(), n))
			}
		}
	}
	c.pods.AddHandler(informer.Handler[*corev1.Pod]{
		OnUpdate: func(_, cur *corev1.Pod) { podChanged(cur) }, OnDelete: podChanged,
	})
	return c
}

// Run waits for the informers, then syncs claims until ctx ends.
func (c *PVCController) Run(ctx context.Context) error {
	if !informer.WaitForSync(ctx, c.claims, c.pods) {
		return nil
	}
	return c.runner.Run(ctx)
}

// Reconcile adds the finalizer to a live claim that lacks it, and removes it
// from a deleted claim no pod uses.
func (c *PVCController) Reconcile(ctx context.Context, key string) (controller.Result, error) {
	ns, name, err := controller.SplitKey(key)
	if err != nil {
		return controller.Result{}, controller.Terminal(err)
	}
	pvc, ok := c.claims.Store().GetByName(ns, name)
	if !ok {
		return controller.Result{}, nil
	}
	m := pvc.GetMetadata()
	has := slices.Contains(m.GetFinalizers(), PVCFinalizer)
	if m.GetDeletionTimestamp() == nil {
		if has {
			return controller.Result{}, nil
		}
		return controller.Result{}, c.update(ctx, pvc, func(m *metav1.ObjectMeta) { m.Finalizers = append(m.Finalizers, PVCFinalizer) })
	}
	if !has {
		return controller.Result{}, nil
	}
	if ClaimInUse(pvc, c.pods.Store().ByIndex(indexClaims, key)) {
		return controller.Result{}, nil // the pod's deletion enqueues the claim again
	}
	// The cache may not have a pod made a moment ago: ask the API before
	// letting the claim go.
	pods, err := c.podAPI.List(ctx, &metav1.ListOptions{Namespace: ns})
	if err != nil {
		return controller.Result{}, fmt.Errorf("listing pods of %s: %w", ns, err)
	}
	if ClaimInUse(pvc, pods.GetItems()) {
		return controller.Result{}, nil
	}
	c.log.Debug("claim no longer in use: removing its finalizer", zap.String("claim", key))
	return controller.Result{}, c.update(ctx, pvc, func(m *metav1.ObjectMeta) { m.Finalizers = without(m.Finalizers, PVCFinalizer) })
}

func (c *PVCController) update(ctx context.Context, pvc *corev1.PersistentVolumeClaim, change func(*metav1.ObjectMeta)) error {
	next := proto.Clone(pvc).(*corev1.PersistentVolumeClaim)
	change(next.Metadata)
	if _, err := c.client.Update(ctx, next); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("claim %s finalizers: %w", informer.Key(pvc), err)
	}
	return nil
}

// PVController removes kubernetes.io/pv-protection from deleted volumes
// that are not Bound.
type PVController struct {
	volumes *informer.Informer[*corev1.PersistentVolume]
	client  *client.Resource[*corev1.PersistentVolume, *corev1.PersistentVolumeList]
	runner  *controller.Controller
}

// NewPVProtection builds the pv-protection controller on mc's shared
// informers. Call Run.
func NewPVProtection(mc *manager.Context, o Options) *PVController {
	parts := mc.For(PVName)
	c := &PVController{
		volumes: informer.For(mc.Informers, client.PersistentVolumes(mc.Conn)),
		client:  client.PersistentVolumes(mc.Conn),
	}
	c.runner = parts.Runner(PVName, o.Workers, c)
	enqueue := func(pv *corev1.PersistentVolume) { c.runner.Enqueue(pv.GetMetadata().GetName()) }
	c.volumes.AddHandler(informer.Handler[*corev1.PersistentVolume]{
		OnAdd: enqueue, OnUpdate: func(_, cur *corev1.PersistentVolume) { enqueue(cur) },
	})
	return c
}

// Run waits for the informer, then syncs volumes until ctx ends.
func (c *PVController) Run(ctx context.Context) error {
	if !informer.WaitForSync(ctx, c.volumes) {
		return nil
	}
	return c.runner.Run(ctx)
}

// Reconcile adds the finalizer to a live volume that lacks it, and removes
// it from a deleted volume that is not Bound.
func (c *PVController) Reconcile(ctx context.Context, key string) (controller.Result, error) {
	pv, ok := c.volumes.Store().Get(key)
	if !ok {
		return controller.Result{}, nil
	}
	m := pv.GetMetadata()
	has := slices.Contains(m.GetFinalizers(), PVFinalizer)
	var change func(*metav1.ObjectMeta)
	switch {
	case m.GetDeletionTimestamp() == nil && !has:
		change = func(m *metav1.ObjectMeta) { m.Finalizers = append(m.Finalizers, PVFinalizer) }
	case m.GetDeletionTimestamp() != nil && has && !VolumeInUse(pv):
		change = func(m *metav1.ObjectMeta) { m.Finalizers = without(m.Finalizers, PVFinalizer) }
	default:
		return controller.Result{}, nil
	}
	next := proto.Clone(pv).(*corev1.PersistentVolume)
	change(next.Metadata)
	if _, err := c.client.Update(ctx, next); err != nil && !apierrors.IsNotFound(err) {
		return controller.Result{}, fmt.Errorf("volume %s finalizers: %w", key, err)
	}
	return controller.Result{}, nil
}

func without(list []string, s string) []string {
	return slices.DeleteFunc(slices.Clone(list), func(x string) bool { return x == s })
}
