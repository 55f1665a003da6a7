package job

import "github.com/prometheus/client_golang/prometheus"

// metrics are Kubernetes' job controller metrics (subsystem job_controller).
type metrics struct {
	syncs        *prometheus.CounterVec   // job_controller_job_syncs_total{completion_mode,result,action}
	syncDuration *prometheus.HistogramVec // job_controller_job_sync_duration_seconds
	finished     *prometheus.CounterVec   // job_controller_jobs_finished_total{completion_mode,result,reason}
	podsFinished *prometheus.CounterVec   // job_controller_job_pods_finished_total{completion_mode,result}
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		syncs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Subsystem: "job_controller", Name: "job_syncs_total",
			Help: "The number of job syncs",
		}, []string{"completion_mode", "result", "action"}),
		syncDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Subsystem: "job_controller", Name: "job_sync_duration_seconds",
			Help:    "The time it took to sync a job",
			Buckets: prometheus.ExponentialBuckets(0.004, 2, 15),
		}, []string{"completion_mode", "result", "action"}),
		finished: prometheus.NewCounterVec(prometheus.CounterOpts{
			Subsystem: "job_controller", Name: "jobs_finished_total",
			Help: "The number of finished jobs",
		}, []string{"completion_mode", "result", "reason"}),
		podsFinished: prometheus.NewCounterVec(prometheus.CounterOpts{
			Subsystem: "job_controller", Name: "job_pods_finished_total",
			Help: "The number of finished Pods that are fully tracked",
		}, []string{"completion_mode", "result"}),
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{m.syncs, m.syncDuration, m.finished, m.podsFinished} {
			if err := reg.Register(c); err != nil {
				if are, ok := err.(prometheus.AlreadyRegisteredError); ok {
					switch v := are.ExistingCollector.(type) {
					case *prometheus.CounterVec:
						switch c {
						case m.syncs:
							m.syncs = v
						case m.finished:
							m.finished = v
						case m.podsFinished:
							m.podsFinished = v
						}
					case *prometheus.HistogramVec:
						m.syncDuration = v
					}
				}
			}
		}
	}
	return m
}
