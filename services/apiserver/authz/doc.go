// Package authz authorizes requests: the apiserver asks its Authorizer
// (a server.Authorizer) about every request once authentication has named
// the user, before the handler runs.
//
// Members of system:masters (the apiserver's loopback client; every user
// when authentication is off) are allowed at once. Other requests go to the
// modes of --authorization-mode in order; the first that allows or denies
// decides, one with no opinion passes the request on, and a request no mode
// allowed is Forbidden with a message that says who was denied what:
//
//	pods is forbidden: User "bob" cannot list resource "pods" in API group "" in the namespace "team-a"
//
// The files, in the order a request meets them:
//
//	options.go     --authorization-mode: AlwaysAllow, Node, RBAC
//	authorizer.go  the union of modes, the privileged group, denials
//	node.go        the node authorizer: a node agent's own Node, Lease, the
//	               pods bound to it and what they use
//	rules.go       a request's attributes; matching one PolicyRule (pure)
//	policy.go      the RBAC index: roles, aggregation, bindings by subject,
//	               grants per user (pure)
//	rbac.go        RBAC from informers; the index rebuilt after changes
//	bootstrap.go   the bootstrap ClusterRoles and bindings, as one table
//	reconcile.go   creating them, or adding what is missing (Kubernetes'
//	               autoupdate reconciliation)
//
// Usage: New(Config) builds it (nil when authorization is off); the
// apiserver runs Start in a post-start hook, which writes the bootstrap
// policy through the loopback connection and returns once the informers
// have listed. Until then, requests of other users are refused as
// Unavailable.
//
// The package owns no admission: what a request may change inside an
// object (a node setting another node's name in a pod) is admission's.
package authz
