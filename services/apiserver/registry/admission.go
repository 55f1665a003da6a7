package registry

import (
	"context"

	"google.golang.org/protobuf/proto"

	"skiff.dev/internal/object"
	"skiff.dev/services/apiserver/admission"
	"skiff.dev/services/apiserver/user"
)

// Admission is the admission chain as the registry runs it: Admit (the
// mutating plugins) after defaulting, Validate (the validating plugins)
// after the kind's validation. Package admission's *Chain is one.
type Admission interface {
	Admit(ctx context.Context, a *admission.Attributes) error
	Validate(ctx context.Context, a *admission.Attributes) error
}

// SetAdmission gives the registry its admission chain (nil: none, at no
// cost). Call it before the registry serves.
func (r *Registry[T]) SetAdmission(a Admission) { r.admit = a }

// attributes describes a write for admission. obj or old may be nil.
func (r *Registry[T]) attributes(ctx context.Context, op admission.Operation, subresource string, obj, old proto.Message) *admission.Attributes {
	a := &admission.Attributes{Operation: op, Kind: r.strategy.Kind, Subresource: subresource, Object: obj, OldObject: old, User: user.From(ctx), DryRun: IsDryRun(ctx)}
	named := obj
	if named == nil {
		named = old
	}
	if named != nil {
		m := object.Meta(named)
		a.Namespace, a.Name = m.GetNamespace(), m.GetName()
	}
	return a
}

// admitCreate runs the mutating plugins on an object to create and returns
// the object they leave (defaulted again when a webhook replaced it).
func (r *Registry[T]) admitCreate(ctx context.Context, obj T) (T, *admission.Attributes, error) {
	a := r.attributes(ctx, admission.Create, "", obj, nil)
	if err := r.admit.Admit(ctx, a); err != nil {
		var zero T
		return zero, nil, err
	}
	next, replaced := r.admitted(a, obj)
	if replaced && r.strategy.Default != nil {
		r.strategy.Default(next)
	}
	return next, a, nil
}

// admitted returns the object admission left in a, and whether it is a new
// message rather than obj changed in place.
func (r *Registry[T]) admitted(a *admission.Attributes, obj T) (T, bool) {
	next, ok := a.Object.(T)
	if !ok || any(next) == any(obj) {
		return obj, false
	}
	return next, true
}

// admitUpdate runs the mutating plugins on the object an update would
// write; a replaced object is prepared again against cur, so that what the
// server owns (metadata, and the part an update does not write: status, or
// all but status) stays as the update rules say.
func (r *Registry[T]) admitUpdate(ctx context.Context, next, cur T, status bool) (T, *admission.Attributes, error) {
	sub := ""
	if status {
		sub = "status"
	}
	a := r.attributes(ctx, admission.Update, sub, next, cur)
	if err := r.admit.Admit(ctx, a); err != nil {
		var zero T
		return zero, nil, err
	}
	if replaced, ok := r.admitted(a, next); ok {
		next = r.prepareUpdate(ctx, replaced, cur, status)
		a.Object = next
	}
	return next, a, nil
}
