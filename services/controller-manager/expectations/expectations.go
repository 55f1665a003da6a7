package expectations

import (
	"sync"
	"time"
)

// Timeout is how long expectations are trusted: a creation or deletion
// whose watch event never arrives (a lost event, a pod deleted by someone
// else before the informer saw it) blocks the syncs of its key for at most
// this long. Kubernetes' controller.ExpectationsTimeout.
const Timeout = 5 * time.Minute

// Tracker tracks, per controller key (a ReplicaSet's, a DaemonSet's, a
// Job's), the pod creations and deletions the controller made and the pods
// informer has not shown yet, as Kubernetes' UIDTrackingControllerExpectations
// do. While a key has some, its pods in the cache are known to be stale and
// the controller does not compute a diff from them (it would create or
// delete twice).
//
// Creations are a count (the new pods' names are the server's choice);
// deletions are the set of the pods' keys, so that a deletion seen twice
// (the update that sets deletionTimestamp, then the delete) is counted
// once. A Tracker is safe for concurrent use.
type Tracker struct {
	now func() time.Time

	mu      sync.Mutex
	records map[string]*expectation
}

type expectation struct {
	adds int
	dels map[string]struct{}
	set  time.Time // when the expectations were set: they expire after Timeout
}

// New returns a Tracker without expectations on the clock now.
func New(now func() time.Time) *Tracker {
	return &Tracker{now: now, records: map[string]*expectation{}}
}

// ExpectCreations records that n more pods are about to be created for
// key, on top of creations not observed yet (deletions are never pending
// at the same time: the controller deletes only once everything is seen).
func (e *Tracker) ExpectCreations(key string, n int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	adds := 0
	if r := e.records[key]; r != nil && e.now().Sub(r.set) <= Timeout {
		adds = max(r.adds, 0)
	}
	e.records[key] = &expectation{adds: adds + n, set: e.now()}
}

// InFlight returns, for key, the creations not observed yet (they count
// as pods: they exist in the apiserver already) and whether deletions are
// outstanding (then the cache cannot be trusted at all). Expired
// expectations count for nothing. Read it BEFORE the cache: a pod observed
// in between is then counted twice (the controller creates too few, and
// catches up at its next sync), never zero times (which would create too
// many).
func (e *Tracker) InFlight(key string) (adds int, deleting bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	r := e.records[key]
	if r == nil || e.now().Sub(r.set) > Timeout {
		return 0, false
	}
	return max(r.adds, 0), len(r.dels) > 0
}

// ExpectDeletions records that the pods podKeys are about to be deleted for
// key, replacing whatever key expected before.
func (e *Tracker) ExpectDeletions(key string, podKeys []string) {
	dels := make(map[string]struct{}, len(podKeys))
	for _, k := range podKeys {
		dels[k] = struct{}{}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.records[key] = &expectation{dels: dels, set: e.now()}
}

// ExpectMoreDeletions records that the pods podKeys are about to be deleted
// for key, on top of the creations and deletions key expects already (those
// not expired): for a controller that may delete while its creations are
// not observed yet (a finished Job deleting its active pods).
func (e *Tracker) ExpectMoreDeletions(key string, podKeys []string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	r := &expectation{dels: make(map[string]struct{}, len(podKeys)), set: e.now()}
	if old := e.records[key]; old != nil && e.now().Sub(old.set) <= Timeout {
		r.adds = max(old.adds, 0)
		for k := range old.dels {
			r.dels[k] = struct{}{}
		}
	}
	for _, k := range podKeys {
		r.dels[k] = struct{}{}
	}
	e.records[key] = r
}

// CreationObserved lowers key's expected creations by one: a pod was seen,
// or a creation failed and will never be seen.
func (e *Tracker) CreationObserved(key string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if r := e.records[key]; r != nil && r.adds > 0 {
		r.adds--
	}
}

// DeletionObserved marks the deletion of podKey as seen (or failed) for key.
// A pod key not expected is ignored.
func (e *Tracker) DeletionObserved(key, podKey string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if r := e.records[key]; r != nil {
		delete(r.dels, podKey)
	}
}

// Satisfied reports whether the cache can be trusted for key: nothing is
// expected, everything expected was observed, or the expectations expired.
func (e *Tracker) Satisfied(key string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	r := e.records[key]
	if r == nil {
		return true
	}
	if r.adds <= 0 && len(r.dels) == 0 {
		return true
	}
	return e.now().Sub(r.set) > Timeout
}

// Pending returns key's outstanding creations and deletions, for logs and tests.
func (e *Tracker) Pending(key string) (adds, dels int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if r := e.records[key]; r != nil {
		return max(r.adds, 0), len(r.dels)
	}
	return 0, 0
}

// Delete forgets key (its object is gone).
func (e *Tracker) Delete(key string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.records, key)
}
