package scheduler

import (
	"skiff.dev/internal/client"
	"skiff.dev/internal/informer"
	"skiff.dev/internal/object"
	corev1 "skiff.dev/proto/core/v1"
	storagev1 "skiff.dev/proto/storage/v1"
	"skiff.dev/services/scheduler/config"
	"skiff.dev/services/scheduler/framework"
)

// volumeInformers watch what VolumeBinding decides on: claims, persistent
// volumes and storage classes. Any change to them retries the pods
// VolumeBinding rejected (a claim created or bound, a volume provisioned,
// a class created).
type volumeInformers struct {
	claims  *informer.Informer[*corev1.PersistentVolumeClaim]
	volumes *informer.Informer[*corev1.PersistentVolume]
	classes *informer.Informer[*storagev1.StorageClass]
}

var _ framework.VolumeLister = (*volumeInformers)(nil)

func newVolumeInformers(s *Scheduler, o informer.Options) *volumeInformers {
	v := &volumeInformers{
		claims:  informer.New(informer.FromClient(client.PersistentVolumeClaims(s.conn)), o),
		volumes: informer.New(informer.FromClient(client.PersistentVolumes(s.conn)), o),
		classes: informer.New(informer.FromClient(client.StorageClasses(s.conn)), o),
	}
	v.claims.AddHandler(retryOn[*corev1.PersistentVolumeClaim](s, "PersistentVolumeClaim"))
	v.volumes.AddHandler(retryOn[*corev1.PersistentVolume](s, "PersistentVolume"))
	v.classes.AddHandler(retryOn[*storagev1.StorageClass](s, "StorageClass"))
	return v
}

// retryOn moves the pods VolumeBinding rejected back to be tried on any
// add or update of a kind (a delete helps no pod).
func retryOn[T object.Object](s *Scheduler, kind string) informer.Handler[T] {
	return informer.Handler[T]{
		OnAdd:    func(T) { s.queue.MoveRejectedBy(config.VolumeBinding, kind+"Add") },
		OnUpdate: func(_, _ T) { s.queue.MoveRejectedBy(config.VolumeBinding, kind+"Update") },
	}
}

// Claim implements framework.VolumeLister.
func (v *volumeInformers) Claim(namespace, name string) (*corev1.PersistentVolumeClaim, bool) {
	return v.claims.Store().GetByName(namespace, name)
}

// Volume implements framework.VolumeLister.
func (v *volumeInformers) Volume(name string) (*corev1.PersistentVolume, bool) {
	return v.volumes.Store().Get(name)
}

// StorageClass implements framework.VolumeLister.
func (v *volumeInformers) StorageClass(name string) (*storagev1.StorageClass, bool) {
	return v.classes.Store().Get(name)
}
