package server

import (
	"google.golang.org/grpc/encoding"
	protocodec "google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
)

// rawBatch is an encoded message made of several shared pieces (watch
// events encoded once for every watcher); the codec sends them as they
// are, without copying them together. The pieces must never change.
type rawBatch [][]byte

// codec is the standard protobuf codec plus rawBatch pass-through.
type codec struct{ proto encoding.CodecV2 }

// NewCodec returns the codec the apiserver forces on its gRPC server.
func NewCodec() encoding.CodecV2 { return codec{proto: encoding.GetCodecV2(protocodec.Name)} }

func (c codec) Marshal(v any) (mem.BufferSlice, error) {
	if raw, ok := v.(rawBatch); ok {
		out := make(mem.BufferSlice, len(raw))
		for i, b := range raw {
			out[i] = mem.SliceBuffer(b)
		}
		return out, nil
	}
	return c.proto.Marshal(v)
}

func (c codec) Unmarshal(data mem.BufferSlice, v any) error { return c.proto.Unmarshal(data, v) }

func (c codec) Name() string { return protocodec.Name }
