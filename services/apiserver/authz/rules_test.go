package authz

import (
	"strings"
	"testing"

	rbacv1 "skiff.dev/proto/rbac/v1"
	"skiff.dev/services/apiserver/server"
)

// pr builds a PolicyRule from space-separated lists ("-" for an empty
// list; "core" is the core group).
func pr(verbs, groups, resources string, names ...string) *rbacv1.PolicyRule {
	list := func(s string) []string {
		if s == "-" {
			return nil
		}
		l := strings.Fields(s)
		for i, x := range l {
			if x == "core" {
				l[i] = ""
			}
		}
		return l
	}
	return &rbacv1.PolicyRule{Verbs: list(verbs), ApiGroups: list(groups), Resources: list(resources), ResourceNames: names}
}

func urlRule(verbs string, urls ...string) *rbacv1.PolicyRule {
	return &rbacv1.PolicyRule{Verbs: strings.Fields(verbs), NonResourceUrls: urls}
}

// ri is a resource request.
func ri(verb, group, resource, sub, ns, name string) *server.RequestInfo {
	return &server.RequestInfo{Verb: verb, APIGroup: group, Resource: resource, Subresource: sub, Namespaced: ns != "" || resource == "pods", Namespace: ns, Name: name}
}

func pathRI(path string) *server.RequestInfo {
	svc, method, _ := strings.Cut(strings.TrimPrefix(path, "/"), "/")
	return &server.RequestInfo{Path: path, Subresource: svc, Verb: strings.ToLower(method)}
}

func TestRuleAllows(t *testing.T) {
	tests := []struct {
		name string
		rule *rbacv1.PolicyRule
		req  *server.RequestInfo
		want bool
	}{
		{"verb, group and resource", pr("get list", "core", "pods"), ri("list", "", "pods", "", "a", ""), true},
		{"another verb", pr("get list", "core", "pods"), ri("delete", "", "pods", "", "a", "x"), false},
		{"another group", pr("get", "apps", "pods"), ri("get", "", "pods", "", "a", "x"), false},
		{"another resource", pr("get", "core", "pods"), ri("get", "", "configmaps", "", "a", "x"), false},
		{"* verbs", pr("*", "core", "pods"), ri("delete", "", "pods", "", "a", "x"), true},
		{"* groups", pr("get", "*", "deployments"), ri("get", "apps", "deployments", "", "a", "x"), true},
		{"* resources include subresources", pr("update", "core", "*"), ri("update", "", "pods", "status", "a", "x"), true},
		{"a resource is not its subresources", pr("update", "core", "pods"), ri("update", "", "pods", "status", "a", "x"), false},
		{"a subresource is not its resource", pr("update", "core", "pods/status"), ri("update", "", "pods", "", "a", "x"), false},
		{"resource/subresource", pr("update", "core", "pods/status"), ri("update", "", "pods", "status", "a", "x"), true},
		{"another subresource", pr("update", "core", "pods/status"), ri("create", "", "pods", "binding", "a", "x"), false},
		{"*/subresource", pr("get update", "apps", "*/scale"), ri("update", "apps", "replicasets", "scale", "a", "x"), true},
		{"*/subresource is not the resource", pr("get", "apps", "*/scale"), ri("get", "apps", "replicasets", "", "a", "x"), false},
		{"resource with a prefix of the subresource's", pr("get", "core", "pod/status"), ri("get", "", "pods", "status", "a", "x"), false},
		{"resourceNames: the name", pr("get update", "core", "configmaps", "app-config"), ri("get", "", "configmaps", "", "a", "app-config"), true},
		{"resourceNames: another name", pr("get", "core", "configmaps", "app-config"), ri("get", "", "configmaps", "", "a", "other"), false},
		{"resourceNames: not a create", pr("create", "core", "configmaps", "app-config"), ri("create", "", "configmaps", "", "a", "app-config"), false},
		{"resourceNames: not a plain list", pr("list", "core", "configmaps", "app-config"), ri("list", "", "configmaps", "", "a", ""), false},
		{"resourceNames: a list by metadata.name", pr("list", "core", "configmaps", "app-config"),
			&server.RequestInfo{Verb: "list", Resource: "configmaps", Namespaced: true, Namespace: "a", FieldSelector: "metadata.name=app-config"}, true},
		{"resourceNames: a list by another metadata.name", pr("list", "core", "configmaps", "app-config"),
			&server.RequestInfo{Verb: "list", Resource: "configmaps", Namespaced: true, Namespace: "a", FieldSelector: "metadata.name=x"}, false},
		{"path, exact", urlRule("get", "/skiff.discovery.v1.Discovery/Groups"), pathRI("/skiff.discovery.v1.Discovery/Groups"), true},
		{"path, prefix", urlRule("get", "/skiff.discovery.v1.Discovery/*"), pathRI("/skiff.discovery.v1.Discovery/Resources"), true},
		{"path, reflection prefix", urlRule("get", "/grpc.reflection.*"), pathRI("/grpc.reflection.v1.ServerReflection/ServerReflectionInfo"), true},
		{"path, another", urlRule("get", "/skiff.discovery.v1.Discovery/Version"), pathRI("/skiff.discovery.v1.Discovery/Groups"), false},
		{"path, *", urlRule("*", "*"), pathRI("/anything/At"), true},
		{"path rule and a resource", urlRule("*", "*"), ri("get", "", "pods", "", "a", "x"), false},
		{"resource rule and a path", pr("*", "*", "*"), pathRI("/skiff.discovery.v1.Discovery/Groups"), false},
		{"path rule, verb other than get", urlRule("post", "*"), pathRI("/skiff.discovery.v1.Discovery/Groups"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := requestOf(tt.req)
			if got := compileRule(tt.rule).allows(&q); got != tt.want {
				t.Errorf("rule %v allows %+v = %v, want %v", tt.rule, q, got, tt.want)
			}
		})
	}
}

func TestRequestScope(t *testing.T) {
	tests := []struct {
		name   string
		req    *server.RequestInfo
		wantNS string
	}{
		{"namespaced object", &server.RequestInfo{Verb: "get", Resource: "pods", Namespaced: true, Namespace: "a", Name: "x"}, "a"},
		{"list across namespaces", &server.RequestInfo{Verb: "list", Resource: "pods", Namespaced: true}, ""},
		{"cluster-scoped kind", &server.RequestInfo{Verb: "get", Resource: "nodes", Namespace: "ignored", Name: "n1"}, ""},
		{"a namespace is in itself", &server.RequestInfo{Verb: "get", Resource: "namespaces", Name: "a"}, "a"},
		{"creating a namespace is at the cluster scope", &server.RequestInfo{Verb: "create", Resource: "namespaces", Name: "a"}, ""},
		{"non-resource", pathRI("/skiff.discovery.v1.Discovery/Groups"), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := requestOf(tt.req)
			if q.namespace != tt.wantNS || q.clusterOnly != (tt.wantNS == "") {
				t.Errorf("namespace %q clusterOnly %v, want %q", q.namespace, q.clusterOnly, tt.wantNS)
			}
		})
	}
}

func TestCovers(t *testing.T) {
	have := compileRules([]*rbacv1.PolicyRule{
		pr("get list watch", "core", "pods configmaps"),
		pr("*", "apps", "deployments deployments/scale"),
		urlRule("get", "/grpc.reflection.*"),
	})
	tests := []struct {
		name string
		rule *rbacv1.PolicyRule
		want bool
	}{
		{"the same", pr("get list", "core", "pods"), true},
		{"a verb more", pr("get delete", "core", "pods"), false},
		{"* verbs are covered by * only", pr("*", "core", "pods"), false},
		{"covered by *", pr("*", "apps", "deployments"), true},
		{"a subresource covered", pr("update", "apps", "deployments/scale"), true},
		{"a subresource not covered", pr("update", "apps", "deployments/status"), false},
		{"named objects of a covered resource", pr("get", "core", "configmaps", "x"), true},
		{"a path", urlRule("get", "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo"), true},
		{"a prefix under the covered one", urlRule("get", "/grpc.reflection.v1*"), true},
		{"another path", urlRule("get", "/skiff.discovery.v1.Discovery/*"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := covers(have, tt.rule); got != tt.want {
				t.Errorf("covers(%v) = %v, want %v", tt.rule, got, tt.want)
			}
		})
	}
}
