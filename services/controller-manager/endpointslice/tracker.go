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
}

// tracked is one write: the resourceVersion it returned (or deleted), and
// when.
type tracked struct {
	rv string
	at time.Time
}

func newTracker(now func() time.Time) *tracker {
	return &tracker{now: now, written: map[string]map[string]tracked{}, waiting: map[string]bool{}}
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

// ownWrite reports whether the cache's s is a write of the controller (or
// older than one): its event needs no sync.
func (t *tracker) ownWrite(svcKey string, s *discoveryv1.EndpointSlice) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	w, ok := t.written[svcKey][s.GetMetadata().GetUid()]
	return ok && w.rv != deleted && !olderThan(w.rv, s.GetMetadata().GetResourceVersion())
}

// gone forgets a slice the cache no longer has, and reports whether the
// controller deleted it itself.
func (t *tracker) gone(svcKey string, s *discoveryv1.EndpointSlice) (expected bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	m := t.written[svcKey]
	uid := s.GetMetadata().GetUid()
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
