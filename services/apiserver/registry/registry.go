package registry

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/google/uuid"
	"google.golang.org/protobuf/proto"

	"skiff.dev/internal/apierrors"
	"skiff.dev/internal/field"
	"skiff.dev/internal/object"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/apiserver/admission"
	"skiff.dev/services/apiserver/storage"
	"skiff.dev/services/apiserver/watchcache"
)

// Finalizers the registry adds for a Delete's propagation policy; the
// garbage collector removes them.
const (
	FinalizerOrphan     = "orphan"
	FinalizerForeground = "foregroundDeletion"
)

// Registry serves one kind, stored as T.
type Registry[T object.Object] struct {
	strategy *Strategy[T]
	store    *storage.Store[T]
	cache    *watchcache.Cache[T]
	now      func() time.Time
	admit    Admission // nil: no admission
}

// New returns a registry over a store and its watch cache.
func New[T object.Object](strategy *Strategy[T], store *storage.Store[T], cache *watchcache.Cache[T], now func() time.Time) *Registry[T] {
	if now == nil {
		now = time.Now
	}
	return &Registry[T]{strategy: strategy, store: store, cache: cache, now: now}
}

func (r *Registry[T]) resource() string { return r.strategy.Kind.Resource }

// namespaceOf checks the request's namespace against the kind's scope.
func (r *Registry[T]) namespaceOf(ns string) (string, error) {
	if r.strategy.Kind.Namespaced {
		if ns == "" {
			return "default", nil
		}
		return ns, nil
	}
	return "", r.checkClusterScope(ns)
}

// checkClusterScope refuses a namespace for a cluster-scoped kind.
func (r *Registry[T]) checkClusterScope(ns string) error {
	if ns != "" && !r.strategy.Kind.Namespaced {
		return apierrors.NewBadRequest(fmt.Sprintf("%s are cluster-scoped: namespace must be empty, got %q", r.resource(), ns))
	}
	return nil
}

func (r *Registry[T]) key(ns, name string) (string, error) {
	if name == "" {
		return "", apierrors.NewInvalid(r.strategy.Kind.GVK.Kind, name, field.ErrorList{field.Required(field.NewPath("metadata", "name"), "name is required")})
	}
	return r.store.Key(ns, name), nil
}

func (r *Registry[T]) invalid(obj T, errs field.ErrorList) error {
	return apierrors.NewInvalid(r.strategy.Kind.GVK.Kind, obj.GetMetadata().GetName(), errs)
}

func (r *Registry[T]) setTypeMeta(obj T) {
	k := r.strategy.Kind
	object.SetTypeMeta(obj, k.GVK.GroupVersion.String(), k.GVK.Kind)
}

// Create stores a new object. obj is owned by the call.
func (r *Registry[T]) Create(ctx context.Context, obj T) (T, error) {
	var zero T
	stored := false
	meta := object.Meta(obj)
	ns, err := r.namespaceOf(meta.Namespace)
	if err != nil {
		return zero, err
	}
	meta.Namespace = ns
	resetForCreate(meta)
	meta.Uid = uuid.NewString()
	meta.CreationTimestamp = metaTime(r.now())
	meta.Generation = 1
	if !r.strategy.KeepStatusOnCreate {
		object.ClearStatus(obj)
	}
	r.setTypeMeta(obj)
	if r.strategy.Default != nil {
		r.strategy.Default(obj)
	}
	var attrs *admission.Attributes
	if r.admit != nil {
		if obj, attrs, err = r.admitCreate(ctx, obj); err != nil {
			return zero, err
		}
		meta = object.Meta(obj)
	}
	normalizeTimes(obj.ProtoReflect())
	generated := meta.Name == "" && meta.GenerateName != ""
	var admitted T // obj before PrepareForCreate, for another generated name
	if generated && r.strategy.PrepareForCreate != nil {
		admitted = proto.Clone(obj).(T)
	}
	for attempt := 0; ; attempt++ {
		if generated {
			if attempt > 0 && r.strategy.PrepareForCreate != nil {
				obj = proto.Clone(admitted).(T)
				meta = object.Meta(obj)
			}
			meta.Name = meta.GenerateName + randomSuffix()
		}
		if r.strategy.PrepareForCreate != nil {
			r.strategy.PrepareForCreate(obj)
		}
		var errs field.ErrorList
		if r.strategy.Validate != nil {
			errs = r.strategy.Validate(obj)
		}
		if r.strategy.ValidateCreate != nil {
			errs = append(errs, r.strategy.ValidateCreate(obj)...)
		}
		if len(errs) > 0 {
			return zero, r.invalid(obj, errs)
		}
		if attrs != nil && attempt == 0 {
			// Once: a quota charged for this create is not charged again
			// for another generated name.
			attrs.Object, attrs.Name = obj, meta.Name
			if err := r.admit.Validate(ctx, attrs); err != nil {
				return zero, err
			}
		}
		key, err := r.key(ns, meta.Name)
		if err != nil {
			return zero, err
		}
		if IsDryRun(ctx) {
			return obj, nil
		}
		if attempt == 0 && r.strategy.Allocate != nil {
			var zeroOld T
			done, err := r.strategy.Allocate(ctx, obj, zeroOld)
			if err != nil {
				return zero, err
			}
			defer func() { done(stored) }()
		}
		created, err := r.store.Create(ctx, key, obj)
		if generated && attempt < 5 && apierrors.IsAlreadyExists(err) {
			continue // another name, as Kubernetes retries generated names
		}
		stored = err == nil
		return created, err
	}
}

// Get reads one object from etcd (a consistent read).
func (r *Registry[T]) Get(ctx context.Context, namespace, name string) (T, error) {
	var zero T
	ns, err := r.namespaceOf(namespace)
	if err != nil {
		return zero, err
	}
	key, err := r.key(ns, name)
	if err != nil {
		return zero, err
	}
	return r.store.Get(ctx, key, name)
}

// cached returns the cache's copy of key when it is exactly at rv, saving
// a read before a conditional write.
func (r *Registry[T]) cached(key, rv string) T {
	var zero T
	if rv == "" {
		return zero
	}
	if e, ok := r.cache.Get(key); ok && strconv.FormatInt(e.Rev, 10) == rv {
		if obj, err := e.Object(); err == nil {
			return obj
		}
	}
	return zero
}

// conflict is the error for a write based on a stale resourceVersion.
func (r *Registry[T]) conflict(name string) error {
	return apierrors.NewConflict(r.resource(), name, "the object has been modified; please apply your changes to the latest version and try again")
}

// Update replaces the desired state (everything but status) of an object.
// A non-empty metadata.resourceVersion must match the stored one.
func (r *Registry[T]) Update(ctx context.Context, obj T) (T, error) {
	return r.update(ctx, obj, false)
}

// UpdateStatus replaces only the status of an object.
func (r *Registry[T]) UpdateStatus(ctx context.Context, obj T) (T, error) {
	var zero T
	if !object.HasStatus(obj) {
		return zero, apierrors.NewMethodNotAllowed(r.resource(), "UpdateStatus (the kind has no status)")
	}
	return r.update(ctx, obj, true)
}

func (r *Registry[T]) update(ctx context.Context, obj T, status bool) (T, error) {
	var zero T
	meta := object.Meta(obj)
	ns, err := r.namespaceOf(meta.Namespace)
	if err != nil {
		return zero, err
	}
	meta.Namespace = ns
	key, err := r.key(ns, meta.Name)
	if err != nil {
		return zero, err
	}
	wantRV := meta.ResourceVersion
	var dryRun T                    // what a dry run would have written
	var allocated func(stored bool) // the last attempt's Allocate
	updated, err := r.store.GuaranteedUpdate(ctx, key, meta.Name, r.cached(key, wantRV), func(cur T) (T, error) {
		if allocated != nil {
			allocated(false) // an earlier attempt's, tried again on a newer object
			allocated = nil
		}
		if wantRV != "" && wantRV != cur.GetMetadata().GetResourceVersion() {
			return zero, r.conflict(meta.Name)
		}
		next := r.prepareUpdate(ctx, obj, cur, status)
		var attrs *admission.Attributes
		if r.admit != nil {
			var err error
			if next, attrs, err = r.admitUpdate(ctx, next, cur, status); err != nil {
				return zero, err
			}
			r.setGeneration(next, cur, status)
		}
		normalizeTimes(next.ProtoReflect())
		if errs := r.validateUpdate(next, cur); len(errs) > 0 {
			return zero, r.invalid(next, errs)
		}
		if attrs != nil {
			if err := r.admit.Validate(ctx, attrs); err != nil {
				return zero, err
			}
		}
		if proto.Equal(next, cur) {
			return cur, nil // nothing changed: no write, same resourceVersion
		}
		if IsDryRun(ctx) {
			dryRun = next
			return zero, errDryRun
		}
		if r.strategy.Allocate != nil && !status {
			var err error
			if allocated, err = r.strategy.Allocate(ctx, next, cur); err != nil {
				return zero, err
			}
		}
		return next, nil
	})
	if allocated != nil {
		allocated(err == nil)
	}
	if errors.Is(err, errDryRun) {
		return dryRun, nil
	}
	if err != nil {
		return zero, err
	}
	return r.finishIfDeletable(ctx, key, updated)
}

// prepareUpdate builds the object to write from the request and the
// current state, without modifying either.
func (r *Registry[T]) prepareUpdate(ctx context.Context, req, cur T, status bool) T {
	var next T
	if status {
		// Only the status changes: start from the current object.
		next = proto.Clone(cur).(T)
		object.CopyStatus(next, req)
	} else {
		next = proto.Clone(req).(T)
		object.CopyStatus(next, cur)
		if r.strategy.Default != nil {
			r.strategy.Default(next)
		}
		if r.strategy.PrepareForUpdate != nil {
			r.strategy.PrepareForUpdate(next, cur)
		}
	}
	r.setTypeMeta(next)
	nm, cm := object.Meta(next), cur.GetMetadata()
	// What the server owns in metadata never comes from the request.
	nm.Uid = cm.GetUid()
	// Copies: normalizeTimes may truncate next's (stored before times
	// were), and cur stays as it is.
	nm.CreationTimestamp = cloneTime(cm.GetCreationTimestamp())
	nm.DeletionTimestamp = cloneTime(cm.GetDeletionTimestamp())
	nm.DeletionGracePeriodSeconds = cm.DeletionGracePeriodSeconds
	nm.ResourceVersion = cm.GetResourceVersion()
	if len(nm.ManagedFields) == 0 && !managedFieldsSet(ctx) {
		// A request without managed fields keeps the object's, as
		// Kubernetes' field manager takes the live object's then (a
		// client that knows nothing of them must not erase them).
		for _, e := range cm.GetManagedFields() {
			nm.ManagedFields = append(nm.ManagedFields, proto.Clone(e).(*metav1.ManagedFieldsEntry))
		}
	}
	r.setGeneration(next, cur, status)
	if cm.GetDeletionTimestamp() != nil {
		// An object being deleted may lose finalizers, never gain new ones.
		nm.Finalizers = keepOnly(nm.Finalizers, cm.GetFinalizers())
	}
	return next
}

// setGeneration bumps generation when an update changes the spec.
func (r *Registry[T]) setGeneration(next, cur T, status bool) {
	nm := object.Meta(next)
	nm.Generation = cur.GetMetadata().GetGeneration()
	if !status && !object.SpecEqual(next, cur) {
		nm.Generation++
	}
}

func (r *Registry[T]) validateUpdate(next, cur T) field.ErrorList {
	var errs field.ErrorList
	if r.strategy.Validate != nil {
		errs = append(errs, r.strategy.Validate(next)...)
	}
	if r.strategy.ValidateUpdate != nil {
		errs = append(errs, r.strategy.ValidateUpdate(next, cur)...)
	}
	return errs
}

// finishIfDeletable deletes an object marked for deletion once it has no
// finalizers left and no grace period pending.
func (r *Registry[T]) finishIfDeletable(ctx context.Context, key string, obj T) (T, error) {
	meta := obj.GetMetadata()
	if meta.GetDeletionTimestamp() == nil || len(meta.GetFinalizers()) > 0 || meta.GetDeletionGracePeriodSeconds() > 0 || r.pendingFinalizers(obj) {
		return obj, nil
	}
	rv := meta.GetResourceVersion()
	last, err := r.store.Delete(ctx, key, meta.GetName(), obj, func(cur T) error {
		if cur.GetMetadata().GetResourceVersion() != rv {
			return r.conflict(meta.GetName()) // changed again: the next writer decides
		}
		return nil
	})
	if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
		return obj, nil
	}
	if err != nil {
		return obj, err
	}
	r.released(ctx, last)
	return last, nil
}

// released frees what a deleted object held.
func (r *Registry[T]) released(ctx context.Context, obj T) {
	if r.strategy.Release != nil {
		r.strategy.Release(ctx, obj)
	}
}

// Delete removes an object, or marks it with a deletionTimestamp when
// finalizers (its own or those the propagation policy adds) or a grace
// period must run first. It returns the object's last state.
func (r *Registry[T]) Delete(ctx context.Context, req *metav1.DeleteRequest) (T, error) {
	var zero T
	ns, err := r.namespaceOf(req.GetNamespace())
	if err != nil {
		return zero, err
	}
	name := req.GetName()
	key, err := r.key(ns, name)
	if err != nil {
		return zero, err
	}
	var policyFinalizer string
	switch p := req.GetPropagationPolicy(); p {
	case "", "Background":
	case "Orphan":
		policyFinalizer = FinalizerOrphan
	case "Foreground":
		policyFinalizer = FinalizerForeground
	default:
		return zero, apierrors.NewBadRequest(fmt.Sprintf("propagationPolicy %q is not supported: use Background, Foreground or Orphan", p))
	}
	if g := req.GracePeriodSeconds; g != nil && *g < 0 {
		return zero, apierrors.NewBadRequest(fmt.Sprintf("gracePeriodSeconds %d: must be 0 or more", *g))
	}
	check := func(cur T) error { return r.checkPreconditions(name, cur, req.GetPreconditions()) }

	cur, err := r.store.Get(ctx, key, name)
	if err != nil {
		return zero, err
	}
	if r.admit != nil {
		if err := check(cur); err != nil {
			return zero, err
		}
		if err := r.admit.Validate(ctx, r.attributes(ctx, admission.Delete, "", nil, cur)); err != nil {
			return zero, err
		}
	}
	if IsDryRun(ctx) {
		return cur, check(cur)
	}
	for {
		if err := check(cur); err != nil {
			return zero, err
		}
		grace, graceful := int64(0), false
		if r.strategy.GracefulDelete != nil {
			grace, graceful = r.strategy.GracefulDelete(cur, req.GracePeriodSeconds)
		}
		finalizers := cur.GetMetadata().GetFinalizers()
		if policyFinalizer != "" && !slices.Contains(finalizers, policyFinalizer) {
			finalizers = append(append([]string(nil), finalizers...), policyFinalizer)
		}
		if len(finalizers) == 0 && !graceful && r.strategy.PrepareForDeletion == nil {
			last, err := r.store.Delete(ctx, key, name, cur, check)
			if err == nil {
				r.released(ctx, last)
			}
			return last, err
		}
		marked, err := r.store.GuaranteedUpdate(ctx, key, name, cur, func(c T) (T, error) {
			if err := check(c); err != nil {
				return zero, err
			}
			if c.GetMetadata().GetResourceVersion() != cur.GetMetadata().GetResourceVersion() {
				return zero, errRetry
			}
			next := proto.Clone(c).(T)
			m := object.Meta(next)
			m.Finalizers = finalizers
			now := r.now()
			if graceful {
				deadline := now.Add(time.Duration(grace) * time.Second)
				// A second delete may shorten the grace period, never extend it.
				if m.DeletionTimestamp == nil || deadline.Before(m.DeletionTimestamp.AsTime()) {
					m.DeletionTimestamp = metaTime(deadline)
					m.DeletionGracePeriodSeconds = proto.Int64(grace)
				}
			} else {
				if m.DeletionTimestamp == nil {
					m.DeletionTimestamp = metaTime(now)
				}
				m.DeletionGracePeriodSeconds = proto.Int64(0)
			}
			if r.strategy.PrepareForDeletion != nil && c.GetMetadata().GetDeletionTimestamp() == nil {
				r.strategy.PrepareForDeletion(next)
			}
			if proto.Equal(next, c) {
				return c, nil
			}
			return next, nil
		})
		if err == errRetry {
			if cur, err = r.store.Get(ctx, key, name); err != nil {
				return zero, err
			}
			continue
		}
		if err != nil {
			return zero, err
		}
		return r.finishIfDeletable(ctx, key, marked)
	}
}

// errRetry tells Delete's loop that the object changed under it; it never
// leaves the registry.
var errRetry = errors.New("registry: the object changed, read it again")

func (r *Registry[T]) checkPreconditions(name string, cur T, p *metav1.Preconditions) error {
	meta := cur.GetMetadata()
	if uid := p.GetUid(); uid != "" && uid != meta.GetUid() {
		return apierrors.NewConflict(r.resource(), name, fmt.Sprintf("Precondition failed: UID in precondition: %s, UID in object meta: %s", uid, meta.GetUid()))
	}
	if rv := p.GetResourceVersion(); rv != "" && rv != meta.GetResourceVersion() {
		return apierrors.NewConflict(r.resource(), name, fmt.Sprintf("Precondition failed: ResourceVersion in precondition: %s, ResourceVersion in object meta: %s", rv, meta.GetResourceVersion()))
	}
	return nil
}

// Subresource is the subresource a GuaranteedUpdate serves, as admission
// sees it: Pods.Bind is a CREATE of pods/binding (as Kubernetes counts
// it), UpdateScale an UPDATE of <resource>/scale.
type Subresource struct {
	Name      string
	Operation admission.Operation
}

// GuaranteedUpdate runs fn on the current object until its write lands;
// subresources (bind, scale: sub) use it. The preconditions (may be nil) are
// checked against the current object first. fn must not modify cur; it returns a
// new object, cur for "no change", or an error. The result must be a valid
// object, but the kind's update rules (ValidateUpdate) do not apply: a
// subresource enforces its own (Bind may set spec.nodeName, which an Update
// of a pod may not change).
func (r *Registry[T]) GuaranteedUpdate(ctx context.Context, sub Subresource, namespace, name string, pre *metav1.Preconditions, fn func(cur T) (T, error)) (T, error) {
	var zero T
	ns, err := r.namespaceOf(namespace)
	if err != nil {
		return zero, err
	}
	key, err := r.key(ns, name)
	if err != nil {
		return zero, err
	}
	return r.store.GuaranteedUpdate(ctx, key, name, zero, func(cur T) (T, error) {
		if err := r.checkPreconditions(name, cur, pre); err != nil {
			return zero, err
		}
		next, err := fn(cur)
		if err != nil || any(next) == any(cur) {
			return next, err
		}
		normalizeTimes(next.ProtoReflect())
		if r.strategy.Validate != nil {
			if errs := r.strategy.Validate(next); len(errs) > 0 {
				return zero, r.invalid(next, errs)
			}
		}
		if r.admit != nil {
			if err := r.admit.Validate(ctx, r.attributes(ctx, sub.Operation, sub.Name, next, cur)); err != nil {
				return zero, err
			}
		}
		return next, nil
	})
}

// pendingFinalizers says whether finalizers the kind keeps outside
// metadata (a Namespace's spec.finalizers) still hold obj.
func (r *Registry[T]) pendingFinalizers(obj T) bool {
	return r.strategy.PendingFinalizers != nil && len(r.strategy.PendingFinalizers(obj)) > 0
}

// keepOnly returns the elements of xs that are also in allowed.
func keepOnly(xs, allowed []string) []string {
	out := xs[:0:0]
	for _, x := range xs {
		if slices.Contains(allowed, x) {
			out = append(out, x)
		}
	}
	return out
}

const suffixAlphabet = "bcdfghjklmnpqrstvwxz2456789"

// randomSuffix is five characters from Kubernetes' name-generation alphabet.
func randomSuffix() string {
	var b [5]byte
	_, _ = rand.Read(b[:])
	for i := range b {
		b[i] = suffixAlphabet[int(b[i])%len(suffixAlphabet)]
	}
	return string(b[:])
}
