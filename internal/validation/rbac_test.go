package validation_test

import (
	"testing"

	"skiff.dev/internal/validation"
	metav1 "skiff.dev/proto/meta/v1"
	rbacv1 "skiff.dev/proto/rbac/v1"
)

func TestClusterRoleRules(t *testing.T) {
	cases := []struct {
		name string
		rule *rbacv1.PolicyRule
		want []string
	}{
		{"resources", &rbacv1.PolicyRule{Verbs: []string{"get"}, ApiGroups: []string{"", "apps"}, Resources: []string{"pods", "pods/status", "*/scale", "*"}}, nil},
		{"paths", &rbacv1.PolicyRule{Verbs: []string{"get"}, NonResourceUrls: []string{"/skiff.discovery.v1.Discovery/Groups", "/grpc.reflection.*", "*"}}, nil},
		{"no verbs", &rbacv1.PolicyRule{ApiGroups: []string{""}, Resources: []string{"pods"}}, []string{"rules[0].verbs: Required value"}},
		{"no api groups", &rbacv1.PolicyRule{Verbs: []string{"get"}, Resources: []string{"pods"}}, []string{"rules[0].apiGroups: Required value"}},
		{"no resources", &rbacv1.PolicyRule{Verbs: []string{"get"}, ApiGroups: []string{""}}, []string{"rules[0].resources: Required value"}},
		{"resources and paths", &rbacv1.PolicyRule{Verbs: []string{"get"}, ApiGroups: []string{""}, Resources: []string{"pods"}, NonResourceUrls: []string{"/x/Y"}}, []string{"rules[0].nonResourceURLs: Invalid value"}},
		{"a path without /", &rbacv1.PolicyRule{Verbs: []string{"get"}, NonResourceUrls: []string{"skiff.discovery.v1.Discovery/Groups"}}, []string{"rules[0].nonResourceURLs[0]: Invalid value"}},
		{"* inside a path", &rbacv1.PolicyRule{Verbs: []string{"get"}, NonResourceUrls: []string{"/skiff.*.v1/Groups"}}, []string{"rules[0].nonResourceURLs[0]: Invalid value"}},
		{"a subresource missing", &rbacv1.PolicyRule{Verbs: []string{"get"}, ApiGroups: []string{""}, Resources: []string{"pods/"}}, []string{"rules[0].resources[0]: Invalid value"}},
		{"a resource missing", &rbacv1.PolicyRule{Verbs: []string{"get"}, ApiGroups: []string{""}, Resources: []string{"/status"}}, []string{"rules[0].resources[0]: Invalid value"}},
		{"two subresources", &rbacv1.PolicyRule{Verbs: []string{"get"}, ApiGroups: []string{""}, Resources: []string{"pods/status/x"}}, []string{"rules[0].resources[0]: Invalid value"}},
		{"a resource wildcard prefix", &rbacv1.PolicyRule{Verbs: []string{"get"}, ApiGroups: []string{""}, Resources: []string{"po*"}}, []string{"rules[0].resources[0]: Invalid value"}},
		{"a subresource wildcard", &rbacv1.PolicyRule{Verbs: []string{"get"}, ApiGroups: []string{""}, Resources: []string{"pods/*"}}, []string{"rules[0].resources[0]: Invalid value"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cr := &rbacv1.ClusterRole{Metadata: &metav1.ObjectMeta{Name: "system:test"}, Rules: []*rbacv1.PolicyRule{c.rule}}
			expectErrors(t, validation.ClusterRole(cr), c.want)
		})
	}
}

func TestRoleRefusesPaths(t *testing.T) {
	r := &rbacv1.Role{Metadata: &metav1.ObjectMeta{Namespace: "a", Name: "r"},
		Rules: []*rbacv1.PolicyRule{{Verbs: []string{"get"}, NonResourceUrls: []string{"/skiff.discovery.v1.Discovery/Groups"}}}}
	expectErrors(t, validation.Role(r), []string{"rules[0].nonResourceURLs: Invalid value"})
}

func TestBindings(t *testing.T) {
	const group = "rbac.authorization.k8s.io"
	ref := func(kind string) *rbacv1.RoleRef { return &rbacv1.RoleRef{ApiGroup: group, Kind: kind, Name: "r"} }
	subjects := []*rbacv1.Subject{
		{Kind: "User", ApiGroup: group, Name: "system:node:n1"},
		{Kind: "Group", ApiGroup: group, Name: "system:nodes"},
		{Kind: "ServiceAccount", Namespace: "a", Name: "builder"},
	}
	rb := func(kind string, subs ...*rbacv1.Subject) *rbacv1.RoleBinding {
		return &rbacv1.RoleBinding{Metadata: &metav1.ObjectMeta{Namespace: "a", Name: "b"}, RoleRef: ref(kind), Subjects: subs}
	}
	expectErrors(t, validation.RoleBinding(rb("Role", subjects...)), nil)
	expectErrors(t, validation.RoleBinding(rb("ClusterRole", subjects...)), nil)
	expectErrors(t, validation.ClusterRoleBinding(&rbacv1.ClusterRoleBinding{Metadata: &metav1.ObjectMeta{Name: "b"}, RoleRef: ref("Role")}),
		[]string{"roleRef.kind: Unsupported value"})
	expectErrors(t, validation.RoleBinding(rb("Role", &rbacv1.Subject{Kind: "ServiceAccount", Name: "builder"})),
		[]string{"subjects[0].namespace: Required value"})
	expectErrors(t, validation.RoleBinding(rb("Role", &rbacv1.Subject{Kind: "Robot", ApiGroup: group, Name: "x"})),
		[]string{"subjects[0].kind: Unsupported value"})
	expectErrors(t, validation.RoleBindingUpdate(rb("ClusterRole"), rb("Role")), []string{"roleRef: Invalid value"})
}
