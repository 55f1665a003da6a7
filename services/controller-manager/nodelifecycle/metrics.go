package nodelifecycle

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
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
		m.evictions = register(reg, m.evictions)
		m.transitions = register(reg, m.transitions)
	}
	return m
}

// register registers c, or returns the collector already registered under
// its name (two controllers sharing a registry share the metric).
func register(reg prometheus.Registerer, c *prometheus.CounterVec) *prometheus.CounterVec {
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if existing, ok := are.ExistingCollector.(*prometheus.CounterVec); ok {
				return existing
			}
		}
		panic(err)
	}
	return c
}
