package authz

import (
	"slices"
	"strings"

	"skiff.dev/internal/fields"
	rbacv1 "skiff.dev/proto/rbac/v1"
	"skiff.dev/services/apiserver/server"
)

// rule is a PolicyRule compiled for matching: "*" turned into flags,
// nonResourceURLs split into exact paths and prefixes. Rules are shared by
// every user whose roles hold them and never change.
type rule struct {
	verbs       []string
	anyVerb     bool
	groups      []string
	anyGroup    bool
	resources   []string // "pods", "pods/status", "*/scale"
	anyResource bool
	names       []string // resourceNames; empty: every name
	urls        []string // exact non-resource paths
	urlPrefixes []string // "/grpc.reflection.*" -> "/grpc.reflection."
	anyURL      bool
	src         *rbacv1.PolicyRule // what it was compiled from (escalation checks)
}

func compileRule(pr *rbacv1.PolicyRule) *rule {
	r := &rule{names: pr.GetResourceNames(), src: pr}
	r.verbs, r.anyVerb = starOr(pr.GetVerbs())
	r.groups, r.anyGroup = starOr(pr.GetApiGroups())
	r.resources, r.anyResource = starOr(pr.GetResources())
	for _, u := range pr.GetNonResourceUrls() {
		switch {
		case u == "*":
			r.anyURL = true
		case strings.HasSuffix(u, "*"):
			r.urlPrefixes = append(r.urlPrefixes, strings.TrimRight(u, "*"))
		default:
			r.urls = append(r.urls, u)
		}
	}
	return r
}

// starOr returns the list, or true when it holds "*".
func starOr(l []string) ([]string, bool) {
	if slices.Contains(l, "*") {
		return nil, true
	}
	return l, false
}

// request is what rules are matched against, read from a RequestInfo
// without allocating.
type request struct {
	resource    bool   // a resource request (else a non-resource path)
	verb        string // for non-resource paths: "get"
	group       string
	res, sub    string
	name        string // "" for creates, lists and watches without a metadata.name selector
	path        string // the gRPC method of a non-resource request
	namespace   string // the namespace a RoleBinding must be in to apply; "" = cluster scope
	clusterOnly bool   // only ClusterRoleBindings apply (cluster scope, all namespaces, paths)
}

// requestOf reads ri. Kubernetes' attributes, translated: a non-resource
// request (discovery, reflection) is verb "get" on its path; a create has
// no name (resourceNames never match it); a list or watch has the name of
// a metadata.name=<name> field selector; a Namespace is in itself, so a
// RoleBinding in namespace "a" may grant get on namespace "a".
func requestOf(ri *server.RequestInfo) request {
	if !ri.IsResource() {
		return request{verb: "get", path: ri.Path, clusterOnly: true}
	}
	q := request{resource: true, verb: ri.Verb, group: ri.APIGroup, res: ri.Resource, sub: ri.Subresource, name: ri.Name}
	switch ri.Verb {
	case "create":
		q.name = ""
	case "list", "watch":
		q.name = ""
		if strings.Contains(ri.FieldSelector, "metadata.name") {
			if sel, err := fields.Parse(ri.FieldSelector); err == nil {
				q.name, _ = sel.RequiresExactMatch("metadata.name")
			}
		}
	}
	switch {
	case ri.Namespaced:
		q.namespace = ri.Namespace
	case ri.APIGroup == "" && ri.Resource == "namespaces" && ri.Verb != "create":
		q.namespace = q.name
	}
	q.clusterOnly = q.namespace == ""
	return q
}

// allows says whether r grants q (Kubernetes' RuleAllows).
func (r *rule) allows(q *request) bool {
	if !r.anyVerb && !slices.Contains(r.verbs, q.verb) {
		return false
	}
	if !q.resource {
		return r.allowsPath(q.path)
	}
	return (r.anyGroup || slices.Contains(r.groups, q.group)) &&
		r.allowsResource(q.res, q.sub) &&
		(len(r.names) == 0 || (q.name != "" && slices.Contains(r.names, q.name)))
}

// allowsResource: "*" is every resource and subresource; "pods" is pods
// alone; "pods/status" the subresource; "*/scale" a subresource of any
// resource.
func (r *rule) allowsResource(res, sub string) bool {
	if r.anyResource {
		return true
	}
	for _, rr := range r.resources {
		if sub == "" {
			if rr == res {
				return true
			}
			continue
		}
		if len(rr) == len(res)+1+len(sub) && rr[len(res)] == '/' && strings.HasPrefix(rr, res) && strings.HasSuffix(rr, sub) {
			return true
		}
		if len(rr) == len(sub)+2 && strings.HasPrefix(rr, "*/") && strings.HasSuffix(rr, sub) {
			return true
		}
	}
	return false
}

// allowsPath matches a non-resource path: exactly, by a prefix ending in
// "*", or "*" for all.
func (r *rule) allowsPath(path string) bool {
	if r.anyURL || slices.Contains(r.urls, path) {
		return true
	}
	for _, p := range r.urlPrefixes {
		if strings.HasPrefix(path, p) {
			return true
		}
	}
	return false
}
