package storage

import (
	"context"
	"errors"
	"sync"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/storage/mvcc"
)

// WatchResponse is one batch of changes of a watched prefix.
type WatchResponse struct {
	Events []*mvccpb.Event
	// Revision is etcd's revision when the batch was made.
	Revision int64
	// Progress is set on a progress notification: nothing changed up to Revision.
	Progress bool
	// CompactRevision is set when the watch ended because etcd compacted
	// the revision it needed.
	CompactRevision int64
}

// WatchStream is a running etcd watch of one prefix.
type WatchStream interface {
	// Responses yields batches in revision order; it is closed when the
	// watch ends (Err then says why, nil after Close).
	Responses() <-chan WatchResponse
	// RequestProgress asks for a progress notification.
	RequestProgress()
	Err() error
	Close()
}

// Watcher starts watches on etcd.
type Watcher interface {
	// Watch streams the changes under prefix after revision afterRev.
	Watch(ctx context.Context, prefix string, afterRev int64) WatchStream
}

// ---------------------------------------------------------------- clientv3

// ClientWatcher watches through an etcd client (external etcd).
type ClientWatcher struct{ Client *clientv3.Client }

type clientStream struct {
	client *clientv3.Client
	ctx    context.Context
	cancel context.CancelFunc
	out    chan WatchResponse
	err    error
}

func (w ClientWatcher) Watch(ctx context.Context, prefix string, afterRev int64) WatchStream {
	ctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	s := &clientStream{client: w.Client, ctx: ctx, cancel: cancel, out: make(chan WatchResponse, 16)}
	wch := w.Client.Watch(ctx, prefix, clientv3.WithPrefix(), clientv3.WithRev(afterRev+1), clientv3.WithProgressNotify())
	go func() {
		defer close(s.out)
		for resp := range wch {
			r := WatchResponse{Events: resp.Events, Revision: resp.Header.Revision, Progress: resp.IsProgressNotify(), CompactRevision: resp.CompactRevision}
			if err := resp.Err(); err != nil && r.CompactRevision == 0 {
				s.err = err
				return
			}
			select {
			case s.out <- r:
			case <-ctx.Done():
				return
			}
			if r.CompactRevision != 0 {
				return
			}
		}
		if ctx.Err() == nil {
			s.err = errors.New("etcd watch channel closed")
		}
	}()
	return s
}

func (s *clientStream) Responses() <-chan WatchResponse { return s.out }
func (s *clientStream) RequestProgress()                { _ = s.client.RequestProgress(s.ctx) }
func (s *clientStream) Err() error                      { return s.err }
func (s *clientStream) Close()                          { s.cancel() }

// ---------------------------------------------------------------- in-process

// MVCCWatcher watches the embedded etcd's MVCC store directly: no gRPC, no
// client goroutines between etcd and the watch cache.
type MVCCWatcher struct{ KV mvcc.WatchableKV }

type mvccStream struct {
	ws   mvcc.WatchStream
	id   mvcc.WatchID
	out  chan WatchResponse
	stop chan struct{}
	once sync.Once
	err  error
}

func (w MVCCWatcher) Watch(ctx context.Context, prefix string, afterRev int64) WatchStream {
	s := &mvccStream{ws: w.KV.NewWatchStream(), out: make(chan WatchResponse, 16), stop: make(chan struct{})}
	key := []byte(prefix)
	end := []byte(clientv3.GetPrefixRangeEnd(prefix))
	id, err := s.ws.Watch(ctx, clientv3.AutoWatchID, key, end, afterRev+1)
	if err != nil {
		s.err = err
		close(s.out)
		return s
	}
	s.id = id
	go s.pump(ctx)
	return s
}

// pump takes responses off etcd's channel at once and queues them, so
// etcd never sees the watch as slow (a slow watch is replayed from disk,
// which costs far more than the queue).
func (s *mvccStream) pump(ctx context.Context) {
	defer close(s.out)
	defer s.ws.Close()
	var queue []WatchResponse
	in := s.ws.Chan()
	for {
		var out chan WatchResponse
		var head WatchResponse
		if len(queue) > 0 {
			out, head = s.out, queue[0]
		}
		select {
		case <-ctx.Done():
			return
		case <-s.stop:
			return
		case r, ok := <-in:
			if !ok {
				s.err = errors.New("etcd watch stream closed")
				return
			}
			queue = append(queue, WatchResponse{
				Events:          r.Events,
				Revision:        r.Revision,
				Progress:        len(r.Events) == 0 && r.CompactRevision == 0,
				CompactRevision: r.CompactRevision,
			})
		case out <- head:
			queue[0] = WatchResponse{}
			queue = queue[1:]
			if head.CompactRevision != 0 {
				return
			}
		}
	}
}

func (s *mvccStream) Responses() <-chan WatchResponse { return s.out }
func (s *mvccStream) RequestProgress()                { s.ws.RequestProgress(s.id) }
func (s *mvccStream) Err() error                      { return s.err }
func (s *mvccStream) Close()                          { s.once.Do(func() { close(s.stop) }) }
