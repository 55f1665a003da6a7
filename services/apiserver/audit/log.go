package audit

import (
	"context"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"google.golang.org/protobuf/proto"

	"skiff.dev/internal/object"
	"skiff.dev/internal/promutil"
	"skiff.dev/services/apiserver/server"
)

// Log is the audit log (a server.Auditor).
type Log struct {
	level Level
	omit  [8]string // omitted verbs (few: a linear scan beats a map)
	nOmit int
	ch    chan entry
	out   io.Writer
	log   *zap.Logger

	// stopMu orders Audit's sends against the writer's stop: once stopped
	// is set (under the write lock) no event enters ch any more.
	stopMu  sync.RWMutex
	stopped bool

	writeMu sync.Mutex // the writer's buffer and the file
	buf     []byte
	failing bool // the last write failed (log the change only)

	events    prometheus.Counter
	lost      prometheus.Counter
	lastWarn  atomic.Int64 // unix nanoseconds of the last "dropped" warning
	stopOnce  sync.Once
	writerEnd chan struct{}
}

var _ server.Auditor = (*Log)(nil)

// maxBatch bounds the bytes the writer gathers into one write.
const maxBatch = 256 << 10

// New opens the audit log of o (appending to o.Path) and registers its
// metrics on reg; it returns nil when o writes nothing. Start the writer
// with Run.
func New(o Options, reg prometheus.Registerer, log *zap.Logger) (*Log, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if !o.Enabled() {
		return nil, nil
	}
	if len(o.OmitVerbs) > len(Log{}.omit) {
		return nil, fmt.Errorf("--audit-omit-verbs: %d verbs, at most %d", len(o.OmitVerbs), len(Log{}.omit))
	}
	var out io.Writer = os.Stdout
	var file *os.File
	if o.Path != "-" {
		f, err := os.OpenFile(o.Path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
		if err != nil {
			return nil, fmt.Errorf("--audit-log-path: %w", err)
		}
		out, file = f, f
	}
	size := o.BufferSize
	if size == 0 {
		size = DefaultBufferSize
	}
	if log == nil {
		log = zap.NewNop()
	}
	l := &Log{
		level:     o.Level,
		ch:        make(chan entry, size),
		out:       out,
		log:       log.Named("audit"),
		writerEnd: make(chan struct{}),
		events: promutil.MustRegister(reg, prometheus.NewCounter(prometheus.CounterOpts{
			Name: "apiserver_audit_event_total",
			Help: "Audit events generated and handed to the audit log.",
		})),
		lost: promutil.MustRegister(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "apiserver_audit_error_total",
			Help: "Audit events lost: dropped because the writer fell --audit-log-buffer-size events behind, or not written (a write error); by plugin (log).",
		}, []string{"plugin"})).WithLabelValues("log"),
	}
	l.nOmit = copy(l.omit[:], o.OmitVerbs)
	if file != nil {
		// Late events of a stopping server are written after Run ended; the
		// file is closed when the Log is garbage.
		runtime.AddCleanup(l, func(f *os.File) { _ = f.Close() }, file)
	}
	return l, nil
}

// RecordsRequests: request bodies are kept from level Request up.
func (l *Log) RecordsRequests() bool { return l.level.atLeast(LevelRequest) }

// levelFor is the level of a request's event: at most Metadata for those
// whose bodies hold credentials (Secrets, service account tokens, token
// reviews), as Kubernetes' audit policies log them, whatever the level.
func levelFor(level Level, ri *server.RequestInfo) Level {
	if !level.atLeast(LevelRequest) || !ri.IsResource() {
		return level
	}
	switch {
	case ri.APIGroup == "" && ri.Resource == "secrets",
		ri.APIGroup == "" && ri.Resource == "serviceaccounts" && ri.Subresource == "token",
		ri.APIGroup == "authentication.k8s.io" && ri.Resource == "tokenreviews":
		return LevelMetadata
	}
	return level
}

// Audit records a finished request. It never waits for the disk.
func (l *Log) Audit(ri *server.RequestInfo, req, resp any, err error) {
	if slices.Contains(l.omit[:l.nOmit], ri.Verb) || strings.HasPrefix(ri.Path, "/grpc.health.v1.Health/") {
		return
	}
	e := entry{ri: ri, name: ri.Name, err: err, at: time.Now(), level: levelFor(l.level, ri)}
	if e.level.atLeast(LevelRequest) {
		e.req, _ = req.(proto.Message)
	}
	if e.level.atLeast(LevelRequestResponse) {
		switch r := resp.(type) {
		case proto.Message:
			e.resp = r
		case server.Encoded: // a List, decoded for the log only
			e.resp, _ = r.Message()
		}
	}
	if e.name == "" && err == nil {
		if obj, ok := resp.(object.Object); ok {
			e.name = obj.GetMetadata().GetName() // a create by generateName
		}
	}
	l.stopMu.RLock()
	if l.stopped {
		l.stopMu.RUnlock()
		l.events.Inc()
		l.write([]entry{e})
		return
	}
	select {
	case l.ch <- e:
		l.stopMu.RUnlock()
		l.events.Inc()
	default:
		l.stopMu.RUnlock()
		l.events.Inc()
		l.lost.Inc()
		l.warnDropped()
	}
}

func (l *Log) warnDropped() {
	now := time.Now().UnixNano()
	last := l.lastWarn.Load()
	if now-last < int64(10*time.Second) || !l.lastWarn.CompareAndSwap(last, now) {
		return
	}
	l.log.Warn("audit events dropped: the writer is behind by --audit-log-buffer-size events (see apiserver_audit_error_total)",
		zap.Int("buffer", cap(l.ch)))
}

// Run writes events until ctx ends, then writes what is buffered and
// returns; events that come later are written by Audit itself.
func (l *Log) Run(ctx context.Context) {
	defer close(l.writerEnd)
	batch := make([]entry, 0, 256)
	for {
		select {
		case e := <-l.ch:
			batch = l.gather(append(batch[:0], e))
			l.write(batch)
			clear(batch)
		case <-ctx.Done():
			l.stopOnce.Do(func() {
				l.stopMu.Lock()
				l.stopped = true
				l.stopMu.Unlock()
			})
			for {
				batch = l.gather(batch[:0])
				if len(batch) == 0 {
					return
				}
				l.write(batch)
				clear(batch)
			}
		}
	}
}

// gather adds the events waiting in ch, up to the batch's capacity.
func (l *Log) gather(batch []entry) []entry {
	for len(batch) < cap(batch) {
		select {
		case e := <-l.ch:
			batch = append(batch, e)
		default:
			return batch
		}
	}
	return batch
}

// write encodes events and appends them with as few writes as whole
// events allow.
func (l *Log) write(events []entry) {
	l.writeMu.Lock()
	defer l.writeMu.Unlock()
	b, n := l.buf[:0], 0
	for i := range events {
		b = appendEvent(b, events[i].level, &events[i])
		if n++; len(b) >= maxBatch || i == len(events)-1 {
			l.flush(b, n)
			b, n = b[:0], 0
		}
	}
	if cap(b) <= 4*maxBatch {
		l.buf = b // keep a buffer of usual size, not one a huge response grew
	}
}

func (l *Log) flush(b []byte, n int) {
	_, err := l.out.Write(b)
	switch {
	case err != nil:
		l.lost.Add(float64(n))
		if !l.failing {
			l.log.Error("writing the audit log failed; events are lost until a write succeeds", zap.Error(err))
		}
		l.failing = true
	case l.failing:
		l.log.Info("writing the audit log works again")
		l.failing = false
	}
}

// Stopped is closed when Run has returned.
func (l *Log) Stopped() <-chan struct{} { return l.writerEnd }
