package cronjob

import (
	"github.com/prometheus/client_golang/prometheus"

	"skiff.dev/internal/promutil"
)

// metrics of the controller, named as Kubernetes' (subsystem
// cronjob_controller).
type metrics struct {
	// creationSkew is the time from a Job's schedule time to its creation.
	creationSkew prometheus.Histogram
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		creationSkew: prometheus.NewHistogram(prometheus.HistogramOpts{
			Subsystem: "cronjob_controller",
			Name:      "job_creation_skew_duration_seconds",
			Help:      "Time between when a cronjob is scheduled to be run, and when the corresponding job is created.",
			Buckets:   prometheus.ExponentialBuckets(1, 2, 10),
		}),
	}
	if reg != nil {
		m.creationSkew = promutil.MustRegister(reg, m.creationSkew)
	}
	return m
}
