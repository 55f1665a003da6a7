package validation

import (
	"skiff.dev/internal/field"
	corev1 "skiff.dev/proto/core/v1"
)

// TokenRequest validates a request of ServiceAccounts.CreateToken after its
// defaults (expirationSeconds 3600), as Kubernetes' ValidateTokenRequest:
// a lifetime of 10 minutes to 2^32 seconds; and a bound object named (the
// apiserver refuses kinds other than Pod and Secret itself, as
// Kubernetes' token REST handler does).
func TokenRequest(tr *corev1.TokenRequest) field.ErrorList {
	var errs field.ErrorList
	sp := field.NewPath("spec")
	if e := tr.GetSpec().ExpirationSeconds; e != nil {
		if *e < minTokenExpirationSeconds {
			errs = append(errs, field.Invalid(sp.Child("expirationSeconds"), *e, "may not specify a duration less than 10 minutes"))
		}
		if *e > maxTokenExpirationSeconds {
			errs = append(errs, field.Invalid(sp.Child("expirationSeconds"), *e, "may not specify a duration larger than 2^32 seconds"))
		}
	}
	if ref := tr.GetSpec().GetBoundObjectRef(); ref != nil && ref.GetName() == "" {
		errs = append(errs, field.Required(sp.Child("boundObjectRef", "name"), ""))
	}
	return errs
}
