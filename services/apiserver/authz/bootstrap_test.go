package authz

import (
	"testing"

	"google.golang.org/protobuf/proto"

	"skiff.dev/internal/validation"
	rbacv1 "skiff.dev/proto/rbac/v1"
	"skiff.dev/services/apiserver/server"
	"skiff.dev/services/apiserver/user"
)

func TestBootstrapPolicyIsValid(t *testing.T) {
	for i := range bootstrapPolicy {
		b := &bootstrapPolicy[i]
		if errs := validation.ClusterRole(b.clusterRole()); len(errs) > 0 {
			t.Errorf("ClusterRole %s: %v", b.name, errs)
		}
		if crb := b.binding(); crb != nil {
			if errs := validation.ClusterRoleBinding(crb); len(errs) > 0 {
				t.Errorf("ClusterRoleBinding %s: %v", b.name, errs)
			}
		}
	}
}

// The bootstrap policy, read as the users it is for.
func TestBootstrapPolicyGrants(t *testing.T) {
	crs, crbs := bootstrapObjects()
	// Users bound in namespace team-a to admin, edit and view.
	var rbs []*rbacv1.RoleBinding
	for _, r := range []string{"admin", "edit", "view"} {
		rbs = append(rbs, roleBinding("team-a", r, "ClusterRole", r, userSubject(r+"-user")))
	}
	p := newPolicy(nil, crs, rbs, crbs)
	authn := func(name string, groups ...string) *user.Info {
		return &user.Info{Name: name, Groups: append(groups, user.AllAuthenticated)}
	}
	sched, cm := authn(user.Scheduler), authn(user.ControllerManager)
	tests := []struct {
		name string
		req  *server.RequestInfo
		want bool
	}{
		{"anyone: discovery", as(authn("bob"), pathRI("/skiff.discovery.v1.Discovery/Resources")), true},
		{"anyone: reflection", as(authn("bob"), pathRI("/grpc.reflection.v1.ServerReflection/ServerReflectionInfo")), true},
		{"anonymous: the version", as(&user.Info{Name: user.Anonymous, Groups: []string{user.AllUnauthenticated}}, pathRI("/skiff.discovery.v1.Discovery/Version")), true},
		{"anonymous: not discovery", as(&user.Info{Name: user.Anonymous, Groups: []string{user.AllUnauthenticated}}, pathRI("/skiff.discovery.v1.Discovery/Groups")), false},

		{"view: reads pods", as(authn("view-user"), ri("list", "", "pods", "", "team-a", "")), true},
		{"view: reads pod logs", as(authn("view-user"), ri("get", "", "pods", "log", "team-a", "web")), true},
		{"view: no writes", as(authn("view-user"), ri("delete", "", "pods", "", "team-a", "web")), false},
		{"view: no RBAC", as(authn("view-user"), ri("list", rbacGroup, "roles", "", "team-a", "")), false},
		{"view: only its namespace", as(authn("view-user"), ri("list", "", "pods", "", "team-b", "")), false},
		{"edit: scales deployments", as(authn("edit-user"), ri("update", "apps", "deployments", "scale", "team-a", "web")), true},
		{"edit: reads (aggregates view)", as(authn("edit-user"), ri("get", "", "resourcequotas", "", "team-a", "q")), true},
		{"edit: no quota writes", as(authn("edit-user"), ri("update", "", "resourcequotas", "", "team-a", "q")), false},
		{"edit: no RBAC", as(authn("edit-user"), ri("create", rbacGroup, "rolebindings", "", "team-a", "b")), false},
		{"admin: RBAC in its namespace", as(authn("admin-user"), ri("create", rbacGroup, "rolebindings", "", "team-a", "b")), true},
		{"admin: edits (aggregates edit)", as(authn("admin-user"), ri("create", "apps", "deployments", "", "team-a", "web")), true},
		{"admin: reads (aggregates view through edit)", as(authn("admin-user"), ri("list", "", "events", "", "team-a", "")), true},
		{"cluster-admin: system:masters", as(authn("root", user.Masters), ri("delete", "", "nodes", "", "", "n1")), true},

		{"scheduler: watches pods", as(sched, ri("watch", "", "pods", "", "", "")), true},
		{"scheduler: binds", as(sched, ri("create", "", "pods", "binding", "team-a", "web")), true},
		{"scheduler: PodScheduled", as(sched, ri("update", "", "pods", "status", "team-a", "web")), true},
		{"scheduler: its Lease", as(sched, ri("update", "coordination.k8s.io", "leases", "", "kube-system", "skiff-scheduler")), true},
		{"scheduler: no pod writes", as(sched, ri("update", "", "pods", "", "team-a", "web")), false},
		{"scheduler: no node writes", as(sched, ri("update", "", "nodes", "", "", "n1")), false},
		{"controller-manager: creates pods", as(cm, ri("create", "", "pods", "", "team-a", "web-1")), true},
		{"controller-manager: replicaset status", as(cm, ri("update", "apps", "replicasets", "status", "team-a", "web")), true},
		{"controller-manager: taints nodes", as(cm, ri("update", "", "nodes", "", "", "n1")), true},
		{"controller-manager: node conditions", as(cm, ri("update", "", "nodes", "status", "", "n1")), true},
		{"controller-manager: quota status", as(cm, ri("update", "", "resourcequotas", "status", "team-a", "q")), true},
		{"controller-manager: finalizes namespaces", as(cm, ri("update", "", "namespaces", "status", "", "team-a")), true},
		{"controller-manager: empties a namespace", as(cm, ri("delete", rbacGroup, "rolebindings", "", "team-a", "b")), true},
		{"controller-manager: creates endpointslices", as(cm, ri("create", "discovery.k8s.io", "endpointslices", "", "team-a", "web-x1")), true},
		{"controller-manager: updates endpointslices", as(cm, ri("update", "discovery.k8s.io", "endpointslices", "", "team-a", "web-x1")), true},
		{"controller-manager: empties a namespace of endpointslices", as(cm, ri("deletecollection", "discovery.k8s.io", "endpointslices", "", "team-a", "")), true},
		{"controller-manager: empties a namespace of services", as(cm, ri("delete", "", "services", "", "team-a", "web")), true},
		{"controller-manager: reads RBAC", as(cm, ri("list", rbacGroup, "clusterroles", "", "", "")), true},
		{"controller-manager: no RBAC writes", as(cm, ri("update", rbacGroup, "clusterroles", "", "", "admin")), false},
		{"controller-manager: no webhook writes", as(cm, ri("delete", "admissionregistration.k8s.io", "validatingwebhookconfigurations", "", "", "w")), false},
		{"controller-manager: creates no nodes", as(cm, ri("create", "", "nodes", "", "", "n2")), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u := tt.req.User
			q := requestOf(tt.req)
			if got := p.grants(u.Name, u.Groups).allows(&q); got != tt.want {
				t.Errorf("%s: allowed %v, want %v", u.Name, got, tt.want)
			}
		})
	}
}

// bootstrapObjects are the bootstrap policy's ClusterRoles and bindings.
func bootstrapObjects() (crs []*rbacv1.ClusterRole, crbs []*rbacv1.ClusterRoleBinding) {
	for i := range bootstrapPolicy {
		crs = append(crs, bootstrapPolicy[i].clusterRole())
		if b := bootstrapPolicy[i].binding(); b != nil {
			crbs = append(crbs, b)
		}
	}
	return crs, crbs
}

func TestMergeKeepsUserAdditions(t *testing.T) {
	want := bootstrapPolicy[0].clusterRole() // cluster-admin
	cur := proto.Clone(want).(*rbacv1.ClusterRole)
	cur.Rules = []*rbacv1.PolicyRule{pr("get", "example.com", "widgets")}
	cur.Metadata.Labels = map[string]string{labelBootstrapping: "mine", "team": "x"}
	next, what := mergeClusterRole(cur, want)
	if what != update || len(next.Rules) != 1+len(want.Rules) || !proto.Equal(next.Rules[0], cur.Rules[0]) {
		t.Fatalf("%v: rules %v", what, next.Rules)
	}
	if next.Metadata.Labels[labelBootstrapping] != "mine" || next.Metadata.Labels["team"] != "x" {
		t.Errorf("labels %v: the user's values must stay", next.Metadata.Labels)
	}
	if _, what := mergeClusterRole(next, want); what != unchanged {
		t.Errorf("merging again: %v, want unchanged", what)
	}

	crb := bootstrapPolicy[0].binding()
	mine := proto.Clone(crb).(*rbacv1.ClusterRoleBinding)
	mine.Subjects = []*rbacv1.Subject{userSubject("alice")}
	next2, what := mergeClusterRoleBinding(mine, crb)
	if what != update || len(next2.Subjects) != 2 {
		t.Errorf("%v: subjects %v, want alice and system:masters", what, next2.Subjects)
	}
	mine.RoleRef = &rbacv1.RoleRef{ApiGroup: rbacGroup, Kind: "ClusterRole", Name: "view"}
	if _, what := mergeClusterRoleBinding(mine, crb); what != replace {
		t.Errorf("another roleRef: %v, want replace", what)
	}
}
