package podgc

import (
	"slices"
	"time"

	corev1 "skiff.dev/proto/core/v1"
)

// quarantine remembers since when each node that pods are bound to has been
// missing from the node cache. Its pods are deleted only once the node has
// been missing for the whole period and a GET confirms it is gone: a cache
// lags, and the pods of a node just created must not pay for it. It is the
// pass's own state (one worker), unguarded.
type quarantine struct {
	period time.Duration
	since  map[string]time.Time
}

func newQuarantine(period time.Duration) *quarantine {
	return &quarantine{period: period, since: map[string]time.Time{}}
}

// update takes the nodes missing from the cache at now (the keys of
// missing): it forgets the nodes no longer missing, starts the quarantine of
// the new ones, and returns those whose quarantine is over, sorted, and when
// the next of the others ends (zero: none).
func (q *quarantine) update(missing map[string][]*corev1.Pod, now time.Time) (due []string, next time.Time) {
	for node := range q.since {
		if _, ok := missing[node]; !ok {
			delete(q.since, node)
		}
	}
	for node := range missing {
		since, ok := q.since[node]
		if !ok {
			since = now
			q.since[node] = now
		}
		end := since.Add(q.period)
		if !end.After(now) {
			due = append(due, node)
		} else if next.IsZero() || end.Before(next) {
			next = end
		}
	}
	slices.Sort(due)
	return due, next
}

// again starts the node's quarantine anew at now (the API still has it),
// and returns when it ends.
func (q *quarantine) again(node string, now time.Time) time.Time {
	q.since[node] = now
	return now.Add(q.period)
}
