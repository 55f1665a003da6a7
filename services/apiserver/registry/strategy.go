package registry

import (
	"context"

	"skiff.dev/internal/field"
	"skiff.dev/internal/object"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/apiserver/scheme"
)

// Strategy is what a kind adds to the generic rules. Only Kind is required.
type Strategy[T object.Object] struct {
	// Kind is the storage version's kind.
	Kind *scheme.Kind
	// Default fills defaults in place (on create and update).
	Default func(T)
	// Validate checks a whole object, metadata included.
	Validate func(T) field.ErrorList
	// ValidateUpdate checks what may not change (called after Validate).
	ValidateUpdate func(newObj, oldObj T) field.ErrorList
	// ValidateCreate checks what only a new object must satisfy (called
	// after Validate, on create only): a pod's ephemeral containers come
	// later, through their subresource. nil: nothing.
	ValidateCreate func(T) field.ErrorList
	// Fields returns the kind's selectable fields beyond metadata.name and
	// metadata.namespace (which are always there).
	Fields func(T) map[string]string
	// KeepStatusOnCreate keeps a status sent on Create (Nodes register with
	// theirs); other kinds start with an empty status.
	KeepStatusOnCreate bool
	// GracefulDelete says whether Delete only marks the object with a
	// deletionTimestamp (and for how long) so that an agent can stop it
	// first; that agent then deletes with grace period 0. nil = never.
	GracefulDelete func(obj T, gracePeriodSeconds *int64) (seconds int64, graceful bool)
	// PrepareForDeletion lets a kind adjust an object when it is first
	// marked for deletion. A kind that has one is always marked (never
	// deleted at once), so that it can add what must run before it goes.
	PrepareForDeletion func(T)
	// PendingFinalizers returns finalizers the kind keeps outside
	// metadata.finalizers (a Namespace's spec.finalizers, which its
	// controller removes with an Update): like those, they hold an object
	// marked for deletion until they are gone. nil: none.
	PendingFinalizers func(T) []string
	// Allocate reserves from shared pools what obj needs (a Service's
	// cluster IP and node ports), filling them in, after validation and
	// admission and before the object is stored; old is the stored object
	// on update (nil on create). The write then calls done once, with
	// whether it stored obj: false undoes what Allocate reserved, true
	// frees what old held and obj no longer does. nil: nothing to allocate.
	Allocate func(ctx context.Context, obj, old T) (done func(stored bool), err error)
	// PrepareForCreate adjusts a new object once its name is chosen (by
	// the client, or generated from metadata.generateName), before
	// validation: Kubernetes' strategy PrepareForCreate, which its store
	// calls after generating the name (a Job's generated selector and
	// labels name the Job). Each try of another generated name starts
	// again from the object as admission left it. nil: nothing.
	PrepareForCreate func(T)
	// PrepareForUpdate adjusts an update before validation: obj is the
	// request (defaulted), old the stored object (a Service keeps the
	// cluster IP and node ports it was given when the update omits them).
	PrepareForUpdate func(obj, old T)
	// Release frees what a deleted object held. nil: nothing.
	Release func(ctx context.Context, obj T)
}

// FieldSet returns every selectable field of obj.
func (s *Strategy[T]) FieldSet(obj T) map[string]string {
	var set map[string]string
	if s.Fields != nil {
		set = s.Fields(obj)
	}
	if set == nil {
		set = make(map[string]string, 2)
	}
	meta := obj.GetMetadata()
	set["metadata.name"] = meta.GetName()
	if s.Kind.Namespaced {
		set["metadata.namespace"] = meta.GetNamespace()
	}
	return set
}

// resetForCreate clears what a client may not choose on create.
func resetForCreate(meta *metav1.ObjectMeta) {
	meta.Uid = ""
	meta.ResourceVersion = ""
	meta.CreationTimestamp = nil
	meta.DeletionTimestamp = nil
	meta.DeletionGracePeriodSeconds = nil
	meta.Generation = 0
}
