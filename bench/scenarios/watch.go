package scenarios

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/encoding/protowire"

	"skiff.dev/internal/client"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
)

// The watch figures: paced writers, many watchers of the same namespace.
var (
	figWatchP99       = Figure{Name: "watch.fanout_p99_ms", Unit: "ms", Target: AtMost(100)}
	figWatchDelivered = Figure{Name: "watch.events_delivered", Unit: "events"}
	figWatchMissed    = Figure{Name: "watch.missed_events", Unit: "events", Target: AtMost(0)}
	figWatchWriteRate = Figure{Name: "watch.write_per_s", Unit: "writes/s", Target: AtLeast(950)}
	figWatchCPU       = Figure{Name: "watch.cpu_us_per_event", Unit: "us CPU/event"}
)

const (
	watchNamespace = "watch-bench"
	watchPrefix    = "w-"
	// watchEnd is written after every measured write: a watcher that sees
	// it has seen everything before it (a watch delivers in revision order).
	watchEnd = "end"
	// pacerTick is how often the pacer releases the writes that are due.
	pacerTick = 2 * time.Millisecond
)

func watchFanoutScenario() *Scenario {
	return &Scenario{
		Name:    "watch.fanout",
		Summary: "many watchers of one namespace while paced writers create ConfigMaps",
		Figures: []Figure{figWatchP99, figWatchDelivered, figWatchMissed, figWatchWriteRate, figWatchCPU},
		Run:     runWatchFanout,
	}
}

// watchClock gives every timestamp of the scenario as microseconds since
// its start, plus one, so that 0 can mean "never": 4 bytes per sample.
type watchClock struct{ start time.Time }

func (c watchClock) now() uint32 { return uint32(time.Since(c.start).Microseconds()) + 1 }

// watcher is one watch stream. It reads each event's type and its object's
// metadata.name straight from the received bytes (client.WatchEvents and
// objectName), as a client that only records which object changed would.
// Decoding every full object for 1,000 watchers in this same 2-core process
// would measure the benchmark's own clients, not the server's delivery.
// received[i] is when the event of write i arrived (watchClock), 0 if it
// did not.
type watcher struct {
	stream   grpc.ClientStream
	received []uint32
	sawEnd   bool
	err      error
}

// receive reads events until the end marker, a stream error or ctx's end.
func (w *watcher) receive(clock watchClock) {
	var resp []byte // reused for every message
	for !w.sawEnd {
		if err := w.stream.RecvMsg(&resp); err != nil {
			w.err = err
			return
		}
		at := clock.now()
		w.err = client.WatchEvents(resp, func(_ string, object []byte) error {
			name, err := nameOf(object)
			if err != nil {
				return err
			}
			if i, ok := writeIndex(name, len(w.received)); ok {
				if w.received[i] == 0 {
					w.received[i] = at
				}
			} else if string(name) == watchEnd {
				w.sawEnd = true
			}
			return nil
		})
		if w.err != nil {
			return
		}
	}
}

// nameOf reads metadata.name of an encoded object (metadataField).
func nameOf(object []byte) ([]byte, error) { return metadataField(object, 1) }

// resourceVersionOf reads metadata.resourceVersion of an encoded object
// (metadataField).
func resourceVersionOf(object []byte) ([]byte, error) { return metadataField(object, 5) }

// metadataField reads the string field num of metadata (field 3) of an
// encoded object without decoding the rest. As protobuf requires, every
// occurrence of the metadata field counts (the server appends one carrying
// the resourceVersion); the last value wins. It is returned as a slice of
// object.
func metadataField(object []byte, num protowire.Number) ([]byte, error) {
	var value []byte
	for len(object) > 0 {
		meta, rest, isMeta, err := nextField(object, 3)
		if err != nil {
			return nil, err
		}
		object = rest
		for isMeta && len(meta) > 0 {
			b, r, isField, err := nextField(meta, num)
			if err != nil {
				return nil, err
			}
			if meta = r; isField {
				value = b
			}
		}
	}
	return value, nil
}

// nextField reads the first field of msg: when it is length-delimited
// field num, its bytes and ok; the rest of msg either way.
func nextField(msg []byte, num protowire.Number) (value, rest []byte, ok bool, err error) {
	n, wt, l := protowire.ConsumeTag(msg)
	if l < 0 {
		return nil, nil, false, protowire.ParseError(l)
	}
	msg = msg[l:]
	if n == num && wt == protowire.BytesType {
		b, l := protowire.ConsumeBytes(msg)
		if l < 0 {
			return nil, nil, false, protowire.ParseError(l)
		}
		return b, msg[l:], true, nil
	}
	if l = protowire.ConsumeFieldValue(n, wt, msg); l < 0 {
		return nil, nil, false, protowire.ParseError(l)
	}
	return nil, msg[l:], false, nil
}

// writeIndex parses the write number out of an object name ("w-<i>").
func writeIndex(name []byte, writes int) (int, bool) {
	digits, ok := bytes.CutPrefix(name, []byte(watchPrefix))
	if !ok || len(digits) == 0 || len(digits) > 9 {
		return 0, false
	}
	i := 0
	for _, d := range digits {
		if d < '0' || d > '9' {
			return 0, false
		}
		i = i*10 + int(d-'0')
	}
	return i, i < writes
}

func runWatchFanout(ctx context.Context, env *Env, rs *Results) error {
	cfg := env.Config
	writes := int(float64(cfg.WatchRate) * cfg.WatchDuration.Seconds())
	if writes <= 0 || cfg.Watchers <= 0 {
		return fmt.Errorf("nothing to measure: %d watchers, %d writes", cfg.Watchers, writes)
	}
	conns, err := env.dial(cfg.WatchConns)
	if err != nil {
		return err
	}
	defer closeAll(conns)
	writerConn, err := env.dial(1)
	if err != nil {
		return err
	}
	defer closeAll(writerConn)
	writer := corev1.NewConfigMapsClient(writerConn[0])

	// Watch from the current revision: no initial events, only what follows.
	list, err := writer.List(ctx, &metav1.ListOptions{Namespace: watchNamespace, Limit: 1})
	if err != nil {
		return fmt.Errorf("reading the current revision: %w", err)
	}
	rv := list.GetMetadata().GetResourceVersion()

	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	watchers, err := startWatchers(wctx, conns, cfg.Watchers, writes, rv)
	if err != nil {
		return err
	}
	env.logf("watch.fanout: %d watchers on %d conns from revision %s; writing %d ConfigMaps at %d/s",
		len(watchers), len(conns), rv, writes, cfg.WatchRate)

	settle()
	clock := watchClock{start: time.Now()}
	cpu0 := cpuTime()
	var receivers sync.WaitGroup
	for _, w := range watchers {
		receivers.Add(1)
		go func() { defer receivers.Done(); w.receive(clock) }()
	}
	pw, err := paceWrites(wctx, writer, cfg, writes, clock)
	if err != nil {
		return err
	}
	if _, err := writer.Create(wctx, configMap(watchNamespace, watchEnd, "")); err != nil {
		return fmt.Errorf("writing the end marker: %w", err)
	}
	// Give the last events time to arrive, then end the streams that lag.
	drained := make(chan struct{})
	go func() { receivers.Wait(); close(drained) }()
	drain := time.NewTimer(cfg.WatchDrain)
	select {
	case <-drained:
	case <-drain.C:
		env.logf("watch.fanout: some watchers still lag %s after the last write; ending them", cfg.WatchDrain)
	case <-ctx.Done():
	}
	drain.Stop()
	cancel()
	<-drained
	cpu := cpuTime() - cpu0
	if err := ctx.Err(); err != nil {
		return err
	}

	var (
		lat       Histogram
		delivered int64
		short     int
		firstErr  error
	)
	for _, w := range watchers {
		if !w.sawEnd {
			short++
			if firstErr == nil {
				firstErr = w.err
			}
		}
		for i, at := range w.received {
			if at == 0 || pw.committed[i] == 0 {
				continue
			}
			delivered++
			// An event may arrive before its Create returns: that counts as 0.
			lat.Record(time.Duration(int64(at)-int64(pw.committed[i])) * time.Microsecond)
		}
	}
	want := int64(len(watchers)) * int64(pw.done)
	rs.Add(figWatchP99, ms(lat.Percentile(99)), latencyNote(&lat, "events")+" (receipt - Create return)")
	rs.Add(figWatchDelivered, float64(delivered),
		fmt.Sprintf("%d watchers on %d conns x %d writes", len(watchers), len(conns), pw.done))
	missedNote := "every watcher got every event"
	if delivered < want {
		missedNote = fmt.Sprintf("%d of %d watchers ended before the end marker; first error: %v", short, len(watchers), firstErr)
	}
	rs.Add(figWatchMissed, float64(want-delivered), missedNote)
	rs.Add(figWatchWriteRate, pw.perSecond(), fmt.Sprintf("paced at %d/s for %s by %d writers, ~200 B objects; %d of %d writes done",
		cfg.WatchRate, cfg.WatchDuration, cfg.WatchWriters, pw.done, writes))
	cpuPerEvent := 0.0
	if delivered > 0 {
		cpuPerEvent = float64(cpu.Microseconds()) / float64(delivered)
	}
	rs.Add(figWatchCPU, cpuPerEvent, "process CPU (apiserver + writers + watchers decoding) / delivered events")
	return nil
}

// startWatchers opens n watches from revision rv, round-robin over conns,
// and returns once the server has answered each with its headers.
func startWatchers(ctx context.Context, conns []*grpc.ClientConn, n, writes int, rv string) ([]*watcher, error) {
	clients := make([]corev1.ConfigMapsClient, len(conns))
	for i, c := range conns {
		clients[i] = corev1.NewConfigMapsClient(c)
	}
	watchers := make([]*watcher, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	// A few at a time: opening a thousand streams at once is its own benchmark.
	sem := make(chan struct{}, 64)
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			stream, err := clients[i%len(clients)].Watch(ctx, &metav1.ListOptions{Namespace: watchNamespace, ResourceVersion: rv}, client.RawWatch())
			if err == nil {
				_, err = stream.Header()
			}
			if err != nil {
				errs[i] = fmt.Errorf("starting watcher %d: %w", i, err)
				return
			}
			watchers[i] = &watcher{stream: stream, received: make([]uint32, writes)}
		}()
	}
	wg.Wait()
	return watchers, errors.Join(errs...)
}

// pacedWrites is what paceWrites did: committed[i] is when the Create of
// write i returned (watchClock), 0 if it was not done.
type pacedWrites struct {
	committed []uint32
	done      int
	span      time.Duration // from the first release to the last return
}

func (p *pacedWrites) perSecond() float64 {
	if p.span <= 0 {
		return 0
	}
	return float64(p.done) / p.span.Seconds()
}

// paceWrites releases cfg.WatchRate writes per second for cfg.WatchDuration
// (a ticker computes how many are due) to cfg.WatchWriters goroutines that
// create them. Writes still waiting for a writer when the time is up (plus
// a tenth) are dropped, so a server that cannot keep up shows a lower
// achieved rate rather than a longer run.
func paceWrites(ctx context.Context, cm corev1.ConfigMapsClient, cfg Config, writes int, clock watchClock) (*pacedWrites, error) {
	pw := &pacedWrites{committed: make([]uint32, writes)}
	due := make(chan int, writes)
	data := string(payload(150))
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex // guards pw, last, firstErr
		last     time.Time
		firstErr error
	)
	timeUp := make(chan struct{})
	for range max(cfg.WatchWriters, 1) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range due {
				select {
				case <-timeUp:
					continue // dropped: drain the channel
				default:
				}
				name := objectName(watchPrefix, i)
				_, err := cm.Create(ctx, configMap(watchNamespace, name, data))
				at, now := clock.now(), time.Now()
				mu.Lock()
				if err != nil {
					if firstErr == nil {
						firstErr = fmt.Errorf("creating %s/%s: %w", watchNamespace, name, err)
					}
					cancel()
				} else {
					pw.committed[i] = at
					pw.done++
					last = now
				}
				mu.Unlock()
			}
		}()
	}

	start := time.Now()
	tick := time.NewTicker(pacerTick)
	issued := 0
	for issued < writes && ctx.Err() == nil {
		select {
		case now := <-tick.C:
			target := min(writes, int(now.Sub(start).Seconds()*float64(cfg.WatchRate))+1)
			for ; issued < target; issued++ {
				due <- issued
			}
		case <-ctx.Done():
		}
	}
	tick.Stop()
	// The last release was due just before cfg.WatchDuration; what no
	// writer has taken a tenth of that later is dropped.
	select {
	case <-time.After(time.Until(start.Add(cfg.WatchDuration + cfg.WatchDuration/10))):
	case <-ctx.Done():
	}
	close(timeUp)
	close(due)
	wg.Wait()
	if firstErr != nil {
		return nil, firstErr
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	pw.span = last.Sub(start)
	return pw, nil
}
