package job

import (
	"sync"
	"time"
)

// The delay before a failed pod is replaced: 10 s after the first failure
// since the last success, doubling with each further one, at most 6 min
// (Kubernetes' DefaultJobPodFailureBackOff and MaxJobPodFailureBackOff).
const (
	DefaultPodFailureBackoff = 10 * time.Second
	MaxPodFailureBackoff     = 6 * time.Minute
)

// backoffRecord is what the controller remembers of a Job's failures: how
// many pods failed since the last success, and when the last did.
type backoffRecord struct {
	failuresAfterLastSuccess int
	lastFailure              time.Time
}

// nextBackoffRecord folds the pods that finished since the last sync into
// rec: a success starts the count again from the failures that finished
// after it (Kubernetes' newBackoffRecord).
func nextBackoffRecord(rec backoffRecord, succeeded, failed []time.Time) backoffRecord {
	lastSuccess := time.Time{}
	for _, t := range succeeded {
		if t.After(lastSuccess) {
			lastSuccess = t
		}
	}
	if len(succeeded) > 0 {
		rec = backoffRecord{}
	}
	for _, t := range failed {
		if len(succeeded) > 0 && !t.After(lastSuccess) {
			continue
		}
		rec.failuresAfterLastSuccess++
		if t.After(rec.lastFailure) {
			rec.lastFailure = t
		}
	}
	return rec
}

// remaining returns how long the Job must still wait before it replaces a
// failed pod, at now: base * 2^(failures-1) (capped at maxDelay) after the
// last failure.
func (rec backoffRecord) remaining(now time.Time, base, maxDelay time.Duration) time.Duration {
	if rec.failuresAfterLastSuccess == 0 {
		return 0
	}
	delay := base
	for i := 1; i < rec.failuresAfterLastSuccess && delay < maxDelay; i++ {
		delay *= 2
	}
	delay = min(delay, maxDelay)
	elapsed := now.Sub(rec.lastFailure)
	if elapsed < 0 {
		elapsed = 0
	}
	return max(delay-elapsed, 0)
}

// backoffStore holds each Job's backoffRecord by key, in memory (as
// Kubernetes': a restarted controller forgets them).
type backoffStore struct {
	mu      sync.Mutex
	records map[string]backoffRecord
}

func newBackoffStore() *backoffStore { return &backoffStore{records: map[string]backoffRecord{}} }

func (s *backoffStore) get(key string) backoffRecord {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.records[key]
}

func (s *backoffStore) set(key string, r backoffRecord) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.records[key] = r
}

func (s *backoffStore) forget(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.records, key)
}
