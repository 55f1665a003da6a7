package server

import (
	"google.golang.org/grpc/encoding"
	protocodec "google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
)

// rawMessage is an already-encoded protobuf message; the codec sends its
// bytes as they are. The bytes must not change after SendMsg.
type rawMessage []byte

// rawBatch is an encoded message made of several shared pieces (watch
// events encoded once for every watcher); the codec sends them without
// copying them together.
type rawBatch [][]byte

// codec is the standard protobuf codec plus rawMessage and rawBatch pass-through.
type codec struct{ proto encoding.CodecV2 }

// NewCodec returns the codec the apiserver forces on its gRPC server.
func NewCodec() encoding.CodecV2 { return codec{proto: encoding.GetCodecV2(protocodec.Name)} }

func (c codec) Marshal(v any) (mem.BufferSlice, error) {
	switch raw := v.(type) {
	case rawMessage:
		return mem.BufferSlice{mem.SliceBuffer(raw)}, nil
	case rawBatch:
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
