package statefulset

import (
	"sync"
	"time"
)

// expectationsTimeout is how long expectations are trusted (Kubernetes'
// controller.ExpectationsTimeout).
const expectationsTimeout = 5 * time.Minute

// expectations track, per StatefulSet key, the pods it created or deleted
// that the pods informer has not shown yet, by pod name (a set's pod names
// are its own choice). While some are outstanding the cache is stale for
// that set and a sync only writes its status: acting on a stale cache would
// create a pod that exists or delete one twice, and OrderedReady would
// move on before seeing the pod it waits for.
type expectations struct {
	now func() time.Time

	mu      sync.Mutex
	records map[string]*expectation
}

type expectation struct {
	creates map[string]bool // pod names
	deletes map[string]bool // pod names
	set     time.Time
}

func newExpectations(now func() time.Time) *expectations {
	return &expectations{now: now, records: map[string]*expectation{}}
}

func (e *expectations) record(key string) *expectation {
	r := e.records[key]
	if r == nil || e.now().Sub(r.set) > expectationsTimeout {
		r = &expectation{creates: map[string]bool{}, deletes: map[string]bool{}}
		e.records[key] = r
	}
	r.set = e.now()
	return r
}

// expectCreate records that pod is about to be created for key.
func (e *expectations) expectCreate(key, pod string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.record(key).creates[pod] = true
}

// expectDelete records that pod is about to be deleted for key.
func (e *expectations) expectDelete(key, pod string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.record(key).deletes[pod] = true
}

// created marks the creation of pod seen (or failed) for key.
func (e *expectations) created(key, pod string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if r := e.records[key]; r != nil {
		delete(r.creates, pod)
	}
}

// deleted marks the deletion of pod seen (or failed) for key.
func (e *expectations) deleted(key, pod string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if r := e.records[key]; r != nil {
		delete(r.deletes, pod)
	}
}

// satisfied says whether key's cache can be trusted: nothing outstanding,
// or the expectations expired.
func (e *expectations) satisfied(key string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	r := e.records[key]
	return r == nil || len(r.creates)+len(r.deletes) == 0 || e.now().Sub(r.set) > expectationsTimeout
}

// forget drops key's expectations (its set is gone).
func (e *expectations) forget(key string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.records, key)
}
