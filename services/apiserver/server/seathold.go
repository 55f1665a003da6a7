package server

import (
	"context"
	"sync"

	"google.golang.org/grpc/stats"
)

// A unary request holds its seats until its answer is written, as
// Kubernetes' flow control holds a request's seats until its handler has
// written the response. The handler of a List returns at once with the
// list's encoded pieces, which the transport then copies, encrypts and
// writes as the client reads them: most of the List's work, and none of
// it bounded by seats given back when the handler returns (a flood of
// large Lists then took all the CPU while holding one seat at a time).
//
// The stats handler marks each call's context with a seatHold; the chain
// leaves the call's release there. The codec moves a List's to the last
// piece of the list it gives the transport (codec.go: encodedList.wire),
// which frees it once it has written the whole list, or dropped it with
// the call (a connection that ends with it unwritten never frees it: its
// ConnEnd gives the seats back); any other call's release runs at the call's End (after its
// answer and status are handed to the transport, or it failed). grpc-go
// drops the data of a stream the client reset just as the answer was
// handed over (its writer no longer knows the stream) without freeing it,
// and may then end the call without an error; the seats were held until
// the connection ended (the flooder's cancelled Lists left its level
// without seats for a List of 500). So a List whose stream is reset when
// its answer is handed over (its context done at OutPayload, which the
// reset happens before when the data is dropped: the reset cancels the
// context before it queues the stream's cleanup, and the writer takes
// them in order), or whose call fails, gives its seats back then.

type seatHoldKey struct{}

// seatHold is one call's release, run at its End.
type seatHold struct {
	release func()
	conn    *connHold // the call's connection's (nil: no stats handler's)
	// buffered is the release toBuffer gave a buffer (it runs once): a
	// failed call's End runs it.
	buffered func()
}

// toBuffer takes the call's release for the buffer that gives it back
// once the transport has freed it. A transport that closes its connection
// with the buffer unwritten never frees it: the connection's end gives
// back the seats of every such buffer (HandleConn), once.
func (h *seatHold) toBuffer() func() {
	release := h.release
	h.release = nil
	if h.conn == nil {
		h.buffered = sync.OnceFunc(release)
	} else {
		h.buffered = h.conn.add(release)
	}
	return h.buffered
}

type connHoldKey struct{}

// connHold is what a connection's calls gave to buffers not yet freed.
type connHold struct {
	mu      sync.Mutex
	ended   bool
	pending map[*pendingRelease]struct{}
}

type pendingRelease struct {
	once    sync.Once
	release func()
	conn    *connHold
}

func (p *pendingRelease) run() {
	p.once.Do(func() {
		p.conn.mu.Lock()
		delete(p.conn.pending, p)
		p.conn.mu.Unlock()
		p.release()
	})
}

// add registers release and returns what runs it at most once; on an
// ended connection it runs at once (nothing will be written).
func (c *connHold) add(release func()) func() {
	p := &pendingRelease{release: release, conn: c}
	c.mu.Lock()
	ended := c.ended
	if !ended {
		c.pending[p] = struct{}{}
	}
	c.mu.Unlock()
	if ended {
		p.run()
	}
	return p.run
}

// end gives back what the connection's unwritten buffers hold.
func (c *connHold) end() {
	c.mu.Lock()
	c.ended = true
	left := make([]*pendingRelease, 0, len(c.pending))
	for p := range c.pending {
		left = append(left, p)
	}
	c.mu.Unlock()
	for _, p := range left {
		p.run()
	}
}

// StatsHandler returns the stats handler that releases held seats: the
// apiserver's gRPC server must have it for seats to be held past the
// handler (without it, they are released when the handler returns).
func (c *Chain) StatsHandler() stats.Handler { return seatHolder{} }

type seatHolder struct{}

func (seatHolder) TagRPC(ctx context.Context, _ *stats.RPCTagInfo) context.Context {
	conn, _ := ctx.Value(connHoldKey{}).(*connHold)
	return context.WithValue(ctx, seatHoldKey{}, &seatHold{conn: conn})
}

func (seatHolder) HandleRPC(ctx context.Context, s stats.RPCStats) {
	h, _ := ctx.Value(seatHoldKey{}).(*seatHold)
	if h == nil {
		return
	}
	switch s := s.(type) {
	case *stats.OutPayload:
		// The answer is handed to the transport. A stream already reset
		// (its context done: a normal end cancels it only later, with the
		// status) may have had it dropped unfreed.
		if ctx.Err() != nil && h.buffered != nil {
			h.buffered()
		}
	case *stats.End:
		switch {
		case h.release != nil:
			h.release()
			h.release = nil
		case s.Error != nil && h.buffered != nil:
			h.buffered() // its buffers may never be freed
		}
	}
}

func (seatHolder) TagConn(ctx context.Context, _ *stats.ConnTagInfo) context.Context {
	return context.WithValue(ctx, connHoldKey{}, &connHold{pending: map[*pendingRelease]struct{}{}})
}

func (seatHolder) HandleConn(ctx context.Context, s stats.ConnStats) {
	if _, end := s.(*stats.ConnEnd); !end {
		return
	}
	if c, _ := ctx.Value(connHoldKey{}).(*connHold); c != nil {
		c.end()
	}
}

// holdUntilEnd hands release to the call's stats handler and returns
// what the caller runs instead: nothing if the handler takes it, else
// release itself (no stats handler: a test's chain).
func holdUntilEnd(ctx context.Context, release func()) func() {
	if h, _ := ctx.Value(seatHoldKey{}).(*seatHold); h != nil {
		h.release = release
		return func() {}
	}
	return release
}
