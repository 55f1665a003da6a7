package events

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"google.golang.org/grpc"

	"skiff.dev/internal/object"
	corev1 "skiff.dev/proto/core/v1"
)

// EventClient is what a Broadcaster needs of the Events API;
// *client.Resource[*corev1.Event, *corev1.EventList] (client.Events(conn))
// satisfies it.
type EventClient interface {
	Create(ctx context.Context, ev *corev1.Event, opts ...grpc.CallOption) (*corev1.Event, error)
	Get(ctx context.Context, namespace, name string, opts ...grpc.CallOption) (*corev1.Event, error)
	Update(ctx context.Context, ev *corev1.Event, opts ...grpc.CallOption) (*corev1.Event, error)
}

// Defaults, as in Kubernetes' event correlator.
const (
	DefaultQPS               = 1.0 / 300 // one event per 5 minutes per object, once the burst is spent
	DefaultBurst             = 25
	DefaultAggregationWindow = 10 * time.Minute
	DefaultCacheSize         = 4096
	DefaultQueueSize         = 10000 // a burst of events (one per pod scheduled) waits here for the writers
	DefaultWriters           = 8     // concurrent writes to the apiserver
)

// writeTimeout bounds each call to the apiserver.
const writeTimeout = 10 * time.Second

// Config configures a Broadcaster. Zero fields take the defaults above.
type Config struct {
	Client    EventClient
	Component string // source.component of recorders made with NewRecorder("")
	Host      string // source.host and reportingInstance, e.g. the node or pod name

	// QPS and Burst shape the spam filter: a token bucket per source and
	// involved object.
	QPS   float64
	Burst int
	// AggregationWindow: a repeat of an event stored less than this before
	// increments that event's count instead of creating another.
	AggregationWindow time.Duration
	// CacheSize bounds the memory of recent events and of token buckets.
	CacheSize int
	// QueueSize bounds the events recorded but not yet taken by Run; each
	// writer holds up to 128 more, and one being written.
	QueueSize int
	// Writers is the number of goroutines writing to the apiserver. Writes
	// about one aggregated event (same object, source, type, reason and
	// message) all go to the same writer, in the order recorded.
	Writers int

	Clock      Clock                 // nil: the real clock
	Logger     *zap.Logger           // nil: no logs
	Registerer prometheus.Registerer // nil: metrics not registered
}

// Broadcaster queues the events its recorders record, correlates them in
// one goroutine (Run) and writes them to the apiserver from Config.Writers
// goroutines that Run starts and waits for.
type Broadcaster struct {
	cfg     Config
	log     *zap.Logger
	metrics *metrics
	queue   chan *corev1.Event

	mu     sync.RWMutex // guards closed and, with it, sends on queue
	closed bool

	runOnce sync.Once
	running chan struct{} // closed when Run starts
	done    chan struct{} // closed when Run returns

	// The spam filter is used by the Run goroutine only, the aggregation
	// memory by the writers (it locks itself).
	corr *correlator
	// Used by the Run goroutine only.
	lastName int64 // the unix nanoseconds of the last event name, kept increasing
}

// NewBroadcaster returns a Broadcaster; call Run to start writing.
func NewBroadcaster(cfg Config) (*Broadcaster, error) {
	if cfg.Client == nil {
		return nil, errors.New("events: Config.Client: required")
	}
	if cfg.QPS < 0 || cfg.Burst < 0 || cfg.AggregationWindow < 0 || cfg.CacheSize < 0 || cfg.QueueSize < 0 || cfg.Writers < 0 {
		return nil, errors.New("events: Config.QPS, Burst, AggregationWindow, CacheSize, QueueSize and Writers must not be negative")
	}
	if cfg.QPS == 0 {
		cfg.QPS = DefaultQPS
	}
	if cfg.Burst == 0 {
		cfg.Burst = DefaultBurst
	}
	if cfg.AggregationWindow == 0 {
		cfg.AggregationWindow = DefaultAggregationWindow
	}
	if cfg.CacheSize == 0 {
		cfg.CacheSize = DefaultCacheSize
	}
	if cfg.QueueSize == 0 {
		cfg.QueueSize = DefaultQueueSize
	}
	if cfg.Writers == 0 {
		cfg.Writers = DefaultWriters
	}
	if cfg.Clock == nil {
		cfg.Clock = realClock{}
	}
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	m, err := newMetrics(cfg.Registerer)
	if err != nil {
		return nil, fmt.Errorf("events: registering metrics: %w", err)
	}
	return &Broadcaster{
		cfg:     cfg,
		log:     cfg.Logger,
		metrics: m,
		queue:   make(chan *corev1.Event, cfg.QueueSize),
		running: make(chan struct{}),
		done:    make(chan struct{}),
		corr:    newCorrelator(cfg.QPS, cfg.Burst, cfg.AggregationWindow, cfg.CacheSize),
	}, nil
}

// NewRecorder returns a Recorder whose events have source.component
// component (Config.Component when empty).
func (b *Broadcaster) NewRecorder(component string) Recorder {
	if component == "" {
		component = b.cfg.Component
	}
	return &recorder{b: b, component: component}
}

// record builds an event and queues it without blocking.
func (b *Broadcaster) record(component string, obj object.Object, eventType, reason, message string) {
	if obj == nil || obj.GetMetadata().GetName() == "" {
		b.log.Error("event about an object without a name dropped", zap.String("reason", reason), zap.String("message", message))
		b.metrics.drop(dropInvalid)
		return
	}
	ref := RefOf(obj)
	if eventType != EventTypeNormal && eventType != EventTypeWarning {
		b.log.Error("event of an unsupported type dropped", zap.String("type", eventType), zap.String("reason", reason),
			zap.String("object", ref.Kind+" "+ref.Namespace+"/"+ref.Name))
		b.metrics.drop(dropInvalid)
		return
	}
	ev := b.newEvent(component, ref, eventType, reason, message)
	b.log.Debug("event", zap.String("object", ref.Kind+" "+ref.Namespace+"/"+ref.Name),
		zap.String("type", eventType), zap.String("reason", reason), zap.String("message", message))

	b.mu.RLock()
	defer b.mu.RUnlock()
	if b.closed {
		b.metrics.drop(dropShutdown)
		return
	}
	select {
	case b.queue <- ev:
		b.metrics.recorded.WithLabelValues(eventType).Inc()
	default:
		b.metrics.drop(dropQueueFull)
	}
}

// Run takes queued events in order, passes them through the spam filter,
// names them and hands them to its writers, until ctx is done (events still
// queued or handed over are abandoned, writes under way cancelled) or,
// after Shutdown, until the queue is empty and every event has been
// written: Run started after Shutdown still writes what was queued before
// it. Run returns once its writers have returned. Call it once, typically
// as `go b.Run(ctx)`.
func (b *Broadcaster) Run(ctx context.Context) {
	started := false
	b.runOnce.Do(func() { started = true })
	if !started {
		b.log.Error("events: Broadcaster.Run called twice")
		return
	}
	close(b.running)
	defer close(b.done)
	w := b.startWriters(ctx)
	defer w.stop()
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-b.queue:
			if !ok {
				return
			}
			if !b.corr.allow(ev) {
				b.metrics.drop(dropRateLimited)
				continue
			}
			ev.Metadata.Name = b.name(ev)
			if !w.send(ctx, ev) {
				return
			}
		}
	}
}

// Shutdown stops accepting events (later ones are dropped and counted)
// and, if Run is running, waits until it and its writers have written what
// is queued and returned. If Run has not started yet, Shutdown returns at
// once and the queue waits for it. Cancel Run's context to abandon the
// queue instead.
func (b *Broadcaster) Shutdown() {
	b.mu.Lock()
	if !b.closed {
		b.closed = true
		close(b.queue)
	}
	b.mu.Unlock()
	select {
	case <-b.running:
		<-b.done
	default:
	}
}
