package podgc

import (
	"github.com/prometheus/client_golang/prometheus"

	"skiff.dev/internal/promutil"
)

// metrics of the pod garbage collector, named as Kubernetes' (subsystem
// pod_gc_collector).
type metrics struct {
	// deletes counts pods force-deleted (or tried), by namespace and reason
	// (terminated, orphaned, unscheduled). A pod found gone already is not
	// counted.
	deletes *prometheus.CounterVec
	// errors counts the failed ones among them.
	errors *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		deletes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Subsystem: "pod_gc_collector",
			Name:      "force_delete_pods_total",
			Help:      "Number of pods that are being forcefully deleted since the Pod GC Controller started, by namespace and reason (terminated, orphaned, unscheduled).",
		}, []string{"namespace", "reason"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Subsystem: "pod_gc_collector",
			Name:      "force_delete_pod_errors_total",
			Help:      "Number of errors encountered when forcefully deleting the pods since the Pod GC Controller started, by namespace and reason.",
		}, []string{"namespace", "reason"}),
	}
	if reg != nil {
		m.deletes = promutil.MustRegister(reg, m.deletes)
		m.errors = promutil.MustRegister(reg, m.errors)
	}
	return m
}
