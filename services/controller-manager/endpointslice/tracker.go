package endpointslice

import (
	"strconv"
	"sync"

	discoveryv1 "skiff.dev/proto/discovery/v1"
)

// deleted marks a slice the controller deleted, in tracker.written.
const deleted = "<deleted>"

// tracker remembers, per Service, the slices the controller wrote (by uid,
// with the resourceVersion the write returned) and deleted, so that a sync
// can tell whether the slices cache shows them yet (EndpointSliceTracker in
// Kubernetes, which tracks generations; a label-only update leaves the
// generation alone here, so resourceVersions are tracked). It is safe for
// concurrent use.
type tracker struct {
	mu      sync.Mutex
	written map[string]map[string]string // service key -> slice uid -> resourceVersion or deleted
}

func newTracker() *tracker { return &tracker{written: map[string]map[string]string{}} }

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
		m = map[string]string{}
		t.written[svcKey] = m
	}
	m[uid] = rv
}

// stale reports whether cached, the Service's slices in the cache, misses
// a write or deletion of the controller: a slice it wrote absent or at an
// older resourceVersion, or a slice it deleted still there.
func (t *tracker) stale(svcKey string, cached []*discoveryv1.EndpointSlice) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	m := t.written[svcKey]
	if len(m) == 0 {
		return false
	}
	seen := make(map[string]bool, len(cached))
	for _, s := range cached {
		uid := s.GetMetadata().GetUid()
		seen[uid] = true
		rv, ok := m[uid]
		if ok && (rv == deleted || olderThan(s.GetMetadata().GetResourceVersion(), rv)) {
			return true
		}
	}
	for uid, rv := range m {
		if rv != deleted && !seen[uid] {
			return true
		}
	}
	return false
}

// ownWrite reports whether the cache's s is a write of the controller (or
// older than one): its event needs no sync.
func (t *tracker) ownWrite(svcKey string, s *discoveryv1.EndpointSlice) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	rv, ok := t.written[svcKey][s.GetMetadata().GetUid()]
	return ok && rv != deleted && !olderThan(rv, s.GetMetadata().GetResourceVersion())
}

// gone forgets a slice the cache no longer has, and reports whether the
// controller deleted it itself.
func (t *tracker) gone(svcKey string, s *discoveryv1.EndpointSlice) (expected bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	m := t.written[svcKey]
	uid := s.GetMetadata().GetUid()
	rv, ok := m[uid]
	delete(m, uid)
	if len(m) == 0 {
		delete(t.written, svcKey)
	}
	return ok && rv == deleted
}

// forgetService drops what is known of a Service that is gone.
func (t *tracker) forgetService(svcKey string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.written, svcKey)
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
