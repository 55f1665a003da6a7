package server

import (
	"bytes"
	"testing"

	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"

	corev1 "skiff.dev/proto/core/v1"
)

// countingPool counts the buffers given back to it.
type countingPool struct{ put int }

func (p *countingPool) Get(n int) *[]byte { b := make([]byte, n); return &b }
func (p *countingPool) Put(*[]byte)       { p.put++ }

// received is data as the transport hands it to the codec: pieces (one
// per HTTP/2 frame) in buffers of pool.
func received(pool *countingPool, data []byte, pieces int) mem.BufferSlice {
	var out mem.BufferSlice
	for i := range pieces {
		b := bytes.Clone(data[i*len(data)/pieces : (i+1)*len(data)/pieces])
		out = append(out, mem.NewBuffer(&b, pool))
	}
	return out
}

// A relayed message is sent as it arrived, in the buffers it arrived in
// (no copy, no decoding), which go back to their pool once the transport
// has written them; one received and not sent gives them back on Free.
func TestRelayedMessagesPassThroughUndecoded(t *testing.T) {
	msg := &corev1.PortForwardResponse{Data: bytes.Repeat([]byte("0123456789abcdef"), 2048)} // 32 KiB
	wire, err := proto.Marshal(msg)
	if err != nil {
		t.Fatal(err)
	}
	c := NewCodec()

	t.Run("sent", func(t *testing.T) {
		pool := &countingPool{}
		in := received(pool, wire, 2)
		var r Relayed
		if err := c.Unmarshal(in, &r); err != nil {
			t.Fatal(err)
		}
		in.Free() // what grpc does once Unmarshal returns
		if pool.put != 0 {
			t.Fatalf("%d buffers went back to the pool while the message was held", pool.put)
		}
		out, err := c.Marshal(&r)
		if err != nil {
			t.Fatal(err)
		}
		if len(out) != len(in) || !bytes.Equal(out.Materialize(), wire) {
			t.Fatalf("sent %d bytes in %d buffers, want the %d received in %d", out.Len(), len(out), len(wire), len(in))
		}
		got := &corev1.PortForwardResponse{}
		if err := proto.Unmarshal(out.Materialize(), got); err != nil || !proto.Equal(got, msg) {
			t.Fatalf("what was sent decodes as %d bytes of data (%v), want the message received", len(got.GetData()), err)
		}
		out.Free() // the transport has written it
		if pool.put != len(in) {
			t.Fatalf("%d of %d buffers went back to the pool once written", pool.put, len(in))
		}
		r.Free() // a relay giving up after a send: nothing more to give back
		if pool.put != len(in) {
			t.Fatalf("%d buffers given back, want %d", pool.put, len(in))
		}
	})

	t.Run("dropped", func(t *testing.T) {
		pool := &countingPool{}
		in := received(pool, wire, 2)
		var r Relayed
		if err := c.Unmarshal(in, &r); err != nil {
			t.Fatal(err)
		}
		in.Free()
		r.Free()
		if pool.put != len(in) {
			t.Fatalf("%d of %d buffers went back to the pool on Free", pool.put, len(in))
		}
	})

	t.Run("messages are still encoded and decoded", func(t *testing.T) {
		out, err := c.Marshal(msg)
		if err != nil {
			t.Fatal(err)
		}
		got := &corev1.PortForwardResponse{}
		if err := c.Unmarshal(out, got); err != nil || !proto.Equal(got, msg) {
			t.Fatalf("round trip gave %d bytes of data (%v)", len(got.GetData()), err)
		}
	})
}
