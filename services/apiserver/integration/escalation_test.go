package integration

import (
	"testing"

	"skiff.dev/internal/client"
	metav1 "skiff.dev/proto/meta/v1"
	rbacv1 "skiff.dev/proto/rbac/v1"
)

// TestAuthzNoEscalation: a user allowed to write Roles and RoleBindings
// may grant only what it holds, unless it may escalate or bind; an
// aggregating ClusterRole needs escalate.
func TestAuthzNoEscalation(t *testing.T) {
	s := startAuthorized(t)
	ctx := testContext(t)
	createNamespaces(t, s, "team")
	// carol may manage roles and bindings in team, and read pods there.
	mustCreate(t, client.Roles(s.Conn).Create, &rbacv1.Role{Metadata: objMeta("team", "rbac-manager"), Rules: []*rbacv1.PolicyRule{
		policyRule("create update get", rbacGroup, "roles rolebindings"),
		policyRule("get list", "", "pods"),
	}})
	mustCreate(t, client.RoleBindings(s.Conn).Create, &rbacv1.RoleBinding{Metadata: objMeta("team", "carol"),
		RoleRef: &rbacv1.RoleRef{ApiGroup: rbacGroup, Kind: "Role", Name: "rbac-manager"}, Subjects: []*rbacv1.Subject{subjectUser("carol")}})
	// A role an admin made that grants more than carol holds.
	mustCreate(t, client.Roles(s.Conn).Create, &rbacv1.Role{Metadata: objMeta("team", "pod-deleter"), Rules: []*rbacv1.PolicyRule{
		policyRule("delete", "", "pods"),
	}})
	carol := s.ConnAs(t, "carol")
	roles, bindings := client.Roles(carol), client.RoleBindings(carol)

	// What carol holds she may hand on.
	eventually(t, "carol may create a role she holds", func() error {
		_, err := roles.Create(ctx, &rbacv1.Role{Metadata: objMeta("team", "pod-reader"), Rules: []*rbacv1.PolicyRule{policyRule("get", "", "pods")}})
		return err
	})
	eventually(t, "carol may bind that role", func() error {
		_, err := bindings.Create(ctx, &rbacv1.RoleBinding{Metadata: objMeta("team", "dave-reads"),
			RoleRef: &rbacv1.RoleRef{ApiGroup: rbacGroup, Kind: "Role", Name: "pod-reader"}, Subjects: []*rbacv1.Subject{subjectUser("dave")}})
		return err
	})

	// What she does not hold, she may not.
	_, err := roles.Create(ctx, &rbacv1.Role{Metadata: objMeta("team", "pod-killer"), Rules: []*rbacv1.PolicyRule{policyRule("delete", "", "pods")}})
	denied(t, "create a role with delete pods", err, `User "carol" cannot create it: it would grant permissions the user does not hold in namespace team: {verbs [delete], apiGroups [""], resources [pods]}`)
	role, err := roles.Get(ctx, "team", "pod-reader")
	if err != nil {
		t.Fatal(err)
	}
	role.Rules = append(role.Rules, policyRule("get", "", "secrets"))
	_, err = roles.Update(ctx, role)
	denied(t, "add a rule she lacks by update", err, "resources [secrets]")
	_, err = bindings.Create(ctx, &rbacv1.RoleBinding{Metadata: objMeta("team", "carol-deletes"),
		RoleRef: &rbacv1.RoleRef{ApiGroup: rbacGroup, Kind: "Role", Name: "pod-deleter"}, Subjects: []*rbacv1.Subject{subjectUser("carol")}})
	denied(t, "bind a role granting more", err, "resources [pods]")
	_, err = bindings.Create(ctx, &rbacv1.RoleBinding{Metadata: objMeta("team", "carol-admin"),
		RoleRef: &rbacv1.RoleRef{ApiGroup: rbacGroup, Kind: "ClusterRole", Name: "cluster-admin"}, Subjects: []*rbacv1.Subject{subjectUser("carol")}})
	denied(t, "bind cluster-admin in her namespace", err, "does not hold in namespace team")

	// The bind verb on one role lets her bind exactly that one.
	mustCreate(t, client.Roles(s.Conn).Create, &rbacv1.Role{Metadata: objMeta("team", "binder"), Rules: []*rbacv1.PolicyRule{
		policyRule("bind", rbacGroup, "roles", "pod-deleter"),
	}})
	mustCreate(t, client.RoleBindings(s.Conn).Create, &rbacv1.RoleBinding{Metadata: objMeta("team", "carol-binds"),
		RoleRef: &rbacv1.RoleRef{ApiGroup: rbacGroup, Kind: "Role", Name: "binder"}, Subjects: []*rbacv1.Subject{subjectUser("carol")}})
	eventually(t, "carol may bind pod-deleter", func() error {
		_, err := bindings.Create(ctx, &rbacv1.RoleBinding{Metadata: objMeta("team", "erin-deletes"),
			RoleRef: &rbacv1.RoleRef{ApiGroup: rbacGroup, Kind: "Role", Name: "pod-deleter"}, Subjects: []*rbacv1.Subject{subjectUser("erin")}})
		return err
	})
	_, err = bindings.Create(ctx, &rbacv1.RoleBinding{Metadata: objMeta("team", "carol-admin-2"),
		RoleRef: &rbacv1.RoleRef{ApiGroup: rbacGroup, Kind: "ClusterRole", Name: "cluster-admin"}, Subjects: []*rbacv1.Subject{subjectUser("carol")}})
	denied(t, "bind on one role is not bind on others", err, "cluster-admin")

	// escalate lets her write any Role in team.
	mustCreate(t, client.Roles(s.Conn).Create, &rbacv1.Role{Metadata: objMeta("team", "escalator"), Rules: []*rbacv1.PolicyRule{
		policyRule("escalate", rbacGroup, "roles"),
	}})
	mustCreate(t, client.RoleBindings(s.Conn).Create, &rbacv1.RoleBinding{Metadata: objMeta("team", "carol-escalates"),
		RoleRef: &rbacv1.RoleRef{ApiGroup: rbacGroup, Kind: "Role", Name: "escalator"}, Subjects: []*rbacv1.Subject{subjectUser("carol")}})
	eventually(t, "carol may escalate roles", func() error {
		_, err := roles.Create(ctx, &rbacv1.Role{Metadata: objMeta("team", "pod-killer"), Rules: []*rbacv1.PolicyRule{policyRule("delete", "", "pods")}})
		return err
	})

	// A ClusterRole writer without escalate may not aggregate.
	mustCreate(t, client.ClusterRoles(s.Conn).Create, &rbacv1.ClusterRole{Metadata: objMeta("", "clusterrole-writer"), Rules: []*rbacv1.PolicyRule{
		policyRule("create", rbacGroup, "clusterroles"),
	}})
	mustCreate(t, client.ClusterRoleBindings(s.Conn).Create, &rbacv1.ClusterRoleBinding{Metadata: objMeta("", "frank-writes"),
		RoleRef: &rbacv1.RoleRef{ApiGroup: rbacGroup, Kind: "ClusterRole", Name: "clusterrole-writer"}, Subjects: []*rbacv1.Subject{subjectUser("frank")}})
	frank := client.ClusterRoles(s.ConnAs(t, "frank"))
	eventually(t, "frank may create an empty ClusterRole", func() error {
		_, err := frank.Create(ctx, &rbacv1.ClusterRole{Metadata: objMeta("", "empty")})
		return err
	})
	_, err = frank.Create(ctx, &rbacv1.ClusterRole{Metadata: objMeta("", "gatherer"), AggregationRule: &rbacv1.AggregationRule{
		ClusterRoleSelectors: []*metav1.LabelSelector{{MatchLabels: map[string]string{"anything": "true"}}}}})
	denied(t, "an aggregating ClusterRole", err, "aggregationRule")
}
