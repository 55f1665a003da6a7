package admission

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"skiff.dev/internal/apierrors"
	"skiff.dev/internal/client"
	"skiff.dev/internal/storageclass"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	storagev1 "skiff.dev/proto/storage/v1"
)

// The storage plugins' flag names.
const (
	DefaultStorageClassName          = "DefaultStorageClass"
	StorageObjectInUseProtectionName = "StorageObjectInUseProtection"
)

// The annotations that make a StorageClass the default (the beta one is
// still honoured, as Kubernetes does).
const (
	IsDefaultStorageClassAnnotation     = "storageclass.kubernetes.io/is-default-class"
	BetaIsDefaultStorageClassAnnotation = "storageclass.beta.kubernetes.io/is-default-class"
	// BetaStorageClassAnnotation is the claim's class before
	// spec.storageClassName existed; a claim with it keeps it.
	BetaStorageClassAnnotation = "volume.beta.kubernetes.io/storage-class"
)

// The finalizers StorageObjectInUseProtection adds, which the
// controller-manager's pvc-protection and pv-protection controllers remove
// once the object is no longer in use.
const (
	PVCProtectionFinalizer = "kubernetes.io/pvc-protection"
	PVProtectionFinalizer  = "kubernetes.io/pv-protection"
)

// IsDefaultClass says whether sc is marked as the default class.
func IsDefaultClass(sc *storagev1.StorageClass) bool { return storageclass.IsDefault(sc) }

// DefaultClass picks the default StorageClass among classes: of those
// marked default, the newest (then the first by name), as Kubernetes ≥1.26
// does when more than one is marked; nil when none is.
func DefaultClass(classes []*storagev1.StorageClass) *storagev1.StorageClass {
	var best *storagev1.StorageClass
	for _, sc := range classes {
		if !IsDefaultClass(sc) {
			continue
		}
		if best == nil || newerClass(sc, best) {
			best = sc
		}
	}
	return best
}

func newerClass(a, b *storagev1.StorageClass) bool {
	ta, tb := a.GetMetadata().GetCreationTimestamp().AsTime(), b.GetMetadata().GetCreationTimestamp().AsTime()
	if c := ta.Compare(tb); c != 0 {
		return c > 0
	}
	return cmp.Less(a.GetMetadata().GetName(), b.GetMetadata().GetName())
}

// defaultStorageClass gives a claim created without storageClassName the
// default class's name. A claim that says "" asks for no class and keeps
// it; with no default class the claim stays unset (the binder's retroactive
// default, or a class made later, may set it then).
type defaultStorageClass struct {
	client *client.Resource[*storagev1.StorageClass, *storagev1.StorageClassList]
}

func newDefaultStorageClass(d *Deps) (any, error) {
	return &defaultStorageClass{client: client.StorageClasses(d.Loopback)}, nil
}

func (p *defaultStorageClass) Admit(ctx context.Context, a *Attributes) error {
	if a.Operation != Create || !a.resourceIs("", "persistentvolumeclaims") {
		return nil
	}
	pvc, ok := a.Object.(*corev1.PersistentVolumeClaim)
	if !ok {
		return nil
	}
	if pvc.GetSpec().StorageClassName != nil {
		return nil
	}
	if _, ok := pvc.GetMetadata().GetAnnotations()[BetaStorageClassAnnotation]; ok {
		return nil
	}
	// Read from the API, not a cache: a default class made a moment ago
	// (a manifest applying a class and a claim together) must count, and
	// claims without a class are few, against a handful of classes.
	list, err := p.client.List(ctx, &metav1.ListOptions{})
	if err != nil {
		return apierrors.NewInternal(fmt.Errorf("%s: listing storageclasses: %w", DefaultStorageClassName, err))
	}
	def := DefaultClass(list.GetItems())
	if def == nil {
		return nil
	}
	if pvc.Spec == nil {
		pvc.Spec = &corev1.PersistentVolumeClaimSpec{}
	}
	name := def.GetMetadata().GetName()
	pvc.Spec.StorageClassName = &name
	return nil
}

// storageObjectInUseProtection adds kubernetes.io/pvc-protection to claims
// and kubernetes.io/pv-protection to volumes as they are created, so that
// deleting one in use only marks it: the protection controllers remove the
// finalizer once no pod uses the claim, or no claim is bound to the volume.
type storageObjectInUseProtection struct{}

func newStorageObjectInUseProtection(*Deps) (any, error) { return storageObjectInUseProtection{}, nil }

func (storageObjectInUseProtection) Admit(_ context.Context, a *Attributes) error {
	if a.Operation != Create || a.Subresource != "" || a.Kind.GVK.Group != "" {
		return nil
	}
	var meta **metav1.ObjectMeta
	var finalizer string
	switch o := a.Object.(type) {
	case *corev1.PersistentVolumeClaim:
		meta, finalizer = &o.Metadata, PVCProtectionFinalizer
	case *corev1.PersistentVolume:
		meta, finalizer = &o.Metadata, PVProtectionFinalizer
	default:
		return nil
	}
	if *meta == nil {
		*meta = &metav1.ObjectMeta{}
	}
	if !slices.Contains((*meta).Finalizers, finalizer) {
		(*meta).Finalizers = append((*meta).Finalizers, finalizer)
	}
	return nil
}
