package garbagecollector

import (
	"github.com/prometheus/client_golang/prometheus"

	"skiff.dev/internal/promutil"
)

// metrics are the collector's garbagecollector_* metrics (the queues have
// the runner's workqueue_* and controller_* ones).
type metrics struct {
	nodes      prometheus.Gauge
	deletes    *prometheus.CounterVec // by propagation_policy
	refsGone   prometheus.Counter
	finalizers *prometheus.CounterVec // by finalizer
	lookups    *prometheus.CounterVec // by result
}

// Values of the result label of garbagecollector_owner_lookups_total.
const (
	lookupPresent = "present"
	lookupAbsent  = "absent"
	lookupError   = "error"
)

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		nodes: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "garbagecollector_graph_nodes", Help: "Objects in the ownerReference graph.",
		}),
		deletes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "garbagecollector_deletes_total", Help: "Deletes of dependents, by propagation policy.",
		}, []string{"propagation_policy"}),
		refsGone: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "garbagecollector_owner_references_removed_total", Help: "Updates that removed ownerReferences from a dependent (orphaned, or pointing to an owner that is gone).",
		}),
		finalizers: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "garbagecollector_finalizers_removed_total", Help: "Owners whose orphan or foregroundDeletion finalizer was removed, by finalizer.",
		}, []string{"finalizer"}),
		lookups: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "garbagecollector_owner_lookups_total", Help: "Live GETs of owners the graph did not know, by result (present, absent, error).",
		}, []string{"result"}),
	}
	if reg != nil {
		m.nodes = promutil.MustRegister(reg, m.nodes)
		m.deletes = promutil.MustRegister(reg, m.deletes)
		m.refsGone = promutil.MustRegister(reg, m.refsGone)
		m.finalizers = promutil.MustRegister(reg, m.finalizers)
		m.lookups = promutil.MustRegister(reg, m.lookups)
	}
	return m
}
