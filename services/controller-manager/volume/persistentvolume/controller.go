package persistentvolume

import (
	"context"

	"go.uber.org/zap"

	"skiff.dev/internal/client"
	"skiff.dev/internal/controller"
	"skiff.dev/internal/events"
	"skiff.dev/internal/informer"
	"skiff.dev/internal/workqueue"
	corev1 "skiff.dev/proto/core/v1"
	storagev1 "skiff.dev/proto/storage/v1"
	"skiff.dev/services/controller-manager/manager"
)

// Name is the controller's name in --controllers (Kubernetes':
// persistentvolume-binder).
const Name = "persistentvolume-binder"

// Options configure the controller. Zero values pick the defaults.
type Options struct {
	// Workers sync claims, and as many sync volumes, in parallel
	// (default 1).
	Workers int
}

// indexClaimRef indexes volumes by their claimRef's namespace/name.
const indexClaimRef = "claimRef"

// Controller binds claims to volumes; see the package doc.
type Controller struct {
	claims  *informer.Informer[*corev1.PersistentVolumeClaim]
	volumes *informer.Informer[*corev1.PersistentVolume]
	classes *informer.Informer[*storagev1.StorageClass]
	nodes   *informer.Informer[*corev1.Node]

	claimClient  *client.Resource[*corev1.PersistentVolumeClaim, *corev1.PersistentVolumeClaimList]
	volumeClient *client.Resource[*corev1.PersistentVolume, *corev1.PersistentVolumeList]

	log      *zap.Logger
	recorder events.Recorder
	clock    workqueue.Clock

	claimRunner, volumeRunner *controller.Controller
}

// New builds the controller on mc's shared informers. Call Run.
func New(mc *manager.Context, o Options) *Controller {
	parts := mc.For(Name)
	c := &Controller{
		claims:       informer.For(mc.Informers, client.PersistentVolumeClaims(mc.Conn)),
		volumes:      informer.For(mc.Informers, client.PersistentVolumes(mc.Conn)),
		classes:      informer.For(mc.Informers, client.StorageClasses(mc.Conn)),
		nodes:        informer.For(mc.Informers, client.Nodes(mc.Conn)),
		claimClient:  client.PersistentVolumeClaims(mc.Conn),
		volumeClient: client.PersistentVolumes(mc.Conn),
		log:          parts.Logger,
		recorder:     parts.Recorder,
		clock:        parts.Clock,
	}
	c.claimRunner = parts.Runner(Name+"-claims", o.Workers, controller.ReconcileFunc(c.syncClaim))
	c.volumeRunner = parts.Runner(Name+"-volumes", o.Workers, controller.ReconcileFunc(c.syncVolume))
	c.volumes.AddIndex(indexClaimRef, func(v *corev1.PersistentVolume) []string {
		if ref := v.GetSpec().GetClaimRef(); ref != nil {
			return []string{informer.KeyOf(ref.GetNamespace(), ref.GetName())}
		}
		return nil
	})

	onClaim := func(pvc *corev1.PersistentVolumeClaim) {
		key := informer.Key(pvc)
		c.claimRunner.Enqueue(key)
		if n := pvc.GetSpec().GetVolumeName(); n != "" {
			c.volumeRunner.Enqueue(n)
		}
		for _, v := range c.volumes.Store().ByIndex(indexClaimRef, key) {
			c.volumeRunner.Enqueue(v.GetMetadata().GetName())
		}
	}
	c.claims.AddHandler(informer.Handler[*corev1.PersistentVolumeClaim]{
		OnAdd: onClaim, OnUpdate: func(_, cur *corev1.PersistentVolumeClaim) { onClaim(cur) }, OnDelete: onClaim,
	})
	onVolume := func(v *corev1.PersistentVolume) {
		c.volumeRunner.Enqueue(v.GetMetadata().GetName())
		if ref := v.GetSpec().GetClaimRef(); ref != nil {
			c.claimRunner.Enqueue(informer.KeyOf(ref.GetNamespace(), ref.GetName()))
		} else {
			// A volume that became available may fit a waiting claim.
			c.enqueuePendingClaims()
		}
	}
	c.volumes.AddHandler(informer.Handler[*corev1.PersistentVolume]{
		OnAdd: onVolume, OnUpdate: func(_, cur *corev1.PersistentVolume) { onVolume(cur) }, OnDelete: onVolume,
	})
	// A class made after its claims: they may be provisioned now.
	c.classes.AddHandler(informer.Handler[*storagev1.StorageClass]{
		OnAdd: func(*storagev1.StorageClass) { c.enqueuePendingClaims() },
	})
	return c
}

func (c *Controller) enqueuePendingClaims() {
	for _, pvc := range c.claims.Store().List() {
		if pvc.GetSpec().GetVolumeName() == "" {
			c.claimRunner.Enqueue(informer.Key(pvc))
		}
	}
}

// Run waits for the informers, then syncs claims and volumes until ctx
// ends.
func (c *Controller) Run(ctx context.Context) error {
	if !informer.WaitForSync(ctx, c.claims, c.volumes, c.classes, c.nodes) {
		return nil
	}
	done := make(chan error, 1)
	go func() { done <- c.volumeRunner.Run(ctx) }()
	err := c.claimRunner.Run(ctx)
	if verr := <-done; err == nil {
		err = verr
	}
	return err
}
