package nodelifecycle

import (
	"github.com/prometheus/client_golang/prometheus"

	"skiff.dev/internal/promutil"
)

// metrics of the node lifecycle controller.
type metrics struct {
	// evictions counts pod deletions, by kind: "taint" (a NoExecute taint
	// no longer tolerated) or "force" (a terminating pod on a node whose
	// agent is gone).
	evictions *prometheus.CounterVec
	// transitions counts node state changes the controller acted on, by
	// the state entered (Ready, NotReady, Unreachable).
	transitions *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		evictions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "nodelifecycle_evictions_total",
			Help: "Pods deleted by the node lifecycle controller, by kind (taint: a NoExecute taint no longer tolerated; force: terminating on a node whose agent is gone).",
		}, []string{"kind"}),
		transitions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "nodelifecycle_node_transitions_total",
			Help: "Node state changes the node lifecycle controller acted on, by the state entered.",
		}, []string{"state"}),
	}
	if reg != nil {
		m.evictions = promutil.MustRegister(reg, m.evictions)
		m.transitions = promutil.MustRegister(reg, m.transitions)
	}
	return m
}
