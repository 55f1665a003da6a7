package authz

import (
	"fmt"
	"testing"

	metav1 "skiff.dev/proto/meta/v1"
	rbacv1 "skiff.dev/proto/rbac/v1"
	"skiff.dev/services/apiserver/server"
	"skiff.dev/services/apiserver/user"
)

func role(ns, name string, rules ...*rbacv1.PolicyRule) *rbacv1.Role {
	return &rbacv1.Role{Metadata: &metav1.ObjectMeta{Namespace: ns, Name: name}, Rules: rules}
}

func clusterRole(name string, labels map[string]string, agg []map[string]string, rules ...*rbacv1.PolicyRule) *rbacv1.ClusterRole {
	cr := &rbacv1.ClusterRole{Metadata: &metav1.ObjectMeta{Name: name, Labels: labels}, Rules: rules}
	if agg != nil {
		cr.AggregationRule = &rbacv1.AggregationRule{}
		for _, m := range agg {
			cr.AggregationRule.ClusterRoleSelectors = append(cr.AggregationRule.ClusterRoleSelectors, &metav1.LabelSelector{MatchLabels: m})
		}
	}
	return cr
}

func userSubject(name string) *rbacv1.Subject {
	return &rbacv1.Subject{Kind: "User", ApiGroup: rbacGroup, Name: name}
}

func groupSubject(name string) *rbacv1.Subject {
	return &rbacv1.Subject{Kind: "Group", ApiGroup: rbacGroup, Name: name}
}

func roleBinding(ns, name, kind, roleName string, subjects ...*rbacv1.Subject) *rbacv1.RoleBinding {
	return &rbacv1.RoleBinding{Metadata: &metav1.ObjectMeta{Namespace: ns, Name: name},
		RoleRef: &rbacv1.RoleRef{ApiGroup: rbacGroup, Kind: kind, Name: roleName}, Subjects: subjects}
}

func clusterRoleBinding(name, roleName string, subjects ...*rbacv1.Subject) *rbacv1.ClusterRoleBinding {
	return &rbacv1.ClusterRoleBinding{Metadata: &metav1.ObjectMeta{Name: name},
		RoleRef: &rbacv1.RoleRef{ApiGroup: rbacGroup, Kind: "ClusterRole", Name: roleName}, Subjects: subjects}
}

func as(u *user.Info, req *server.RequestInfo) *server.RequestInfo {
	req.User = u
	return req
}

func TestPolicyGrants(t *testing.T) {
	p := newPolicy(
		[]*rbacv1.Role{
			role("team-a", "pod-reader", pr("get list watch", "core", "pods")),
			role("team-a", "config-editor", pr("get update", "core", "configmaps", "app-config")),
			role("team-b", "pod-reader", pr("get list watch", "core", "pods")),
		},
		[]*rbacv1.ClusterRole{
			clusterRole("node-reader", nil, nil, pr("get list watch", "core", "nodes")),
			clusterRole("deployer", nil, nil, pr("create update delete", "apps", "deployments")),
			clusterRole("view", nil, []map[string]string{{"aggregate-to-view": "true"}}, pr("get", "core", "pods")),
			clusterRole("view-configmaps", map[string]string{"aggregate-to-view": "true"}, nil, pr("get", "core", "configmaps")),
			clusterRole("edit", nil, []map[string]string{{"aggregate-to-edit": "true"}}, pr("create", "core", "pods")),
			clusterRole("view-for-edit", map[string]string{"aggregate-to-edit": "true"}, []map[string]string{{"aggregate-to-view": "true"}}),
			clusterRole("loop-a", map[string]string{"loop": "b"}, []map[string]string{{"loop": "a"}}, pr("get", "core", "events")),
			clusterRole("loop-b", map[string]string{"loop": "a"}, []map[string]string{{"loop": "b"}}, pr("list", "core", "events")),
			clusterRole("discovery", nil, nil, urlRule("get", "/skiff.discovery.v1.Discovery/*")),
		},
		[]*rbacv1.RoleBinding{
			roleBinding("team-a", "bob-reads-pods", "Role", "pod-reader", userSubject("bob")),
			roleBinding("team-a", "bob-edits-config", "Role", "config-editor", userSubject("bob")),
			roleBinding("team-a", "devs-deploy", "ClusterRole", "deployer", groupSubject("devs")),
			roleBinding("team-a", "sa-reads-pods", "Role", "pod-reader", &rbacv1.Subject{Kind: "ServiceAccount", Namespace: "team-a", Name: "builder"}),
			roleBinding("team-a", "ghost", "Role", "does-not-exist", userSubject("bob")),
			roleBinding("team-a", "discovery-in-a-namespace", "ClusterRole", "discovery", userSubject("carol")),
		},
		[]*rbacv1.ClusterRoleBinding{
			clusterRoleBinding("ops-read-nodes", "node-reader", groupSubject("ops")),
			clusterRoleBinding("carol-views", "view", userSubject("carol")),
			clusterRoleBinding("dave-edits", "edit", userSubject("dave")),
			clusterRoleBinding("erin-loops", "loop-a", userSubject("erin")),
		},
	)
	bob := &user.Info{Name: "bob", Groups: []string{user.AllAuthenticated}}
	dev := &user.Info{Name: "frank", Groups: []string{"devs", user.AllAuthenticated}}
	op := &user.Info{Name: "olga", Groups: []string{"ops"}}
	sa := &user.Info{Name: "system:serviceaccount:team-a:builder", Groups: []string{user.ServiceAccountsAll}}
	carol := &user.Info{Name: "carol"}
	dave := &user.Info{Name: "dave"}
	erin := &user.Info{Name: "erin"}
	tests := []struct {
		name string
		req  *server.RequestInfo
		want bool
	}{
		{"a Role grants in its namespace", as(bob, ri("list", "", "pods", "", "team-a", "")), true},
		{"a Role grants nothing in another namespace", as(bob, ri("list", "", "pods", "", "team-b", "")), false},
		{"a Role grants nothing across namespaces", as(bob, ri("list", "", "pods", "", "", "")), false},
		{"a Role grants only its verbs", as(bob, ri("delete", "", "pods", "", "team-a", "web")), false},
		{"resourceNames: the named object", as(bob, ri("update", "", "configmaps", "", "team-a", "app-config")), true},
		{"resourceNames: another object", as(bob, ri("update", "", "configmaps", "", "team-a", "other")), false},
		{"a binding to a missing role grants nothing", as(&user.Info{Name: "nobody"}, ri("get", "", "pods", "", "team-a", "x")), false},
		{"a RoleBinding of a ClusterRole grants in its namespace", as(dev, ri("create", "apps", "deployments", "", "team-a", "web")), true},
		{"... and only there", as(dev, ri("create", "apps", "deployments", "", "team-b", "web")), false},
		{"a group's ClusterRoleBinding grants cluster-wide", as(op, ri("list", "", "nodes", "", "", "")), true},
		{"... only its rules", as(op, ri("delete", "", "nodes", "", "", "n1")), false},
		{"a ServiceAccount subject is its user", as(sa, ri("get", "", "pods", "", "team-a", "x")), true},
		{"the ServiceAccount elsewhere", as(sa, ri("get", "", "pods", "", "team-b", "x")), false},
		{"aggregation: own rules", as(carol, ri("get", "", "pods", "", "team-b", "x")), true},
		{"aggregation: a selected role's rules", as(carol, ri("get", "", "configmaps", "", "team-b", "x")), true},
		{"aggregation: transitively", as(dave, ri("get", "", "configmaps", "", "team-b", "x")), true},
		{"aggregation: not what no role holds", as(dave, ri("delete", "", "configmaps", "", "team-b", "x")), false},
		{"aggregation: a cycle ends", as(erin, ri("list", "", "events", "", "x", "")), true},
		{"paths of a ClusterRole bound in a namespace are ignored", as(carol, pathRI("/skiff.discovery.v1.Discovery/Groups")), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := requestOf(tt.req)
			u := tt.req.User
			if got := p.grants(u.Name, u.Groups).allows(&q); got != tt.want {
				t.Errorf("%s: allowed %v, want %v", u.Name, got, tt.want)
			}
			// Cached: the same answer.
			if got := p.grants(u.Name, u.Groups).allows(&q); got != tt.want {
				t.Errorf("%s (cached): allowed %v, want %v", u.Name, got, tt.want)
			}
		})
	}
}

func TestPolicyCacheKeepsUsersApart(t *testing.T) {
	p := newPolicy(nil,
		[]*rbacv1.ClusterRole{clusterRole("r", nil, nil, pr("get", "core", "pods"))},
		nil,
		[]*rbacv1.ClusterRoleBinding{clusterRoleBinding("b", "r", groupSubject("g"))})
	q := requestOf(ri("get", "", "pods", "", "a", "x"))
	// The same name with and without the group, and groups that would
	// collide if joined without a separator.
	for _, c := range []struct {
		groups []string
		want   bool
	}{
		{[]string{"g"}, true},
		{nil, false},
		{[]string{"g", "h"}, true},
		{[]string{"gh"}, false},
		{[]string{"g"}, true},
	} {
		if got := p.grants("u", c.groups).allows(&q); got != c.want {
			t.Errorf("user u in %v: allowed %v, want %v", c.groups, got, c.want)
		}
	}
}

func TestPolicyCacheIsBounded(t *testing.T) {
	p := newPolicy(nil, nil, nil, nil)
	for i := range maxCachedUsers + 10 {
		p.grants(fmt.Sprint("user-", i), nil)
	}
	if n := p.users.n; n != maxCachedUsers {
		t.Errorf("%d users cached, want the cap %d", n, maxCachedUsers)
	}
}
