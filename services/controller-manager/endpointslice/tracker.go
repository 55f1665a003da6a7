package endpointslice

import (
	"strconv"
	"sync"
	"time"

	discoveryv1 "skiff.dev/proto/discovery/v1"
)

// deleted marks a slice the controller deleted, in tracker.written.
const deleted = "<deleted>"

// trackTTL is how long the tracker waits for the cache to show a write or
// deletion before it stops waiting for it: a cache that missed an event
// (a slice created and deleted by someone else between two lists) must
// not stop a Service's syncs for good. The replicaset controller trusts
// its expectations for 5 minutes; slices are cheaper to get wrong (a
// duplicate slice is packed away by the next sync), so one minute.
const trackTTL = time.Minute

// tracker remembers, per Service, the slices the controller wrote (by uid,
// with the resourceVersion the write returned) and deleted, so that a sync
// can tell whether the slices cache shows them yet (EndpointSliceTracker in
// Kubernetes, which tracks generations; a label-only update leaves the
// generation alone here, so resourceVersions are tracked). It is safe for
// concurrent use.
type tracker struct {
	now func() time.Time

	mu      sync.Mutex
	written map[string]map[string]tracked // service key -> slice uid -> what was written
	waiting map[string]bool               // services whose last sync found the cache stale
	// writing holds the services whose writes are in flight, with the
	// slice events seen meanwhile: a write's watch event may come before
	// its response, so they are judged when the writes have returned.
	writing map[string][]sliceEvent
}

// sliceEvent is a slice event seen while writes were in flight.
type sliceEvent struct {
	uid, rv string // rv: the slice's resourceVersion, or deleted
}

// tracked is one write: the resourceVersion it returned (or deleted), and
// when.
type tracked struct {
	rv string
	at time.Time
}

func newTracker(now func() time.Time) *tracker {
	return &tracker{now: now, written: map[string]map[string]tracked{}, waiting: map[string]bool{}, writing: map[string][]sliceEvent{}}
}

// wrote records a slice as the API returned it after a create or update.
func (t *tracker) wrote(svcKey string, s *discoveryv1.EndpointSlice) {
	t.set(svcKey, s.GetMetadata().GetUid(), s.GetMetadata().GetResourceVersion())
}

// deleting records a slice the controller deleted.
func (t *tracker) deleting(svcKey string, s *discoveryv1.EndpointSlice) {
	t.set(svcKey, s.GetMetadata().GetUid(), deleted)
}

func (t *tracker) set(svcKey, uid, rv string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	m := t.written[svcKey]
	if m == nil {
		m = map[string]tracked{}
		t.written[svcKey] = m
	}
	m[uid] = tracked{rv, t.now()}
}

// stale reports whether cached, the Service's slices in the cache, misses
// a write or deletion of the controller: a slice it wrote absent or at an
// older resourceVersion, or a slice it deleted still there. Writes older
// than trackTTL are forgotten. A stale Service is marked waiting (see
// wake).
func (t *tracker) stale(svcKey string, cached []*discoveryv1.EndpointSlice) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	m := t.written[svcKey]
	if len(m) == 0 {
		return false
	}
	now := t.now()
	for uid, w := range m {
		if now.Sub(w.at) > trackTTL {
			delete(m, uid)
		}
	}
	seen := make(map[string]bool, len(cached))
	stale := false
	for _, s := range cached {
		uid := s.GetMetadata().GetUid()
		seen[uid] = true
		w, ok := m[uid]
		if ok && (w.rv == deleted || olderThan(s.GetMetadata().GetResourceVersion(), w.rv)) {
			stale = true
		}
	}
	for uid, w := range m {
		if w.rv != deleted && !seen[uid] {
			stale = true
		}
	}
	if stale {
		t.waiting[svcKey] = true
	}
	return stale
}

// wake reports whether the Service's last sync found the cache stale, and
// clears the mark: the caller, having seen the cache change, syncs it
// again.
func (t *tracker) wake(svcKey string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	w := t.waiting[svcKey]
	delete(t.waiting, svcKey)
	return w
}

// startWrites marks the Service's writes in flight: until endWrites, the
// slice events of the Service are held for judgement.
func (t *tracker) startWrites(svcKey string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.writing[svcKey] = []sliceEvent{}
}

// endWrites ends the Service's writes (recorded with wrote and deleting)
// and reports whether an event held meanwhile was not one of them.
func (t *tracker) endWrites(svcKey string) (foreign bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	held := t.writing[svcKey]
	delete(t.writing, svcKey)
	for _, e := range held {
		if e.rv == deleted {
			foreign = !t.goneLocked(svcKey, e.uid) || foreign
		} else {
			foreign = !t.ownLocked(svcKey, e.uid, e.rv) || foreign
		}
	}
	return foreign
}

// ownWrite reports whether the cache's s is a write of the controller (or
// older than one), or may be one whose call has not returned yet (it is
// then judged by endWrites): its event needs no sync.
func (t *tracker) ownWrite(svcKey string, s *discoveryv1.EndpointSlice) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	m := s.GetMetadata()
	if held, ok := t.writing[svcKey]; ok {
		t.writing[svcKey] = append(held, sliceEvent{m.GetUid(), m.GetResourceVersion()})
		return true
	}
	return t.ownLocked(svcKey, m.GetUid(), m.GetResourceVersion())
}

func (t *tracker) ownLocked(svcKey, uid, rv string) bool {
	w, ok := t.written[svcKey][uid]
	return ok && w.rv != deleted && !olderThan(w.rv, rv)
}

// gone forgets a slice the cache no longer has, and reports whether the
// controller deleted it itself, or may have (judged by endWrites).
func (t *tracker) gone(svcKey string, s *discoveryv1.EndpointSlice) (expected bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	uid := s.GetMetadata().GetUid()
	if held, ok := t.writing[svcKey]; ok {
		t.writing[svcKey] = append(held, sliceEvent{uid, deleted})
		return true
	}
	return t.goneLocked(svcKey, uid)
}

func (t *tracker) goneLocked(svcKey, uid string) bool {
	m := t.written[svcKey]
	w, ok := m[uid]
	delete(m, uid)
	if len(m) == 0 {
		delete(t.written, svcKey)
	}
	return ok && w.rv == deleted
}

// forgetService drops what is known of a Service that is gone.
func (t *tracker) forgetService(svcKey string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.written, svcKey)
	delete(t.waiting, svcKey)
}

// olderThan reports whether resourceVersion a is older than b. They are
// etcd revisions; versions that do not parse are older when they differ.
func olderThan(a, b string) bool {
	ai, errA := strconv.ParseInt(a, 10, 64)
	bi, errB := strconv.ParseInt(b, 10, 64)
	if errA != nil || errB != nil {
		return a != b
	}
	return ai < bi
}
