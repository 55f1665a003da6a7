package webhook

import (
	"slices"
	"strings"

	admissionregistrationv1 "skiff.dev/proto/admissionregistration/v1"
)

// Request is what rules match against.
type Request struct {
	Operation   string // CREATE, UPDATE, DELETE
	Group       string // "" for core
	Version     string // the storage version
	Resource    string // "pods"
	Subresource string // "", "status", "binding", "scale"
	Namespaced  bool   // the kind is namespaced
}

// MatchRules says whether any rule selects r.
func MatchRules(rules []*admissionregistrationv1.RuleWithOperations, r *Request) bool {
	for _, rule := range rules {
		if MatchRule(rule, r) {
			return true
		}
	}
	return false
}

// MatchRule applies Kubernetes' rule semantics: operations, apiGroups and
// apiVersions match a value or "*"; resources are "res" (the resource
// itself, no subresource), "res/sub", "*" (every resource, no
// subresources), "*/*" (everything), "res/*" (the resource and all its
// subresources), "*/sub" (that subresource of every resource); scope is
// "Cluster", "Namespaced" or "*" (and "" as "*").
func MatchRule(rule *admissionregistrationv1.RuleWithOperations, r *Request) bool {
	return matchOne(rule.GetOperations(), r.Operation) &&
		matchOne(rule.GetApiGroups(), r.Group) &&
		matchOne(rule.GetApiVersions(), r.Version) &&
		matchResource(rule.GetResources(), r.Resource, r.Subresource) &&
		matchScope(rule.GetScope(), r.Namespaced)
}

func matchOne(allowed []string, v string) bool {
	return slices.Contains(allowed, "*") || slices.Contains(allowed, v)
}

func matchResource(resources []string, res, sub string) bool {
	for _, pattern := range resources {
		pr, ps, _ := strings.Cut(pattern, "/")
		if (pr == "*" || pr == res) && (ps == "*" || ps == sub) {
			return true
		}
	}
	return false
}

func matchScope(scope string, namespaced bool) bool {
	switch scope {
	case "Cluster":
		return !namespaced
	case "Namespaced":
		return namespaced
	default:
		return true
	}
}
