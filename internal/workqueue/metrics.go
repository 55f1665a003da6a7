package workqueue

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"skiff.dev/internal/promutil"
)

// Metrics are the workqueue_* metrics of Kubernetes, labelled by queue name.
// One Metrics serves every queue of a process; queues that share a name
// share their series.
type Metrics struct {
	depth         *prometheus.GaugeVec
	adds          *prometheus.CounterVec
	retries       *prometheus.CounterVec
	queueDuration *prometheus.HistogramVec
	workDuration  *prometheus.HistogramVec
	inFlight      *inFlightCollector
}

// NewMetrics creates the metrics and registers them on reg (nil: not
// registered, still usable). Calling it again with the same reg returns
// a Metrics that shares the collectors already registered there.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	name := []string{"name"}
	// Kubernetes' buckets: 10ns to 10s, a decade each.
	buckets := prometheus.ExponentialBuckets(10e-9, 10, 10)
	m := &Metrics{
		depth: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "workqueue_depth", Help: "Keys waiting in the queue for a worker.",
		}, name),
		adds: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "workqueue_adds_total", Help: "Keys added to the queue (not counting adds of a key already waiting).",
		}, name),
		retries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "workqueue_retries_total", Help: "Rate-limited re-adds (AddRateLimited).",
		}, name),
		queueDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "workqueue_queue_duration_seconds", Help: "How long a key waits in the queue before a worker gets it.",
			Buckets: buckets,
		}, name),
		workDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "workqueue_work_duration_seconds", Help: "How long a worker holds a key, from Get to Done.",
			Buckets: buckets,
		}, name),
		inFlight: newInFlightCollector(),
	}
	if reg != nil {
		m.depth = promutil.MustRegister(reg, m.depth)
		m.adds = promutil.MustRegister(reg, m.adds)
		m.retries = promutil.MustRegister(reg, m.retries)
		m.queueDuration = promutil.MustRegister(reg, m.queueDuration)
		m.workDuration = promutil.MustRegister(reg, m.workDuration)
		m.inFlight = promutil.MustRegister(reg, m.inFlight)
	}
	return m
}

// queueMetrics is one queue's view of Metrics. Its methods are called with
// the queue's lock held.
type queueMetrics[K comparable] struct {
	clock         Clock
	depth         prometheus.Gauge
	adds          prometheus.Counter
	retries       prometheus.Counter
	queueDuration prometheus.Observer
	workDuration  prometheus.Observer

	addTimes   map[K]time.Time // dirty keys: when first added
	startTimes map[K]time.Time // processing keys: when handed out by Get
}

func newQueueMetrics[K comparable](m *Metrics, name string, clock Clock) queueMetrics[K] {
	return queueMetrics[K]{
		clock:         clock,
		depth:         m.depth.WithLabelValues(name),
		adds:          m.adds.WithLabelValues(name),
		retries:       m.retries.WithLabelValues(name),
		queueDuration: m.queueDuration.WithLabelValues(name),
		workDuration:  m.workDuration.WithLabelValues(name),
		addTimes:      make(map[K]time.Time),
		startTimes:    make(map[K]time.Time),
	}
}

func (m *queueMetrics[K]) added(k K) {
	m.adds.Inc()
	m.addTimes[k] = m.clock.Now()
}

func (m *queueMetrics[K]) queued() { m.depth.Inc() }

func (m *queueMetrics[K]) got(k K) {
	now := m.clock.Now()
	m.depth.Dec()
	if t, ok := m.addTimes[k]; ok {
		m.queueDuration.Observe(now.Sub(t).Seconds())
		delete(m.addTimes, k)
	}
	m.startTimes[k] = now
}

func (m *queueMetrics[K]) done(k K) {
	if t, ok := m.startTimes[k]; ok {
		m.workDuration.Observe(m.clock.Now().Sub(t).Seconds())
		delete(m.startTimes, k)
	}
}

// inFlight returns the seconds of work in progress, summed over keys, and
// the age of the oldest.
func (m *queueMetrics[K]) inFlight() (unfinished, longest float64) {
	now := m.clock.Now()
	for _, t := range m.startTimes {
		age := now.Sub(t).Seconds()
		unfinished += age
		longest = max(longest, age)
	}
	return unfinished, longest
}

// inFlightSource is a queue, as the collector of in-flight work sees it.
type inFlightSource interface {
	metricsName() string
	inFlight() (unfinished, longest float64)
}

// inFlightCollector computes workqueue_unfinished_work_seconds and
// workqueue_longest_running_processor_seconds at scrape time, so no
// goroutine has to refresh them.
type inFlightCollector struct {
	unfinished *prometheus.Desc
	longest    *prometheus.Desc

	mu     sync.Mutex
	queues map[inFlightSource]struct{}
}

func newInFlightCollector() *inFlightCollector {
	return &inFlightCollector{
		unfinished: prometheus.NewDesc("workqueue_unfinished_work_seconds",
			"Seconds of work in progress not yet observed by workqueue_work_duration_seconds, summed over keys; a large value with a small rate of Done means a stuck worker.",
			[]string{"name"}, nil),
		longest: prometheus.NewDesc("workqueue_longest_running_processor_seconds",
			"How long the longest-running worker has held its key.",
			[]string{"name"}, nil),
		queues: make(map[inFlightSource]struct{}),
	}
}

func (c *inFlightCollector) add(q inFlightSource) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.queues[q] = struct{}{}
}

func (c *inFlightCollector) remove(q inFlightSource) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.queues, q)
}

// Describe implements prometheus.Collector.
func (c *inFlightCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.unfinished
	ch <- c.longest
}

// Collect implements prometheus.Collector. Queues sharing a name are
// merged: their unfinished work adds up, the longest is the maximum.
func (c *inFlightCollector) Collect(ch chan<- prometheus.Metric) {
	type agg struct{ unfinished, longest float64 }
	byName := make(map[string]agg)
	c.mu.Lock()
	defer c.mu.Unlock()
	for q := range c.queues {
		u, l := q.inFlight()
		a := byName[q.metricsName()]
		byName[q.metricsName()] = agg{a.unfinished + u, max(a.longest, l)}
	}
	for name, a := range byName {
		ch <- prometheus.MustNewConstMetric(c.unfinished, prometheus.GaugeValue, a.unfinished, name)
		ch <- prometheus.MustNewConstMetric(c.longest, prometheus.GaugeValue, a.longest, name)
	}
}
