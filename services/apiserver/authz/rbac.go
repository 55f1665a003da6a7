package authz

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"google.golang.org/grpc"

	"skiff.dev/internal/client"
	"skiff.dev/internal/informer"
	"skiff.dev/internal/object"
	rbacv1 "skiff.dev/proto/rbac/v1"
	"skiff.dev/services/apiserver/server"
)

// rbacAuthorizer decides from Roles, ClusterRoles, RoleBindings and
// ClusterRoleBindings, read by informers on the loopback connection.
//
// Every change of an RBAC object bumps a generation; the next decision
// indexes the informers' stores into a new policy (policy.go) once, and
// every decision after that is a lookup of the user's grants (cached per
// user in the policy, so dropped with it) and a scan of their few rules.
type rbacAuthorizer struct {
	roles               *informer.Informer[*rbacv1.Role]
	clusterRoles        *informer.Informer[*rbacv1.ClusterRole]
	roleBindings        *informer.Informer[*rbacv1.RoleBinding]
	clusterRoleBindings *informer.Informer[*rbacv1.ClusterRoleBinding]

	gen    atomic.Uint64 // bumped by every change the informers see
	cur    atomic.Pointer[policy]
	mu     sync.Mutex // one build at a time
	builds prometheus.Counter
}

func newRBAC(conn grpc.ClientConnInterface, m *metrics, log *zap.Logger) *rbacAuthorizer {
	o := informer.Options{Logger: log}
	r := &rbacAuthorizer{
		roles:               informer.New(informer.FromClient(client.Roles(conn)), o),
		clusterRoles:        informer.New(informer.FromClient(client.ClusterRoles(conn)), o),
		roleBindings:        informer.New(informer.FromClient(client.RoleBindings(conn)), o),
		clusterRoleBindings: informer.New(informer.FromClient(client.ClusterRoleBindings(conn)), o),
		builds:              m.policyBuilds,
	}
	bump := func() { r.gen.Add(1) }
	onChange(r.roles, bump)
	onChange(r.clusterRoles, bump)
	onChange(r.roleBindings, bump)
	onChange(r.clusterRoleBindings, bump)
	return r
}

func onChange[T object.Object](inf *informer.Informer[T], f func()) {
	inf.AddHandler(informer.Handler[T]{
		OnAdd:    func(T) { f() },
		OnUpdate: func(_, _ T) { f() },
		OnDelete: func(T) { f() },
	})
}

// informers are what must sync before RBAC decides.
func (r *rbacAuthorizer) informers() []runner {
	return []runner{r.roles, r.clusterRoles, r.roleBindings, r.clusterRoleBindings}
}

// policy is the current index, rebuilt when the generation moved.
func (r *rbacAuthorizer) policy() *policy {
	g := r.gen.Load()
	if p := r.cur.Load(); p != nil && p.gen == g {
		return p
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	g = r.gen.Load() // read before the stores: a change after this bumps it again
	if p := r.cur.Load(); p != nil && p.gen == g {
		return p
	}
	p := newPolicy(r.roles.Store().List(), r.clusterRoles.Store().List(), r.roleBindings.Store().List(), r.clusterRoleBindings.Store().List())
	p.gen = g
	r.cur.Store(p)
	r.builds.Inc()
	return p
}

func (r *rbacAuthorizer) decide(_ context.Context, ri *server.RequestInfo) (Decision, string, error) {
	u := ri.User
	q := requestOf(ri)
	if r.policy().grants(u.Name, u.Groups).allows(&q) {
		return Allow, "", nil
	}
	return NoOpinion, "", nil
}
