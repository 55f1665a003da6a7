package scenarios

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"

	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
)

// The watch figures: one writer, many watchers of the same namespace.
var (
	figWatchP99       = Figure{Name: "watch.fanout_p99_ms", Unit: "ms", Target: AtMost(100)}
	figWatchDelivered = Figure{Name: "watch.events_delivered", Unit: "events"}
	figWatchMissed    = Figure{Name: "watch.missed_events", Unit: "events", Target: AtMost(0)}
	figWatchWriteRate = Figure{Name: "watch.write_per_s", Unit: "writes/s"}
	figWatchCPU       = Figure{Name: "watch.cpu_us_per_event", Unit: "us CPU/event"}
)

const (
	watchNamespace = "watch-bench"
	watchPrefix    = "w-"
	// pacerTick is how often the pacer releases the writes that are due.
	pacerTick = 2 * time.Millisecond
)

func watchFanoutScenario() *Scenario {
	return &Scenario{
		Name:    "watch.fanout",
		Summary: "many watchers of one namespace while a paced writer creates ConfigMaps",
		Figures: []Figure{figWatchP99, figWatchDelivered, figWatchMissed, figWatchWriteRate, figWatchCPU},
		Run:     runWatchFanout,
	}
}

// watchClock gives every timestamp of the scenario as microseconds since
// its start, plus one, so that 0 can mean "never": 4 bytes per sample.
type watchClock struct{ start time.Time }

func (c watchClock) now() uint32 { return uint32(time.Since(c.start).Microseconds()) + 1 }

// watcher is one watch stream. received[i] is when the event of write i
// arrived (watchClock), 0 if it did not.
type watcher struct {
	stream   grpc.ServerStreamingClient[corev1.ConfigMapWatchResponse]
	received []uint32
	count    int
	err      error
}

// receive reads events until it has one for each of the writes, the stream
// fails, or ctx ends.
func (w *watcher) receive(clock watchClock) {
	writes := len(w.received)
	for w.count < writes {
		resp, err := w.stream.Recv()
		if err != nil {
			w.err = err
			return
		}
		at := clock.now()
		for _, ev := range resp.GetEvents() {
			i, ok := writeIndex(ev.GetObject().GetMetadata().GetName(), writes)
			if !ok || w.received[i] != 0 {
				continue
			}
			w.received[i] = at
			w.count++
		}
	}
}

// writeIndex parses the write number out of an object name.
func writeIndex(name string, writes int) (int, bool) {
	s, ok := strings.CutPrefix(name, watchPrefix)
	if !ok {
		return 0, false
	}
	i, err := strconv.Atoi(s)
	return i, err == nil && i >= 0 && i < writes
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
	env.logf("watch.fanout: %d watchers established on %d conns from revision %s; writing %d ConfigMaps at %d/s",
		len(watchers), len(conns), rv, writes, cfg.WatchRate)

	clock := watchClock{start: time.Now()}
	cpu0 := cpuTime()
	var receivers sync.WaitGroup
	for _, w := range watchers {
		receivers.Add(1)
		go func() { defer receivers.Done(); w.receive(clock) }()
	}
	committed, writeSpan, err := paceWrites(wctx, writer, cfg, writes, clock)
	if err != nil {
		return err
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
		failed    int
		firstErr  error
	)
	for _, w := range watchers {
		if w.count < writes {
			failed++
			if firstErr == nil {
				firstErr = w.err
			}
		}
		for i, at := range w.received {
			if at == 0 {
				continue
			}
			delivered++
			// An event may arrive before its Create returns: count that as 0.
			lat.Record(time.Duration(int64(at)-int64(committed[i])) * time.Microsecond)
		}
	}
	want := int64(len(watchers)) * int64(writes)
	note := fmt.Sprintf("%d watchers on %d conns x %d writes", len(watchers), len(conns), writes)
	rs.Add(figWatchP99, ms(lat.Percentile(99)), latencyNote(&lat, "events")+" (receipt - Create return)")
	rs.Add(figWatchDelivered, float64(delivered), note)
	missedNote := "every watcher got every event"
	if delivered < want {
		missedNote = fmt.Sprintf("%d of %d watchers ended short; first error: %v", failed, len(watchers), firstErr)
	}
	rs.Add(figWatchMissed, float64(want-delivered), missedNote)
	rs.Add(figWatchWriteRate, float64(writes)/writeSpan.Seconds(),
		fmt.Sprintf("target %d/s, %d writer goroutines, ~200 B objects", cfg.WatchRate, cfg.WatchWriters))
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
			stream, err := clients[i%len(clients)].Watch(ctx, &metav1.ListOptions{Namespace: watchNamespace, ResourceVersion: rv})
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

// paceWrites creates writes ConfigMaps at cfg.WatchRate per second: a ticker
// releases the writes that are due, and cfg.WatchWriters goroutines create
// them. committed[i] is when the Create of write i returned (watchClock).
func paceWrites(ctx context.Context, cm corev1.ConfigMapsClient, cfg Config, writes int, clock watchClock) (committed []uint32, span time.Duration, err error) {
	committed = make([]uint32, writes)
	due := make(chan int, writes)
	data := string(payload(150))
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg       sync.WaitGroup
		errOnce  sync.Once
		firstErr error
		last     atomic.Int64 // nanoseconds since clock.start of the last Create return
	)
	for range max(cfg.WatchWriters, 1) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range due {
				name := objectName(watchPrefix, i)
				if _, err := cm.Create(ctx, configMap(watchNamespace, name, data)); err != nil {
					errOnce.Do(func() { firstErr = fmt.Errorf("creating %s/%s: %w", watchNamespace, name, err) })
					cancel()
					return
				}
				committed[i] = clock.now()
				last.Store(int64(time.Since(clock.start)))
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
	close(due)
	wg.Wait()
	if firstErr != nil {
		return nil, 0, firstErr
	}
	if err := ctx.Err(); err != nil {
		return nil, 0, err
	}
	return committed, time.Duration(last.Load()) - start.Sub(clock.start), nil
}
