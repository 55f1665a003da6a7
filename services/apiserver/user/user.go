// Package user is who made a request, as authentication found it and as
// authorization, admission, fairness and audit see it (Kubernetes'
// user.Info): a name, a uid and groups.
package user

import (
	"context"
	"slices"
)

// Well-known users and groups, as in Kubernetes.
const (
	Anonymous           = "system:anonymous"
	APIServer           = "system:apiserver" // the apiserver's own loopback requests
	Unsecured           = "system:unsecured" // every request when authentication is off
	AllAuthenticated    = "system:authenticated"
	AllUnauthenticated  = "system:unauthenticated"
	Masters             = "system:masters" // may do everything (RBAC is not consulted)
	NodesGroup          = "system:nodes"
	NodeUserPrefix      = "system:node:"
	ServiceAccountsUser = "system:serviceaccount:"  // + namespace + ":" + name
	ServiceAccountsAll  = "system:serviceaccounts"  // every service account
	ServiceAccountsNS   = "system:serviceaccounts:" // + namespace
	Scheduler           = "system:kube-scheduler"
	ControllerManager   = "system:kube-controller-manager"
)

// Info is an authenticated (or anonymous) requester.
type Info struct {
	Name   string
	UID    string
	Groups []string
	// Authenticator names what proved the identity: "x509", "token",
	// "serviceaccount", "anonymous", "loopback", "insecure".
	Authenticator string
	// Extra is what else the authenticator knows (Kubernetes' user extra):
	// a pod-bound service-account token's authentication.kubernetes.io/pod-name
	// and pod-uid. Shared between requests: do not change it.
	Extra map[string][]string
}

// InGroup says whether the user is in group g.
func (u *Info) InGroup(g string) bool { return u != nil && slices.Contains(u.Groups, g) }

// NodeName is the node a node agent's identity names ("system:node:<name>"
// in group system:nodes), or "".
func (u *Info) NodeName() string {
	if u == nil || !u.InGroup(NodesGroup) || len(u.Name) <= len(NodeUserPrefix) || u.Name[:len(NodeUserPrefix)] != NodeUserPrefix {
		return ""
	}
	return u.Name[len(NodeUserPrefix):]
}

// String is the user's name, for logs and denials ("<nobody>" for nil).
func (u *Info) String() string {
	if u == nil {
		return "<nobody>"
	}
	return u.Name
}

type key struct{}

// With returns ctx carrying u.
func With(ctx context.Context, u *Info) context.Context { return context.WithValue(ctx, key{}, u) }

// From returns the user ctx carries, or nil.
func From(ctx context.Context) *Info {
	u, _ := ctx.Value(key{}).(*Info)
	return u
}

// UnsecuredInfo is every request's user when authentication is off (the
// --insecure development mode and in-process tests): a member of
// system:masters, as Kubernetes' old insecure port was.
var UnsecuredInfo = &Info{Name: Unsecured, Groups: []string{Masters, AllAuthenticated}, Authenticator: "insecure"}
