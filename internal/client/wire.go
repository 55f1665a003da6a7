package client

import (
	"fmt"

	"google.golang.org/grpc"
	"google.golang.org/grpc/encoding"
	protocodec "google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// protoEncoding is the standard protobuf codec's encoding side, which the
// call options' codecs below share: they differ in how they decode.
type protoEncoding struct{}

func (protoEncoding) Marshal(v any) (mem.BufferSlice, error) {
	return encoding.GetCodecV2(protocodec.Name).Marshal(v)
}

func (protoEncoding) Name() string { return protocodec.Name }

// rawCodec receives a message as its undecoded bytes (into a *[]byte), so
// a watch response's events can be walked without copying them, and sends
// a []byte request as it is; everything else goes through the standard
// protobuf codec.
type rawCodec struct{ protoEncoding }

func (rawCodec) Marshal(v any) (mem.BufferSlice, error) {
	if b, ok := v.([]byte); ok {
		return mem.BufferSlice{mem.SliceBuffer(b)}, nil
	}
	return protoEncoding{}.Marshal(v)
}

func (rawCodec) Unmarshal(data mem.BufferSlice, v any) error {
	if p, ok := v.(*[]byte); ok {
		// Reuse the caller's buffer: a watch reads many messages.
		b := (*p)[:0]
		for _, buf := range data {
			b = append(b, buf.ReadOnlyData()...)
		}
		*p = b
		return nil
	}
	return encoding.GetCodecV2(protocodec.Name).Unmarshal(data, v)
}

// metaCodec decodes answers with their unknown fields discarded, so that
// an object decoded into metav1.PartialObjectMetadata skips its spec and
// status instead of keeping them as unknown bytes.
type metaCodec struct{ protoEncoding }

func (metaCodec) Unmarshal(data mem.BufferSlice, v any) error {
	m, ok := v.(proto.Message)
	if !ok {
		return fmt.Errorf("client: cannot decode into %T: not a protobuf message", v)
	}
	buf := data.MaterializeToBuffer(mem.DefaultBufferPool())
	defer buf.Free()
	// Decoding copies strings and bytes: nothing refers to buf afterwards.
	return proto.UnmarshalOptions{DiscardUnknown: true}.Unmarshal(buf.ReadOnlyData(), m)
}

// RawWatch is the call option that lets RecvMsg(*[]byte) take a watch
// response's bytes as they came, into the slice's own array (reused, so
// the bytes are valid until the next RecvMsg into the same slice); walk
// them with WatchEvents.
func RawWatch() grpc.CallOption { return grpc.ForceCodecV2(rawCodec{}) }

// Raw is the call option that sends a []byte request as it is (tests that
// reach the server's decoding with bytes of their choice) and, as
// RawWatch, receives into a *[]byte.
func Raw() grpc.CallOption { return RawWatch() }

// WatchEvents walks the events of an encoded watch response (any kind's
// <Kind>WatchResponse, or skiff.meta.v1.WatchResponse) and calls fn with
// each event's type and encoded object, in order, without copying them.
func WatchEvents(resp []byte, fn func(typ string, object []byte) error) error {
	for len(resp) > 0 {
		num, wt, n := protowire.ConsumeTag(resp)
		if n < 0 {
			return fmt.Errorf("watch response: %w", protowire.ParseError(n))
		}
		resp = resp[n:]
		if num != 1 || wt != protowire.BytesType {
			if n = protowire.ConsumeFieldValue(num, wt, resp); n < 0 {
				return fmt.Errorf("watch response: %w", protowire.ParseError(n))
			}
			resp = resp[n:]
			continue
		}
		ev, n := protowire.ConsumeBytes(resp)
		if n < 0 {
			return fmt.Errorf("watch response: %w", protowire.ParseError(n))
		}
		resp = resp[n:]
		var typ string
		var obj []byte
		for len(ev) > 0 {
			num, wt, n := protowire.ConsumeTag(ev)
			if n < 0 {
				return fmt.Errorf("watch event: %w", protowire.ParseError(n))
			}
			ev = ev[n:]
			switch {
			case num == 1 && wt == protowire.BytesType:
				b, n := protowire.ConsumeBytes(ev)
				if n < 0 {
					return fmt.Errorf("watch event type: %w", protowire.ParseError(n))
				}
				typ, ev = eventType(b), ev[n:]
			case num == 2 && wt == protowire.BytesType:
				b, n := protowire.ConsumeBytes(ev)
				if n < 0 {
					return fmt.Errorf("watch event object: %w", protowire.ParseError(n))
				}
				obj, ev = b, ev[n:]
			default:
				n := protowire.ConsumeFieldValue(num, wt, ev)
				if n < 0 {
					return fmt.Errorf("watch event: %w", protowire.ParseError(n))
				}
				ev = ev[n:]
			}
		}
		if err := fn(typ, obj); err != nil {
			return err
		}
	}
	return nil
}

// eventTypes are the types a watch event carries, so that naming one does
// not allocate a string per event.
var eventTypes = []string{"ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR"}

func eventType(b []byte) string {
	for _, t := range eventTypes {
		if string(b) == t {
			return t
		}
	}
	return string(b)
}
