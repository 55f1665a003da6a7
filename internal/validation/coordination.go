package validation

import (
	"skiff.dev/internal/field"
	coordinationv1 "skiff.dev/proto/coordination/v1"
)

// Lease validates a lease: namespaced metadata (name a DNS subdomain), a
// positive leaseDurationSeconds and non-negative leaseTransitions when set.
func Lease(l *coordinationv1.Lease) field.ErrorList {
	if l == nil {
		l = &coordinationv1.Lease{}
	}
	errs := ObjectMeta(l.Metadata, true, NameIsDNSSubdomain, field.NewPath("metadata"))
	sp := field.NewPath("spec")
	if d := l.Spec.GetLeaseDurationSeconds(); l.Spec != nil && l.Spec.LeaseDurationSeconds != nil {
		errs = append(errs, positive(int64(d), sp.Child("leaseDurationSeconds"))...)
	}
	if l.Spec != nil && l.Spec.LeaseTransitions != nil {
		errs = append(errs, nonNegative(int64(*l.Spec.LeaseTransitions), sp.Child("leaseTransitions"))...)
	}
	return errs
}

// LeaseUpdate validates an update of a lease: the new object as on create
// and immutable metadata.
func LeaseUpdate(newL, oldL *coordinationv1.Lease) field.ErrorList {
	errs := ObjectMetaUpdate(newL.GetMetadata(), oldL.GetMetadata(), field.NewPath("metadata"))
	return append(errs, Lease(newL)...)
}
