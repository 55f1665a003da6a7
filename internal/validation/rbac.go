package validation

import (
	"strings"

	"skiff.dev/internal/field"
	corev1 "skiff.dev/proto/core/v1"
	rbacv1 "skiff.dev/proto/rbac/v1"
)

// rbacNameFn: role and binding names may hold colons ("system:node"), as
// in Kubernetes' path-segment rule: anything but "/", "%", "." and "..".
func rbacNameFn(name string) []string {
	switch name {
	case ".", "..":
		return []string{`may not be "." or ".."`}
	}
	for _, c := range name {
		if c == '/' || c == '%' {
			return []string{`may not contain "/" or "%"`}
		}
	}
	return nil
}

// policyRules validates the rules of a Role (namespaced: no
// nonResourceURLs) or ClusterRole.
func policyRules(rules []*rbacv1.PolicyRule, namespaced bool, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, r := range rules {
		rp := p.Index(i)
		if len(r.GetVerbs()) == 0 {
			errs = append(errs, field.Required(rp.Child("verbs"), "verbs must contain at least one value"))
		}
		if len(r.GetNonResourceUrls()) > 0 {
			if namespaced {
				errs = append(errs, field.Invalid(rp.Child("nonResourceURLs"), r.GetNonResourceUrls(), "namespaced rules cannot apply to non-resource URLs"))
			}
			if len(r.GetApiGroups()) > 0 || len(r.GetResources()) > 0 || len(r.GetResourceNames()) > 0 {
				errs = append(errs, field.Invalid(rp.Child("nonResourceURLs"), r.GetNonResourceUrls(), "rules cannot apply to both regular resources and non-resource URLs"))
			}
			for j, u := range r.GetNonResourceUrls() {
				if msg := nonResourceURLProblem(u); msg != "" {
					errs = append(errs, field.Invalid(rp.Child("nonResourceURLs").Index(j), u, msg))
				}
			}
			continue
		}
		for j, res := range r.GetResources() {
			if msg := ruleResourceProblem(res); msg != "" {
				errs = append(errs, field.Invalid(rp.Child("resources").Index(j), res, msg))
			}
		}
		if len(r.GetApiGroups()) == 0 {
			errs = append(errs, field.Required(rp.Child("apiGroups"), `resource rules must supply at least one api group ("" is the core group)`))
		}
		if len(r.GetResources()) == 0 {
			errs = append(errs, field.Required(rp.Child("resources"), "resource rules must supply at least one resource"))
		}
	}
	return errs
}

// nonResourceURLProblem: a non-resource URL is a gRPC method path
// ("/skiff.discovery.v1.Discovery/Groups"), a prefix of paths ending in
// "*" ("/grpc.reflection.*"), or "*" for every path.
func nonResourceURLProblem(u string) string {
	switch {
	case u == "*":
		return ""
	case !strings.HasPrefix(u, "/"):
		return `must begin with "/" (a gRPC method, "/<service>/<method>") or be "*"`
	case strings.Contains(strings.TrimSuffix(u, "*"), "*"):
		return `"*" may only end a path (a prefix wildcard)`
	}
	return ""
}

// ruleResourceProblem: a rule's resource is "*" (every resource and
// subresource), a resource ("pods"), a subresource of one ("pods/status")
// or of every resource ("*/scale").
func ruleResourceProblem(res string) string {
	if res == "*" {
		return ""
	}
	name, sub, hasSub := strings.Cut(res, "/")
	switch {
	case name == "":
		return `must be "*", a resource ("pods"), "<resource>/<subresource>" or "*/<subresource>"`
	case hasSub && (sub == "" || strings.ContainsAny(sub, "/*")):
		return `a subresource must follow "/": "pods/status", "*/scale"`
	case !hasSub && strings.Contains(name, "*"):
		return `"*" stands alone, or for the resource before "/<subresource>"`
	case hasSub && name != "*" && strings.Contains(name, "*"):
		return `"*" stands alone, or for the resource before "/<subresource>"`
	}
	return ""
}

// Role validates a Role.
func Role(r *rbacv1.Role) field.ErrorList {
	errs := ObjectMeta(r.GetMetadata(), true, rbacNameFn, field.NewPath("metadata"))
	return append(errs, policyRules(r.GetRules(), true, field.NewPath("rules"))...)
}

// RoleUpdate validates an update of a Role.
func RoleUpdate(newR, oldR *rbacv1.Role) field.ErrorList {
	return ObjectMetaUpdate(newR.GetMetadata(), oldR.GetMetadata(), field.NewPath("metadata"))
}

// ClusterRole validates a ClusterRole.
func ClusterRole(r *rbacv1.ClusterRole) field.ErrorList {
	errs := ObjectMeta(r.GetMetadata(), false, rbacNameFn, field.NewPath("metadata"))
	errs = append(errs, policyRules(r.GetRules(), false, field.NewPath("rules"))...)
	if ar := r.GetAggregationRule(); ar != nil {
		ap := field.NewPath("aggregationRule", "clusterRoleSelectors")
		if len(ar.GetClusterRoleSelectors()) == 0 {
			errs = append(errs, field.Required(ap, "at least one clusterRoleSelector is required when aggregationRule is set"))
		}
		for i, sel := range ar.GetClusterRoleSelectors() {
			errs = append(errs, LabelSelector(sel, ap.Index(i))...)
		}
	}
	return errs
}

// ClusterRoleUpdate validates an update of a ClusterRole.
func ClusterRoleUpdate(newR, oldR *rbacv1.ClusterRole) field.ErrorList {
	return ObjectMetaUpdate(newR.GetMetadata(), oldR.GetMetadata(), field.NewPath("metadata"))
}

const rbacGroup = "rbac.authorization.k8s.io"

func roleRef(ref *rbacv1.RoleRef, namespaced bool, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	kinds := []string{"ClusterRole"}
	if namespaced {
		kinds = []string{"Role", "ClusterRole"}
	}
	if ref.GetApiGroup() != rbacGroup {
		errs = append(errs, field.NotSupported(p.Child("apiGroup"), ref.GetApiGroup(), []string{rbacGroup}))
	}
	if ref.GetKind() == "" {
		errs = append(errs, field.Required(p.Child("kind"), ""))
	} else {
		errs = append(errs, supported(ref.GetKind(), kinds, p.Child("kind"))...)
	}
	if ref.GetName() == "" {
		errs = append(errs, field.Required(p.Child("name"), ""))
	} else {
		errs = append(errs, invalidEach(p.Child("name"), ref.GetName(), rbacNameFn(ref.GetName()))...)
	}
	return errs
}

func subjects(subs []*rbacv1.Subject, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, s := range subs {
		sp := p.Index(i)
		if s.GetName() == "" {
			errs = append(errs, field.Required(sp.Child("name"), ""))
		}
		switch s.GetKind() {
		case "ServiceAccount":
			if s.GetApiGroup() != "" {
				errs = append(errs, field.NotSupported(sp.Child("apiGroup"), s.GetApiGroup(), []string{""}))
			}
			if s.GetNamespace() == "" {
				errs = append(errs, field.Required(sp.Child("namespace"), "the namespace of the ServiceAccount"))
			}
			if s.GetName() != "" {
				errs = append(errs, invalidEach(sp.Child("name"), s.GetName(), NameIsDNSSubdomain(s.GetName()))...)
			}
		case "User", "Group":
			if s.GetApiGroup() != rbacGroup {
				errs = append(errs, field.NotSupported(sp.Child("apiGroup"), s.GetApiGroup(), []string{rbacGroup}))
			}
		case "":
			errs = append(errs, field.Required(sp.Child("kind"), ""))
		default:
			errs = append(errs, field.NotSupported(sp.Child("kind"), s.GetKind(), []string{"ServiceAccount", "User", "Group"}))
		}
	}
	return errs
}

// RoleBinding validates a RoleBinding.
func RoleBinding(b *rbacv1.RoleBinding) field.ErrorList {
	errs := ObjectMeta(b.GetMetadata(), true, rbacNameFn, field.NewPath("metadata"))
	errs = append(errs, roleRef(b.GetRoleRef(), true, field.NewPath("roleRef"))...)
	return append(errs, subjects(b.GetSubjects(), field.NewPath("subjects"))...)
}

// RoleBindingUpdate validates an update of a RoleBinding: roleRef is immutable.
func RoleBindingUpdate(newB, oldB *rbacv1.RoleBinding) field.ErrorList {
	errs := ObjectMetaUpdate(newB.GetMetadata(), oldB.GetMetadata(), field.NewPath("metadata"))
	return append(errs, immutableRoleRef(newB.GetRoleRef(), oldB.GetRoleRef())...)
}

// ClusterRoleBinding validates a ClusterRoleBinding.
func ClusterRoleBinding(b *rbacv1.ClusterRoleBinding) field.ErrorList {
	errs := ObjectMeta(b.GetMetadata(), false, rbacNameFn, field.NewPath("metadata"))
	errs = append(errs, roleRef(b.GetRoleRef(), false, field.NewPath("roleRef"))...)
	return append(errs, subjects(b.GetSubjects(), field.NewPath("subjects"))...)
}

// ClusterRoleBindingUpdate validates an update of a ClusterRoleBinding.
func ClusterRoleBindingUpdate(newB, oldB *rbacv1.ClusterRoleBinding) field.ErrorList {
	errs := ObjectMetaUpdate(newB.GetMetadata(), oldB.GetMetadata(), field.NewPath("metadata"))
	return append(errs, immutableRoleRef(newB.GetRoleRef(), oldB.GetRoleRef())...)
}

func immutableRoleRef(n, o *rbacv1.RoleRef) field.ErrorList {
	if n.GetApiGroup() != o.GetApiGroup() || n.GetKind() != o.GetKind() || n.GetName() != o.GetName() {
		return field.ErrorList{field.Invalid(field.NewPath("roleRef"), n.GetKind()+"/"+n.GetName(), "cannot change roleRef: delete the binding and create a new one")}
	}
	return nil
}

// ServiceAccount validates a ServiceAccount.
func ServiceAccount(sa *corev1.ServiceAccount) field.ErrorList {
	return ObjectMeta(sa.GetMetadata(), true, NameIsDNSSubdomain, field.NewPath("metadata"))
}

// ServiceAccountUpdate validates an update of a ServiceAccount.
func ServiceAccountUpdate(newSA, oldSA *corev1.ServiceAccount) field.ErrorList {
	return ObjectMetaUpdate(newSA.GetMetadata(), oldSA.GetMetadata(), field.NewPath("metadata"))
}
