package validation

import (
	"fmt"
	"regexp"

	"skiff.dev/internal/field"
	metav1 "skiff.dev/proto/meta/v1"
	policyv1 "skiff.dev/proto/policy/v1"
)

// unhealthyPodEvictionPolicies are policy/v1's UnhealthyPodEvictionPolicyType values.
var unhealthyPodEvictionPolicies = []string{"AlwaysAllow", "IfHealthyBudget"}

// PodDisruptionBudget validates a PodDisruptionBudget as Kubernetes'
// ValidatePodDisruptionBudget (policy/v1): minAvailable and maxUnavailable
// not both set, each a non-negative integer or a percentage of at most
// 100%, a valid selector, a known unhealthyPodEvictionPolicy; and its
// status (ValidatePodDisruptionBudgetStatusUpdate): non-negative counts,
// valid conditions.
func PodDisruptionBudget(pdb *policyv1.PodDisruptionBudget) field.ErrorList {
	errs := ObjectMeta(pdb.GetMetadata(), true, NameIsDNSSubdomain, field.NewPath("metadata"))
	sp := field.NewPath("spec")
	spec := pdb.GetSpec()
	if spec.GetMinAvailable() != nil && spec.GetMaxUnavailable() != nil {
		errs = append(errs, field.Invalid(sp, fmt.Sprintf("{minAvailable: %v, maxUnavailable: %v}", intOrStringValue(spec.GetMinAvailable()), intOrStringValue(spec.GetMaxUnavailable())),
			"minAvailable and maxUnavailable cannot be both set"))
	}
	for _, f := range []struct {
		name string
		v    *metav1.IntOrString
	}{{"minAvailable", spec.GetMinAvailable()}, {"maxUnavailable", spec.GetMaxUnavailable()}} {
		if f.v == nil {
			continue
		}
		p := sp.Child(f.name)
		errs = append(errs, intOrPercent(f.v, p)...)
		if n, pct := intOrPercentValue(f.v); pct && n > 100 {
			errs = append(errs, field.Invalid(p, intOrStringValue(f.v), "must not be greater than 100%"))
		}
	}
	errs = append(errs, LabelSelector(spec.GetSelector(), sp.Child("selector"))...)
	if spec != nil && spec.UnhealthyPodEvictionPolicy != nil {
		errs = append(errs, supported(spec.GetUnhealthyPodEvictionPolicy(), unhealthyPodEvictionPolicies, sp.Child("unhealthyPodEvictionPolicy"))...)
	}
	st, stp := pdb.GetStatus(), field.NewPath("status")
	errs = append(errs, conditions(st.GetConditions(), stp.Child("conditions"))...)
	errs = append(errs, nonNegative(int64(st.GetDisruptionsAllowed()), stp.Child("disruptionsAllowed"))...)
	errs = append(errs, nonNegative(int64(st.GetCurrentHealthy()), stp.Child("currentHealthy"))...)
	errs = append(errs, nonNegative(int64(st.GetDesiredHealthy()), stp.Child("desiredHealthy"))...)
	errs = append(errs, nonNegative(int64(st.GetExpectedPods()), stp.Child("expectedPods"))...)
	return errs
}

// PodDisruptionBudgetUpdate validates an update: immutable metadata and
// the new object as on create (policy/v1 lets the spec change).
func PodDisruptionBudgetUpdate(newPDB, oldPDB *policyv1.PodDisruptionBudget) field.ErrorList {
	errs := ObjectMetaUpdate(newPDB.GetMetadata(), oldPDB.GetMetadata(), field.NewPath("metadata"))
	return append(errs, PodDisruptionBudget(newPDB)...)
}

// conditionReasonRegexp is metav1.Condition's reason: CamelCase, commas
// and colons allowed (Kubernetes' conditionReasonFmt).
var conditionReasonRegexp = regexp.MustCompile(`^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$`)

// conditions validates metav1.Conditions as Kubernetes' ValidateConditions:
// unique qualified-name types, status True/False/Unknown, a transition
// time, a CamelCase reason of at most 1024 characters, a message of at most
// 32768, a non-negative observedGeneration.
func conditions(cs []*metav1.Condition, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := map[string]bool{}
	for i, c := range cs {
		cp := p.Index(i)
		tp := cp.Child("type")
		switch {
		case c.GetType() == "":
			errs = append(errs, field.Required(tp, "must be set"))
		default:
			errs = append(errs, invalidEach(tp, c.GetType(), isQualifiedName(c.GetType()))...)
			if seen[c.GetType()] {
				errs = append(errs, field.Duplicate(tp, c.GetType()))
			}
			seen[c.GetType()] = true
		}
		errs = append(errs, supported(c.GetStatus(), []string{"False", "True", "Unknown"}, cp.Child("status"))...)
		errs = append(errs, nonNegative(c.GetObservedGeneration(), cp.Child("observedGeneration"))...)
		if c.GetLastTransitionTime() == nil {
			errs = append(errs, field.Required(cp.Child("lastTransitionTime"), "must be set"))
		}
		rp := cp.Child("reason")
		switch r := c.GetReason(); {
		case r == "":
			errs = append(errs, field.Required(rp, "must be set"))
		case len(r) > 1024:
			errs = append(errs, field.TooLong(rp, 1024))
		case !conditionReasonRegexp.MatchString(r):
			errs = append(errs, field.Invalid(rp, r, "a condition reason must start with alphabetic character, optionally followed by a string of alphanumeric characters or '_,:', and must end with an alphanumeric character or '_' (e.g. 'my_name',  or 'MY_NAME',  or 'MyName',  or 'ReasonA,ReasonB',  or 'ReasonA:ReasonB', regex used for validation is '[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?')"))
		}
		if len(c.GetMessage()) > 32768 {
			errs = append(errs, field.TooLong(cp.Child("message"), 32768))
		}
	}
	return errs
}
