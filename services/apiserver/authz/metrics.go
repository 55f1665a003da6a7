package authz

import "github.com/prometheus/client_golang/prometheus"

// metrics of authorization. Label values are bounded: the modes, plus
// "privileged" (system:masters) and "none" (no mode allowed).
type metrics struct {
	decisions     *prometheus.CounterVec
	privileged    prometheus.Counter
	policyBuilds  prometheus.Counter
	nodeFallbacks prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		decisions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "apiserver_authorization_decisions_total",
			Help: "Authorization decisions by the mode that decided (privileged: a member of system:masters; none: no mode allowed) and decision (allowed, forbidden).",
		}, []string{"mode", "decision"}),
		policyBuilds: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "apiserver_authorization_rbac_policy_builds_total",
			Help: "Times the RBAC index was rebuilt after Roles, ClusterRoles or bindings changed.",
		}),
		nodeFallbacks: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "apiserver_authorization_node_reads_total",
			Help: "Pods read from storage by the node authorizer because its informer did not show the pod (or ConfigMap user) bound to the asking node: informer lag, or a refused request.",
		}),
	}
	m.privileged = m.decisions.WithLabelValues("privileged", "allowed")
	if reg != nil {
		reg.MustRegister(m.decisions, m.policyBuilds, m.nodeFallbacks)
	}
	return m
}
