package server

import (
	"google.golang.org/grpc/encoding"
	protocodec "google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"
)

// rawBatch is an encoded message made of several shared pieces (watch
// events encoded once for every watcher); the codec sends them as they
// are, without copying them together. The pieces must never change.
type rawBatch [][]byte

// encodedList is a List response encoded by the endpoint from pieces it
// shares with the watch cache (Endpoint.ListEncoded); the codec sends
// them as they are. The pieces must never change.
type encodedList struct {
	pieces  []mem.SliceBuffer // each sent in place (see buffers)
	newList func() proto.Message
	// hold, when set, has the release of the List's seats: wire moves it
	// to the last piece, freed once the transport has taken the whole
	// list to the wire (seathold.go).
	hold *seatHold
}

// Encoded is a response its handler encoded (a List: see
// Endpoint.ListEncoded). Message decodes it, for the rare reader that
// needs it as a message: an audit log that records response bodies.
type Encoded interface {
	Message() (proto.Message, error)
}

// Message decodes the list into a new list message.
func (l *encodedList) Message() (proto.Message, error) {
	m := l.newList()
	return m, l.unmarshal(m)
}

func (l *encodedList) unmarshal(m proto.Message) error {
	return proto.Unmarshal(l.buffers().Materialize(), m)
}

// buffers is the list as buffers that point at its pieces: one
// allocation, however many pieces.
func (l *encodedList) buffers() mem.BufferSlice {
	out := make(mem.BufferSlice, len(l.pieces))
	for i := range l.pieces {
		out[i] = &l.pieces[i]
	}
	return out
}

// wire is the list as the transport takes it: buffers, the last of which
// releases the List's seats when the transport frees it (if it holds
// them), having written the whole list or given up on it.
func (l *encodedList) wire() mem.BufferSlice {
	out := l.buffers()
	if h := l.hold; h != nil && h.release != nil && len(out) > 0 {
		out[len(out)-1] = releasedWhenFreed(l.pieces[len(l.pieces)-1], h.toBuffer())
	}
	return out
}

// releasedWhenFreed is b as a buffer that runs release when the
// transport frees it, having written it (or dropped it with its call).
// A buffer at most mem's pooling threshold would not be counted: a short
// last piece is copied into a longer one.
func releasedWhenFreed(b []byte, release func()) mem.Buffer {
	if mem.IsBelowBufferPoolingThreshold(cap(b)) {
		b = append(make([]byte, 0, 4096), b...)
	}
	return mem.NewBuffer(&b, releasePool{release})
}

// releasePool is the pool of one buffer: giving it back releases seats.
type releasePool struct{ release func() }

func (p releasePool) Get(int) *[]byte { panic("releasePool only takes its buffer back") }
func (p releasePool) Put(*[]byte)     { p.release() }

// Relayed is a message passed on as it arrived, never decoded: a stream
// the apiserver relays between a client and a node agent (exec,
// port-forward). Receiving into it keeps the received buffers; sending
// it hands them to the transport, which frees them once written. It is
// sent at most once.
type Relayed struct{ data mem.BufferSlice }

// Free gives back the buffers of a message received and not sent.
func (r *Relayed) Free() {
	r.data.Free()
	r.data = nil
}

// codec is the standard protobuf codec plus rawBatch, encodedList and
// Relayed pass-through, and decodeTarget's kept errors.
type codec struct{ proto encoding.CodecV2 }

// NewCodec returns the codec the apiserver forces on its gRPC server, and
// on the streams it relays to node agents.
func NewCodec() encoding.CodecV2 { return codec{proto: encoding.GetCodecV2(protocodec.Name)} }

func (c codec) Marshal(v any) (mem.BufferSlice, error) {
	switch v := v.(type) {
	case rawBatch:
		return buffers(v), nil
	case *encodedList:
		return v.wire(), nil
	case *Relayed:
		data := v.data
		v.data = nil
		return data, nil
	}
	return c.proto.Marshal(v)
}

// buffers views pieces as buffers without copying them, in two
// allocations whatever their number (each SliceBuffer put in a Buffer
// interface by value would be allocated on its own).
func buffers(pieces [][]byte) mem.BufferSlice {
	views := make([]mem.SliceBuffer, len(pieces))
	out := make(mem.BufferSlice, len(pieces))
	for i, b := range pieces {
		views[i] = b
		out[i] = &views[i]
	}
	return out
}

// Unmarshal decodes a request. Into a decodeTarget, it leaves its error in
// the target and returns nil, for the caller to answer it as the client's
// mistake (decode.go): grpc-go sends INTERNAL for any error it returns, at
// once, before a handler could answer otherwise.
func (c codec) Unmarshal(data mem.BufferSlice, v any) error {
	switch v := v.(type) {
	case *decodeTarget:
		v.err = c.proto.Unmarshal(data, v.msg)
		return nil
	case *Relayed:
		// grpc frees data when Unmarshal returns: the reference taken
		// here is the transport's once v is sent.
		data.Ref()
		v.data = data
		return nil
	}
	return c.proto.Unmarshal(data, v)
}

func (c codec) Name() string { return protocodec.Name }
