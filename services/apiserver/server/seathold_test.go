package server

import (
	"bytes"
	"context"
	"testing"

	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/stats"
	"google.golang.org/protobuf/proto"

	corev1 "skiff.dev/proto/core/v1"
)

// A List's seats go back when the transport frees the list it was given
// (having written it), once, and not before; reading the list for an
// audit log takes nothing away. Any other call's go back at its End.
func TestHeldSeatsGoBackWhenTheAnswerIsWritten(t *testing.T) {
	for _, last := range []struct {
		name  string
		piece []byte
	}{
		{"last piece past the pooling threshold", bytes.Repeat([]byte("x"), 4000)},
		{"short last piece", []byte("short")},
	} {
		t.Run(last.name, func(t *testing.T) {
			h := seatHolder{}
			ctx := h.TagRPC(context.Background(), &stats.RPCTagInfo{})
			released := 0
			if run := holdUntilEnd(ctx, func() { released++ }); run == nil {
				t.Fatal("no func to run")
			} else {
				run() // what the chain runs when the handler returns
			}
			l := &encodedList{pieces: []mem.SliceBuffer{[]byte("head"), last.piece}, newList: func() proto.Message { return &corev1.ConfigMapList{} }}
			l.hold, _ = ctx.Value(seatHoldKey{}).(*seatHold)
			_ = l.buffers().Materialize() // an audit log's read
			sent, err := NewCodec().Marshal(l)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := string(sent.Materialize()), "head"+string(last.piece); got != want {
				t.Fatalf("the codec sent %q, want %q", got[:min(len(got), 20)], want[:min(len(want), 20)])
			}
			h.HandleRPC(ctx, &stats.End{}) // the call ends before its bytes are written
			sent.Ref()                     // the transport takes them
			sent.Free()                    // the call drops its reference
			if released != 0 {
				t.Fatalf("released %d times before the transport wrote the list", released)
			}
			sent.Free() // the transport has written them
			if released != 1 {
				t.Fatalf("released %d times once the list was written, want once", released)
			}
		})
	}

	// grpc-go drops the data frame of a stream the client reset just as
	// the answer was handed over (its writer no longer knows the stream)
	// without freeing it, and may end the call without an error: a List
	// whose stream was reset when its answer was handed over (its context
	// done at OutPayload), or whose call failed, gives its seats back then,
	// whatever becomes of the buffers.
	for _, tc := range []struct {
		name      string
		conn      bool
		reset     bool // the stream reset before the answer was handed over
		endErr    error
		releaseAt string
	}{
		{"reset as the answer was handed over", false, true, nil, "OutPayload"},
		{"reset as the answer was handed over, connection tagged", true, true, nil, "OutPayload"},
		{"failed call", false, false, context.Canceled, "End"},
		{"failed call, connection tagged", true, false, context.Canceled, "End"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := seatHolder{}
			ctx, reset := context.WithCancel(context.Background()) // the stream's
			defer reset()
			if tc.conn {
				ctx = h.TagConn(ctx, &stats.ConnTagInfo{})
			}
			ctx = h.TagRPC(ctx, &stats.RPCTagInfo{})
			released := 0
			holdUntilEnd(ctx, func() { released++ })()
			l := &encodedList{pieces: []mem.SliceBuffer{[]byte("head"), bytes.Repeat([]byte("x"), 4000)}, newList: func() proto.Message { return &corev1.ConfigMapList{} }}
			l.hold, _ = ctx.Value(seatHoldKey{}).(*seatHold)
			sent, err := NewCodec().Marshal(l)
			if err != nil {
				t.Fatal(err)
			}
			sent.Ref() // the transport takes them, and drops them unfreed
			if tc.reset {
				reset()
			}
			sent.Free() // the call drops its reference
			h.HandleRPC(ctx, &stats.OutPayload{})
			if got, want := released, map[bool]int{true: 1}[tc.releaseAt == "OutPayload"]; got != want {
				t.Fatalf("released %d times once the answer was handed over, want %d", got, want)
			}
			h.HandleRPC(ctx, &stats.End{Error: tc.endErr})
			if released != 1 {
				t.Fatalf("released %d times at the call's End, want once", released)
			}
			sent.Free() // had the transport freed them after all
			h.HandleConn(ctx, &stats.ConnEnd{})
			if released != 1 {
				t.Fatalf("released %d times, want once", released)
			}
		})
	}

	t.Run("a call that is not a List", func(t *testing.T) {
		h := seatHolder{}
		ctx := h.TagRPC(context.Background(), &stats.RPCTagInfo{})
		released := 0
		holdUntilEnd(ctx, func() { released++ })()
		h.HandleRPC(ctx, &stats.OutPayload{})
		if released != 0 {
			t.Fatalf("released %d times before the call's End", released)
		}
		h.HandleRPC(ctx, &stats.End{})
		h.HandleRPC(ctx, &stats.End{})
		if released != 1 {
			t.Fatalf("released %d times at the call's End, want once", released)
		}
	})

	t.Run("no stats handler", func(t *testing.T) {
		released := 0
		holdUntilEnd(context.Background(), func() { released++ })()
		if released != 1 {
			t.Fatalf("released %d times when the handler returned, want once", released)
		}
	})
}
