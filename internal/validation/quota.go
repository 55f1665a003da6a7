package validation

import (
	"slices"
	"strings"

	"skiff.dev/internal/field"
	corev1 "skiff.dev/proto/core/v1"
)

// ResourceQuota scopes (package quota matches pods against them).
const (
	scopeTerminating    = "Terminating"
	scopeNotTerminating = "NotTerminating"
	scopeBestEffort     = "BestEffort"
	scopeNotBestEffort  = "NotBestEffort"
	scopePriorityClass  = "PriorityClass"
)

// standardScopes are the scopes Skiff implements; unsupportedScopes are
// Kubernetes' others, refused by name.
var (
	standardScopes    = []string{scopeTerminating, scopeNotTerminating, scopeBestEffort, scopeNotBestEffort, scopePriorityClass}
	unsupportedScopes = []string{"CrossNamespacePodAffinity", "VolumeAttributesClass"}
	conflictingScopes = [][2]string{{scopeBestEffort, scopeNotBestEffort}, {scopeTerminating, scopeNotTerminating}}
)

// standardQuotaResource says whether a quota resource is one of
// Kubernetes' standard names (count/... is not): only those are checked
// against a quota's scopes.
func standardQuotaResource(name string) bool { return quotaResource(name) && !isCountResource(name) }

func isCountResource(name string) bool { return strings.HasPrefix(name, "count/") }

// scopeValidForResource is Kubernetes' IsResourceQuotaScopeValidForResource:
// the pod scopes cap pods and their compute resources; BestEffort, pods
// only (such pods request nothing).
func scopeValidForResource(scope, resource string) bool {
	podCount := resource == "pods"
	compute := false
	switch resource {
	case "cpu", "memory", "requests.cpu", "requests.memory", "limits.cpu", "limits.memory":
		compute = true
	}
	switch scope {
	case scopeTerminating, scopeNotTerminating, scopeNotBestEffort, scopePriorityClass:
		return podCount || compute
	case scopeBestEffort:
		return podCount
	}
	return true
}

// quotaScopes validates spec.scopes and spec.scopeSelector as Kubernetes'
// validateResourceQuotaScopes and validateScopedResourceSelectorRequirement
// do, in their words: known scopes, each valid for every standard resource
// the quota caps, no conflicting pair (BestEffort and NotBestEffort,
// Terminating and NotTerminating), and selector operators: Exists for the
// scopes without values, In or NotIn with values, Exists or DoesNotExist
// without for PriorityClass. Kubernetes' scopes Skiff does not implement
// are refused as not supported.
func quotaScopes(spec *corev1.ResourceQuotaSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	hard := sortedKeys(spec.GetHard())
	if scopes := spec.GetScopes(); len(scopes) > 0 {
		sp := p.Child("scopes")
		seen := map[string]bool{}
		for i, s := range scopes {
			if slices.Contains(unsupportedScopes, s) {
				errs = append(errs, notSupportedBySkiff(sp.Index(i), s))
				continue
			}
			if !slices.Contains(standardScopes, s) {
				errs = append(errs, field.Invalid(sp, scopes, "unsupported scope"))
			}
			for _, k := range hard {
				if standardQuotaResource(k) && !scopeValidForResource(s, k) {
					errs = append(errs, field.Invalid(sp, scopes, "unsupported scope applied to resource"))
				}
			}
			seen[s] = true
		}
		for _, pair := range conflictingScopes {
			if seen[pair[0]] && seen[pair[1]] {
				errs = append(errs, field.Invalid(sp, scopes, "conflicting scopes"))
			}
		}
	}
	sel := spec.GetScopeSelector()
	if sel == nil {
		return errs
	}
	mp := p.Child("scopeSelector", "matchExpressions")
	seen := map[string]bool{}
	for i, req := range sel.GetMatchExpressions() {
		name := req.GetScopeName()
		if slices.Contains(unsupportedScopes, name) {
			errs = append(errs, notSupportedBySkiff(mp.Index(i).Child("scopeName"), name))
			continue
		}
		if !slices.Contains(standardScopes, name) {
			errs = append(errs, field.Invalid(mp.Child("scopeName"), name, "unsupported scope"))
		}
		for _, k := range hard {
			if standardQuotaResource(k) && !scopeValidForResource(name, k) {
				errs = append(errs, field.Invalid(mp, scopeSelectorString(sel), "unsupported scope applied to resource"))
			}
		}
		switch name {
		case scopeBestEffort, scopeNotBestEffort, scopeTerminating, scopeNotTerminating:
			if req.GetOperator() != "Exists" {
				errs = append(errs, field.Invalid(mp.Child("operator"), req.GetOperator(),
					"must be 'Exist' when scope is any of ResourceQuotaScopeTerminating, ResourceQuotaScopeNotTerminating, ResourceQuotaScopeBestEffort, ResourceQuotaScopeNotBestEffort or ResourceQuotaScopeCrossNamespacePodAffinity"))
			}
		}
		switch req.GetOperator() {
		case "In", "NotIn":
			if len(req.GetValues()) == 0 {
				errs = append(errs, field.Required(mp.Child("values"), "must be at least one value when `operator` is 'In' or 'NotIn' for scope selector"))
			}
		case "Exists", "DoesNotExist":
			if len(req.GetValues()) != 0 {
				errs = append(errs, field.Invalid(mp.Child("values"), req.GetValues(), "must be no value when `operator` is 'Exist' or 'DoesNotExist' for scope selector"))
			}
		default:
			errs = append(errs, field.Invalid(mp.Child("operator"), req.GetOperator(), "not a valid selector operator"))
		}
		seen[name] = true
	}
	for _, pair := range conflictingScopes {
		if seen[pair[0]] && seen[pair[1]] {
			errs = append(errs, field.Invalid(mp, spec.GetScopes(), "conflicting scopes"))
		}
	}
	return errs
}

// quotaScopesUpdate: a quota's scopes never change, as in Kubernetes
// (compared as sets; the scope selector may change).
func quotaScopesUpdate(newSpec, oldSpec *corev1.ResourceQuotaSpec, p *field.Path) field.ErrorList {
	set := func(xs []string) []string { return slices.Compact(slices.Sorted(slices.Values(xs))) }
	if !slices.Equal(set(newSpec.GetScopes()), set(oldSpec.GetScopes())) {
		return field.ErrorList{field.Invalid(p.Child("scopes"), newSpec.GetScopes(), "field is immutable")}
	}
	return nil
}

// scopeSelectorString renders a scope selector for messages:
// "PriorityClass In [high low], BestEffort Exists".
func scopeSelectorString(sel *corev1.ScopeSelector) string {
	out := ""
	for i, r := range sel.GetMatchExpressions() {
		if i > 0 {
			out += ", "
		}
		out += r.GetScopeName() + " " + r.GetOperator()
		if len(r.GetValues()) > 0 {
			out += " [" + strings.Join(r.GetValues(), " ") + "]"
		}
	}
	return out
}

// notSupportedBySkiff refuses a value Kubernetes accepts and Skiff does
// not implement.
func notSupportedBySkiff(p *field.Path, value string) *field.Error {
	return &field.Error{Type: field.ErrorTypeNotSupported, Field: p.String(), BadValue: value, Detail: "is not supported by Skiff"}
}
