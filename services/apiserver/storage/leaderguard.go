package storage

import (
	"context"
	"errors"
	"sync"
	"time"
)

// LeaderGuard ends the writes that were in flight when etcd's leader
// changed, Grace after the change. A write that a follower forwarded to a
// leader that then died is lost unless it reached a quorum, and etcd
// answers it only at its request timeout (5 s and two election timeouts:
// 7 s), during which the client that sent it waits. Once a new leader is
// elected it commits its predecessors' entries with its first one, so a
// write still unanswered Grace after the change is, almost surely, lost:
// it is answered Timeout at once (its outcome unknown, as any timeout's),
// and its client retries against the new leader seconds earlier. A write
// sent after the change is not touched.
//
// The apiserver calls LeaderChanged from etcd's leader-change notification
// (members of a cluster only: a cluster of one keeps its leader).
type LeaderGuard struct {
	Grace time.Duration

	mu       sync.Mutex
	next     uint64
	inflight map[uint64]context.CancelCauseFunc
}

// errLeaderLost is the cause of a write the guard ended.
var errLeaderLost = errors.New("etcd's leader changed while this write was in flight")

// begin registers a write; done unregisters it. A nil guard does nothing.
func (g *LeaderGuard) begin(ctx context.Context) (context.Context, func()) {
	if g == nil {
		return ctx, func() {}
	}
	ctx, cancel := context.WithCancelCause(ctx)
	g.mu.Lock()
	if g.inflight == nil {
		g.inflight = map[uint64]context.CancelCauseFunc{}
	}
	g.next++
	id := g.next
	g.inflight[id] = cancel
	g.mu.Unlock()
	return ctx, func() {
		g.mu.Lock()
		delete(g.inflight, id)
		g.mu.Unlock()
		cancel(nil)
	}
}

// LeaderChanged ends, Grace from now, the writes in flight now that are
// still in flight then.
func (g *LeaderGuard) LeaderChanged() {
	g.mu.Lock()
	var ids []uint64
	for id := range g.inflight {
		ids = append(ids, id)
	}
	g.mu.Unlock()
	if len(ids) == 0 {
		return
	}
	time.AfterFunc(g.Grace, func() {
		g.mu.Lock()
		defer g.mu.Unlock()
		for _, id := range ids {
			if cancel, ok := g.inflight[id]; ok {
				cancel(errLeaderLost)
			}
		}
	})
}
