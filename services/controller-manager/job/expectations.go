package job

import "sync"

// finalizerExpectations hold, per Job key, the uids of pods whose tracking
// finalizer removal is in flight (Kubernetes' finalizerExpectations): such
// a pod is not tracked again until the informer shows the removal, or the
// pod gone, or the write failed. The pod creations and deletions in flight
// are package expectations' (Controller.expectations). They do not expire:
// every removal ends in an observation (the update, the delete, or the
// failed call).
type finalizerExpectations struct {
	mu   sync.Mutex
	uids map[string]map[string]struct{} // Job key -> pod uids
}

func newFinalizerExpectations() *finalizerExpectations {
	return &finalizerExpectations{uids: map[string]map[string]struct{}{}}
}

// expect records that the finalizers of the pods uids are being removed.
func (e *finalizerExpectations) expect(key string, uids []string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	set := e.uids[key]
	if set == nil {
		set = make(map[string]struct{}, len(uids))
		e.uids[key] = set
	}
	for _, u := range uids {
		set[u] = struct{}{}
	}
}

// observed marks uid's finalizer removal as seen (or failed).
func (e *finalizerExpectations) observed(key, uid string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if set := e.uids[key]; set != nil {
		delete(set, uid)
		if len(set) == 0 {
			delete(e.uids, key)
		}
	}
}

// pending returns a copy of the uids whose finalizer removal is in flight
// for key. Read it before the pods cache, as package expectations'
// Satisfied: a removal observed in between then makes a pod look in
// flight and finalizer-free at once (harmless), never holding its
// finalizer and not in flight (counted again).
func (e *finalizerExpectations) pending(key string) map[string]struct{} {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make(map[string]struct{}, len(e.uids[key]))
	for u := range e.uids[key] {
		out[u] = struct{}{}
	}
	return out
}

// forget drops key's uids (its Job is gone).
func (e *finalizerExpectations) forget(key string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.uids, key)
}
