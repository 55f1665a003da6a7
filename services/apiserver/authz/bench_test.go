package authz

import (
	"context"
	"fmt"
	"testing"

	corev1 "skiff.dev/proto/core/v1"
	rbacv1 "skiff.dev/proto/rbac/v1"
	"skiff.dev/services/apiserver/server"
	"skiff.dev/services/apiserver/user"
)

// benchPolicy is a cluster with ~100 bindings: 40 namespaces with a Role
// and two RoleBindings each, 20 ClusterRoleBindings, and the bootstrap
// policy.
func benchPolicy() *policy {
	var roles []*rbacv1.Role
	var rbs []*rbacv1.RoleBinding
	crs, crbs := bootstrapObjects()
	for i := range 40 {
		ns := fmt.Sprint("team-", i)
		roles = append(roles, role(ns, "deployer",
			pr("get list watch", "core", "pods pods/log configmaps events"),
			pr("create update delete", "apps", "deployments replicasets"),
			pr("get update", "core", "configmaps", "app-config")))
		rbs = append(rbs,
			roleBinding(ns, "devs", "Role", "deployer", groupSubject(fmt.Sprint("devs-", i))),
			roleBinding(ns, "viewers", "ClusterRole", "view", userSubject(fmt.Sprint("user-", i))))
	}
	for i := range 20 {
		crbs = append(crbs, clusterRoleBinding(fmt.Sprint("ops-", i), "view", groupSubject(fmt.Sprint("ops-", i))))
	}
	return newPolicy(roles, crs, rbs, crbs)
}

func benchAuthorizer(modes ...decider) *Authorizer {
	a := union(modes...)
	return a
}

func BenchmarkAuthorizeRBAC(b *testing.B) {
	r := &rbacAuthorizer{}
	r.cur.Store(benchPolicy())
	node := &nodeAuthorizer{}
	dev := &user.Info{Name: "dave", Groups: []string{"devs-7", "ops-3", user.AllAuthenticated}}
	cases := []struct {
		name string
		a    *Authorizer
		req  *server.RequestInfo
	}{
		{"RBAC/allowed by a RoleBinding", benchAuthorizer(r), as(dev, ri("create", "apps", "deployments", "", "team-7", "web"))},
		{"RBAC/allowed by a ClusterRoleBinding", benchAuthorizer(r), as(dev, ri("list", "", "pods", "", "team-30", ""))},
		{"Node,RBAC/allowed by RBAC", benchAuthorizer(node, r), as(dev, ri("create", "apps", "deployments", "", "team-7", "web"))},
		{"RBAC/denied", benchAuthorizer(r), as(dev, ri("delete", "", "nodes", "", "", "n1"))},
		{"system:masters", benchAuthorizer(r), as(user.UnsecuredInfo, ri("create", "", "configmaps", "", "team-7", "x"))},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			ctx := context.Background()
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					_ = c.a.Authorize(ctx, c.req)
				}
			})
		})
	}
}

func BenchmarkPolicyBuild(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		benchPolicy()
	}
}

func BenchmarkAuthorizeNode(b *testing.B) {
	var pods []*corev1.Pod
	for i := range 1000 {
		pods = append(pods, pod("team-a", fmt.Sprint("web-", i), fmt.Sprint("node-", i%10), "cfg"))
	}
	n, _ := startNodeAuthorizer(b, pods)
	r := &rbacAuthorizer{}
	r.cur.Store(benchPolicy())
	a := benchAuthorizer(n, r)
	node3 := &user.Info{Name: "system:node:node-3", Groups: []string{user.NodesGroup, user.AllAuthenticated}}
	for _, c := range []struct {
		name string
		req  *server.RequestInfo
	}{
		{"update status of its pod", as(node3, ri("update", "", "pods", "status", "team-a", "web-13"))},
		{"renew its Lease", as(node3, ri("update", "coordination.k8s.io", "leases", "", NodeLeaseNamespace, "node-3"))},
		{"get a ConfigMap of its pod", as(node3, ri("get", "", "configmaps", "", "team-a", "cfg"))},
	} {
		b.Run(c.name, func(b *testing.B) {
			ctx := context.Background()
			if err := a.Authorize(ctx, c.req); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				_ = a.Authorize(ctx, c.req)
			}
		})
	}
}
