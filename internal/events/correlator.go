package events

import (
	"strings"
	"sync"
	"time"

	corev1 "skiff.dev/proto/core/v1"
)

// The correlator decides, for each event, whether it is written and
// whether it repeats one already stored. It is pure (no I/O, time taken
// from the events). Its two halves have different users:
//
//   - the spam filter (allow) sees every event in the order recorded and is
//     used by the Run goroutine only;
//   - the aggregation memory (previous, stored) is used by the writers,
//     under mu. Every event with one aggregateKey goes to the same writer,
//     so for each key previous and stored alternate in the order recorded,
//     exactly as with one writer; only which keys the LRU evicts first
//     depends on how writers interleave.
type correlator struct {
	qps    float64 // tokens per second per object
	burst  float64
	window time.Duration
	// buckets are the spam filter's token buckets, by spamKey.
	buckets *lru[*bucket]

	mu sync.Mutex // guards recent
	// recent are the events last stored, by aggregateKey. They are not
	// modified once stored.
	recent *lru[*corev1.Event]
}

type bucket struct {
	tokens float64
	last   time.Time
}

func newCorrelator(qps float64, burst int, window time.Duration, size int) *correlator {
	return &correlator{
		qps: qps, burst: float64(burst), window: window,
		buckets: newLRU[*bucket](size),
		recent:  newLRU[*corev1.Event](size),
	}
}

// allow takes a token from the bucket of ev's source and involved object,
// refilled up to burst for the time since it was last used.
func (c *correlator) allow(ev *corev1.Event) bool {
	now := ev.GetLastTimestamp().AsTime()
	key := spamKey(ev)
	b, ok := c.buckets.get(key)
	if !ok {
		b = &bucket{tokens: c.burst, last: now}
		c.buckets.add(key, b)
	}
	if now.After(b.last) {
		b.tokens = min(c.burst, b.tokens+now.Sub(b.last).Seconds()*c.qps)
		b.last = now
	}
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}

// previous returns the stored event that ev repeats, if one was written
// less than the window before ev.
func (c *correlator) previous(ev *corev1.Event) (*corev1.Event, bool) {
	key := aggregateKey(ev)
	c.mu.Lock()
	prev, ok := c.recent.get(key)
	c.mu.Unlock()
	if !ok || ev.GetLastTimestamp().AsTime().Sub(prev.GetLastTimestamp().AsTime()) >= c.window {
		return nil, false
	}
	return prev, true
}

// stored remembers what was written for ev.
func (c *correlator) stored(ev, stored *corev1.Event) {
	key := aggregateKey(ev)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.recent.add(key, stored)
}

// spamKey identifies the source and the involved object.
func spamKey(ev *corev1.Event) string {
	io := ev.GetInvolvedObject()
	return strings.Join([]string{
		ev.GetSource().GetComponent(), ev.GetSource().GetHost(),
		io.GetKind(), io.GetApiVersion(), io.GetNamespace(), io.GetName(), io.GetUid(),
	}, "\x00")
}

// aggregateKey identifies an event's content: its spamKey plus type, reason
// and message. The involved object's resourceVersion is left out: events
// about successive versions of an object are repeats.
func aggregateKey(ev *corev1.Event) string {
	return strings.Join([]string{spamKey(ev), ev.GetType(), ev.GetReason(), ev.GetMessage()}, "\x00")
}
