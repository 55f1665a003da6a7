package events

import (
	"context"
	"fmt"
	"hash/fnv"
	"math/bits"
	"sync"
	"time"

	"go.uber.org/zap"
	"google.golang.org/protobuf/proto"

	"skiff.dev/internal/apierrors"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
)

// maxNamePrefix keeps "<prefix>.<16 hex digits>" within a DNS subdomain's 253 characters.
const maxNamePrefix = 253 - 17

// writerQueueSize bounds the events handed to one writer and not yet
// written; Run waits when its writer's queue is full.
const writerQueueSize = 128

// writers is the pool Run hands allowed events to. An event goes to the
// writer chosen by a hash of its aggregateKey: the writes about one
// aggregated event (its create, the updates of its count, their conflict
// and not-found fallbacks) are done by one goroutine, in the order
// recorded, never concurrently; events with different keys are written in
// parallel.
type writers struct {
	in []chan *corev1.Event
	wg sync.WaitGroup
}

// startWriters starts Config.Writers writers, which write until ctx is done
// or their queue is closed and empty.
func (b *Broadcaster) startWriters(ctx context.Context) *writers {
	w := &writers{in: make([]chan *corev1.Event, b.cfg.Writers)}
	for i := range w.in {
		in := make(chan *corev1.Event, writerQueueSize)
		w.in[i] = in
		w.wg.Go(func() {
			for {
				select {
				case <-ctx.Done():
					return
				case ev, ok := <-in:
					if !ok || ctx.Err() != nil { // select picks either when both are ready
						return
					}
					b.write(ctx, ev)
				}
			}
		})
	}
	return w
}

// send hands ev to its writer, waiting while that writer's queue is full;
// false if ctx was done first.
func (w *writers) send(ctx context.Context, ev *corev1.Event) bool {
	select {
	case w.in[shard(ev, len(w.in))] <- ev:
		return true
	case <-ctx.Done():
		return false
	}
}

// stop closes the writers' queues and waits until they have returned:
// after they wrote what was queued or, when ctx is done, at once.
func (w *writers) stop() {
	for _, in := range w.in {
		close(in)
	}
	w.wg.Wait()
}

// shard returns the writer, in [0, n), for the events aggregated with ev:
// the high bits of FNV-1a (its low bits barely depend on keys that differ
// in the middle, e.g. by pod name, and end alike).
func shard(ev *corev1.Event, n int) int {
	h := fnv.New64a()
	h.Write([]byte(aggregateKey(ev)))
	i, _ := bits.Mul64(h.Sum64(), uint64(n))
	return int(i)
}

// write applies the aggregation decision to one event, allowed by the spam
// filter and named by Run, and does the I/O.
func (b *Broadcaster) write(ctx context.Context, ev *corev1.Event) {
	ctx, cancel := context.WithTimeout(ctx, writeTimeout)
	defer cancel()
	start := time.Now()
	var stored *corev1.Event
	var err error
	if prev, ok := b.corr.previous(ev); ok {
		stored, err = b.increment(ctx, prev, ev)
	} else {
		stored, err = b.create(ctx, ev, ev.GetMetadata().GetName())
	}
	b.metrics.writeDuration.Observe(time.Since(start).Seconds())
	if err != nil {
		io := ev.GetInvolvedObject()
		b.log.Warn("writing an event failed; dropped", zap.Error(err),
			zap.String("object", io.GetKind()+" "+io.GetNamespace()+"/"+io.GetName()),
			zap.String("reason", ev.GetReason()), zap.String("message", ev.GetMessage()))
		b.metrics.drop(dropWriteFailed)
		return
	}
	b.corr.stored(ev, stored)
}

// create creates ev under name, in ev's namespace.
func (b *Broadcaster) create(ctx context.Context, ev *corev1.Event, name string) (*corev1.Event, error) {
	ev = proto.Clone(ev).(*corev1.Event)
	ev.Metadata = &metav1.ObjectMeta{Namespace: ev.GetMetadata().GetNamespace(), Name: name}
	stored, err := b.cfg.Client.Create(ctx, ev)
	if err != nil {
		return nil, fmt.Errorf("creating event %s/%s: %w", ev.Metadata.Namespace, ev.Metadata.Name, err)
	}
	return stored, nil
}

// name is "<involved name>.<hex unix nanoseconds of the event>"; the
// nanoseconds are kept increasing so that events recorded in the same
// nanosecond (or on a stopped fake clock) get distinct names. Run names
// every event it hands to a writer, in the order recorded, whether it will
// be created or counted on an existing one: the name is then the one the
// event gets if that one is gone. Names thus do not depend on the order in
// which writers run.
func (b *Broadcaster) name(ev *corev1.Event) string {
	n := ev.GetLastTimestamp().AsTime().UnixNano()
	if n <= b.lastName {
		n = b.lastName + 1
	}
	b.lastName = n
	prefix := ev.GetInvolvedObject().GetName()
	if len(prefix) > maxNamePrefix {
		prefix = prefix[:maxNamePrefix]
	}
	return fmt.Sprintf("%s.%x", prefix, n)
}

// increment counts ev as one more occurrence of the stored event prev. On a
// conflict it reads the event again and increments what it finds; when the
// event is gone it creates a new one, under ev's name, that keeps the count.
func (b *Broadcaster) increment(ctx context.Context, prev, ev *corev1.Event) (*corev1.Event, error) {
	next := proto.Clone(prev).(*corev1.Event)
	bump(next, ev)
	stored, err := b.cfg.Client.Update(ctx, next)
	if apierrors.IsConflict(err) {
		var cur *corev1.Event
		if cur, err = b.cfg.Client.Get(ctx, prev.GetMetadata().GetNamespace(), prev.GetMetadata().GetName()); err == nil {
			bump(cur, ev)
			stored, err = b.cfg.Client.Update(ctx, cur)
		}
	}
	if apierrors.IsNotFound(err) {
		return b.create(ctx, next, ev.GetMetadata().GetName())
	}
	if err != nil {
		return nil, fmt.Errorf("updating event %s/%s: %w", prev.GetMetadata().GetNamespace(), prev.GetMetadata().GetName(), err)
	}
	return stored, nil
}

// bump adds one occurrence, at ev's time, to stored.
func bump(stored, ev *corev1.Event) {
	stored.Count++
	stored.LastTimestamp = ev.GetLastTimestamp()
}
