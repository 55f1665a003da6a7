package server

import (
	"context"

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
// the call; any other call's release runs at the call's End (after its
// answer and status are handed to the transport, or it failed).

type seatHoldKey struct{}

// seatHold is one call's release, run at its End.
type seatHold struct{ release func() }

// StatsHandler returns the stats handler that releases held seats: the
// apiserver's gRPC server must have it for seats to be held past the
// handler (without it, they are released when the handler returns).
func (c *Chain) StatsHandler() stats.Handler { return seatHolder{} }

type seatHolder struct{}

func (seatHolder) TagRPC(ctx context.Context, _ *stats.RPCTagInfo) context.Context {
	return context.WithValue(ctx, seatHoldKey{}, &seatHold{})
}

func (seatHolder) HandleRPC(ctx context.Context, s stats.RPCStats) {
	if _, end := s.(*stats.End); !end {
		return
	}
	if h, _ := ctx.Value(seatHoldKey{}).(*seatHold); h != nil && h.release != nil {
		h.release()
		h.release = nil
	}
}

func (seatHolder) TagConn(ctx context.Context, _ *stats.ConnTagInfo) context.Context { return ctx }
func (seatHolder) HandleConn(context.Context, stats.ConnStats)                       {}

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
