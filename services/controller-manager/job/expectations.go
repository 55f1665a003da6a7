package job

import (
	"sync"
	"time"
)

// ExpectationsTimeout is how long expectations are trusted (a watch event
// that never comes blocks a Job's syncs at most this long).
const ExpectationsTimeout = 5 * time.Minute

// expectations track, per Job key, the pod creations (a count: the names
// are the server's) and deletions (pod keys) made and not yet seen by the
// pods informer, and the uids of pods whose tracking finalizer removal is
// in flight. While creations or deletions are pending the Job's pods in
// the cache are stale and no pods are created or deleted; a pod whose
// finalizer removal is pending is not tracked again.
type expectations struct {
	now func() time.Time

	mu      sync.Mutex
	records map[string]*expectation
}

type expectation struct {
	adds       int
	dels       map[string]struct{}
	finalizers map[string]struct{} // pod uids
	set        time.Time
}

func newExpectations(now func() time.Time) *expectations {
	return &expectations{now: now, records: map[string]*expectation{}}
}

func (e *expectations) record(key string) *expectation {
	r := e.records[key]
	if r == nil {
		r = &expectation{dels: map[string]struct{}{}, finalizers: map[string]struct{}{}}
		e.records[key] = r
	}
	return r
}

// expectCreations records n creations about to be made for key.
func (e *expectations) expectCreations(key string, n int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	r := e.record(key)
	r.adds += n
	r.set = e.now()
}

// expectDeletions records the deletions of the pods podKeys.
func (e *expectations) expectDeletions(key string, podKeys []string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	r := e.record(key)
	for _, k := range podKeys {
		r.dels[k] = struct{}{}
	}
	r.set = e.now()
}

// creationObserved lowers key's pending creations by one.
func (e *expectations) creationObserved(key string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if r := e.records[key]; r != nil && r.adds > 0 {
		r.adds--
	}
}

// deletionObserved marks the deletion of podKey as seen (or failed).
func (e *expectations) deletionObserved(key, podKey string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if r := e.records[key]; r != nil {
		delete(r.dels, podKey)
	}
}

// satisfied reports whether key's pods in the cache can be trusted for
// creations and deletions.
func (e *expectations) satisfied(key string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	r := e.records[key]
	if r == nil || r.adds <= 0 && len(r.dels) == 0 {
		return true
	}
	return e.now().Sub(r.set) > ExpectationsTimeout
}

// expectFinalizersRemoved records that the finalizers of the pods uids are
// being removed.
func (e *expectations) expectFinalizersRemoved(key string, uids []string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	r := e.record(key)
	for _, u := range uids {
		r.finalizers[u] = struct{}{}
	}
}

// finalizerRemovalObserved marks uid's finalizer removal as seen (or failed).
func (e *expectations) finalizerRemovalObserved(key, uid string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if r := e.records[key]; r != nil {
		delete(r.finalizers, uid)
	}
}

// finalizersPending returns a copy of the uids whose finalizer removal is
// in flight for key.
func (e *expectations) finalizersPending(key string) map[string]struct{} {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := map[string]struct{}{}
	if r := e.records[key]; r != nil {
		for u := range r.finalizers {
			out[u] = struct{}{}
		}
	}
	return out
}

// forget drops key's expectations (its Job is gone).
func (e *expectations) forget(key string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.records, key)
}
