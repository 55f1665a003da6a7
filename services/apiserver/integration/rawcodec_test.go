package integration

import (
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/mem"
)

// rawCodec sends []byte requests as they are, so that a test reaches the
// server's decoding with bytes of its choice. (FuzzCreate, which sends
// random bytes as every kind's writes, is in tests/conformance: it covers
// every declared kind, seeded with each one's example.)
type rawCodec struct{}

func (rawCodec) Marshal(v any) (mem.BufferSlice, error) {
	if b, ok := v.([]byte); ok {
		return mem.BufferSlice{mem.SliceBuffer(b)}, nil
	}
	return encoding.GetCodecV2("proto").Marshal(v)
}
func (rawCodec) Unmarshal(data mem.BufferSlice, v any) error {
	return encoding.GetCodecV2("proto").Unmarshal(data, v)
}
func (rawCodec) Name() string { return "proto" }
