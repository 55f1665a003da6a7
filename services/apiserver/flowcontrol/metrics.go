package flowcontrol

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"skiff.dev/internal/promutil"
)

// metrics are the apiserver_flowcontrol_* series, named as Kubernetes'
// API Priority and Fairness names them, with a request_kind label
// (readOnly, mutating) for the two kinds of seats.
type metrics struct {
	executing      *prometheus.GaugeVec
	executingSeats *prometheus.GaugeVec
	estimatedSeats *prometheus.HistogramVec
	inQueue        *prometheus.GaugeVec
	rejected       *prometheus.CounterVec
	wait           *prometheus.HistogramVec
	dispatched     *prometheus.CounterVec
	nominal        *prometheus.GaugeVec
}

func newMetrics(reg prometheus.Registerer) *metrics {
	labels := []string{"priority_level", "flow_schema", "request_kind"}
	return &metrics{
		executing: promutil.MustRegister(reg, prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "apiserver_flowcontrol_current_executing_requests",
			Help: "Requests holding a seat, by priority level, flow schema and request kind (readOnly, mutating).",
		}, labels)),
		executingSeats: promutil.MustRegister(reg, prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "apiserver_flowcontrol_current_executing_seats",
			Help: "Seats held by executing requests (a List of many objects holds several), by priority level, flow schema and request kind.",
		}, labels)),
		estimatedSeats: promutil.MustRegister(reg, prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "apiserver_flowcontrol_work_estimated_seats",
			Help:    "Seats requests need, by their work estimate (one per 100 objects a List reads, at least 1, at most 10 or the seats one user may hold), by priority level and flow schema.",
			Buckets: []float64{1, 2, 4, 10},
		}, labels[:2])),
		inQueue: promutil.MustRegister(reg, prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "apiserver_flowcontrol_current_inqueue_requests",
			Help: "Requests waiting in a queue for a seat, by priority level, flow schema and request kind.",
		}, labels)),
		rejected: promutil.MustRegister(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "apiserver_flowcontrol_rejected_requests_total",
			Help: "Requests refused (ResourceExhausted) or abandoned while waiting, by priority level, flow schema, request kind and reason (queue-full, time-out, cancelled).",
		}, append(labels, "reason"))),
		wait: promutil.MustRegister(reg, prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "apiserver_flowcontrol_request_wait_duration_seconds",
			Help:    "Time requests waited for a seat (0 when one was free), by priority level, flow schema, request kind and whether they then executed.",
			Buckets: []float64{0, 0.001, 0.005, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 15, 30},
		}, append(labels, "execute"))),
		dispatched: promutil.MustRegister(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "apiserver_flowcontrol_dispatched_requests_total",
			Help: "Requests given a seat (exempt ones included), by priority level, flow schema and request kind.",
		}, labels)),
		nominal: promutil.MustRegister(reg, prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "apiserver_flowcontrol_nominal_limit_seats",
			Help: "Seats of each priority level and request kind (--max-requests-inflight, --max-mutating-requests-inflight).",
		}, []string{"priority_level", "request_kind"})),
	}
}

// series are one flow schema's metrics for one kind of request, resolved
// once, with the seats they draw from.
type series struct {
	seats          *seats
	level          string
	kind           string
	executing      prometheus.Gauge
	executingSeats prometheus.Gauge
	estimatedSeats prometheus.Observer
	inQueue        prometheus.Gauge
	dispatched     prometheus.Counter
	waitExec       prometheus.Observer
	waitRefused    prometheus.Observer
	rejected       [cancelled + 1]prometheus.Counter // by outcome; [dispatched] unused
}

func (m *metrics) series(sc schema, k kind, p *seats) *series {
	l := []string{schemas[sc].level, schemas[sc].name, kindNames[k]}
	s := &series{
		seats:          p,
		level:          l[0],
		kind:           l[2],
		executing:      m.executing.WithLabelValues(l...),
		executingSeats: m.executingSeats.WithLabelValues(l...),
		estimatedSeats: m.estimatedSeats.WithLabelValues(l[:2]...),
		inQueue:        m.inQueue.WithLabelValues(l...),
		dispatched:     m.dispatched.WithLabelValues(l...),
		waitExec:       m.wait.WithLabelValues(append(l, "true")...),
		waitRefused:    m.wait.WithLabelValues(append(l, "false")...),
	}
	s.rejected[queueFull] = m.rejected.WithLabelValues(append(l, "queue-full")...)
	s.rejected[timedOut] = m.rejected.WithLabelValues(append(l, "time-out")...)
	s.rejected[cancelled] = m.rejected.WithLabelValues(append(l, "cancelled")...)
	return s
}

// admitted counts a request that executes after waiting d (0: at once);
// the executing gauge counts its seat from when the seat was taken.
func (s *series) admitted(d time.Duration) {
	s.dispatched.Inc()
	s.waitExec.Observe(d.Seconds())
}
