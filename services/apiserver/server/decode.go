package server

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"skiff.dev/internal/apierrors"
)

// A request's body is decoded as Kubernetes decodes one, strictly:
//
//   - bytes that do not decode are the client's mistake, a BadRequest (400,
//     INVALID_ARGUMENT) that the chain logs and counts as any other
//     answer. grpc-go answers a codec's error with INTERNAL itself, before
//     any handler or interceptor runs, so the codec leaves its error in
//     the decodeTarget it decodes into (codec.go) and reports success to
//     grpc; the unary handlers (wrapped by decodeErrors) and the chain's
//     streams (recvRequest) then answer it;
//   - a write whose object carries fields the server does not know (a
//     newer client's, or a mistake) is refused and nothing is stored, as
//     Kubernetes' strict field validation refuses `unknown field
//     "spec.foo"`; reads ignore them (strictFields).

// decodeTarget is a request message being decoded: the codec decodes into
// msg and leaves the error it met in err (returning nil to grpc). To any
// other codec (a test's stream, a server without ours) it is msg itself.
type decodeTarget struct {
	msg proto.Message
	err error
}

// ProtoReflect is msg's.
func (t *decodeTarget) ProtoReflect() protoreflect.Message { return t.msg.ProtoReflect() }

// undecodable is the answer to a body that is not a msg.
func undecodable(msg any, err error) error {
	what := fmt.Sprintf("%T", msg)
	if m, ok := msg.(proto.Message); ok {
		what = string(m.ProtoReflect().Descriptor().FullName())
	}
	return apierrors.NewBadRequest(fmt.Sprintf("the request body could not be decoded as a %s: %v", what, err))
}

// recvRequest receives a stream's request into m, its bytes decoded as
// the codec decodes a decodeTarget.
func recvRequest(s grpc.ServerStream, m any) error {
	msg, ok := m.(proto.Message)
	if !ok {
		return s.RecvMsg(m)
	}
	t := decodeTarget{msg: msg}
	if err := s.RecvMsg(&t); err != nil {
		return err
	}
	if t.err != nil {
		return undecodable(m, t.err)
	}
	return nil
}

// undecoded is the request the chain gets for a body that could not be
// decoded: it authenticates the caller and answers err (there is nothing
// to authorize: no namespace, no name).
type undecoded struct{ err error }

// decodeErrors wraps a unary method's handler: a body that does not
// decode is answered by the chain (interceptor) with a BadRequest, logged
// and counted as any other request, instead of grpc's INTERNAL.
func decodeErrors(h grpc.MethodHandler, fullMethod string) grpc.MethodHandler {
	return func(srv any, ctx context.Context, dec func(any) error, interceptor grpc.UnaryServerInterceptor) (any, error) {
		var t decodeTarget
		resp, err := h(srv, ctx, func(v any) error {
			msg, ok := v.(proto.Message)
			if !ok {
				return dec(v)
			}
			t.msg = msg
			if err := dec(&t); err != nil {
				return err
			}
			return t.err // the generated handler returns it, calling nothing
		}, interceptor)
		if t.err == nil {
			return resp, err
		}
		bad := undecodable(t.msg, t.err)
		if interceptor == nil {
			return nil, bad
		}
		return interceptor(ctx, undecoded{bad}, &grpc.UnaryServerInfo{Server: srv, FullMethod: fullMethod},
			func(context.Context, any) (any, error) { return nil, bad })
	}
}

// writesObject says whether the request carries an object to write
// (Create, Update, UpdateStatus, Bind, UpdateScale), whose fields are
// checked strictly.
func (ri *RequestInfo) writesObject() bool {
	return ri.IsResource() && (ri.Verb == "create" || ri.Verb == "update")
}

// maxUnknownReported caps the unknown fields an error lists.
const maxUnknownReported = 10

// strictFields refuses a message that holds fields its type does not
// know, at any depth, naming each by number, the message type it was
// found in, and where: `strict decoding error: unknown field number 99 in
// skiff.core.v1.Container (at spec.containers[1])`. It reads the message
// in place (no copy) and visits only the message fields that are set.
func strictFields(msg any) error {
	m, ok := msg.(proto.Message)
	if !ok || !hasUnknown(m.ProtoReflect()) {
		return nil
	}
	var u unknowns
	u.walk(m.ProtoReflect(), nil)
	if len(u.found) == 0 {
		return nil
	}
	s := "strict decoding error: " + strings.Join(u.found, ", ")
	if u.more > 0 {
		s += fmt.Sprintf(" and %d more", u.more)
	}
	return apierrors.NewBadRequest(s)
}

// hasUnknown says whether m holds unknown fields at any depth: the fast
// path, which allocates nothing but for maps of messages.
func hasUnknown(m protoreflect.Message) bool {
	if len(m.GetUnknown()) > 0 {
		return true
	}
	fields := m.Descriptor().Fields()
	for i := 0; i < fields.Len(); i++ {
		fd := fields.Get(i)
		if !holdsMessages(fd) || !m.Has(fd) {
			continue
		}
		v := m.Get(fd)
		switch {
		case fd.IsList():
			l := v.List()
			for j := 0; j < l.Len(); j++ {
				if hasUnknown(l.Get(j).Message()) {
					return true
				}
			}
		case fd.IsMap():
			found := false
			v.Map().Range(func(_ protoreflect.MapKey, v protoreflect.Value) bool {
				found = hasUnknown(v.Message())
				return !found
			})
			if found {
				return true
			}
		default:
			if hasUnknown(v.Message()) {
				return true
			}
		}
	}
	return false
}

// holdsMessages says whether fd's values (a list's elements, a map's
// values) are messages.
func holdsMessages(fd protoreflect.FieldDescriptor) bool {
	if fd.IsMap() {
		return fd.MapValue().Message() != nil
	}
	return fd.Message() != nil
}

// unknowns collects the unknown fields strictFields reports, with where
// they are (the slow path: some were found).
type unknowns struct {
	found []string
	more  int
}

// step is one step of the path to a message, rendered only when the
// message has unknown fields: a field (name), with an index (a list's
// element) or a key (a map's value) when set.
type step struct {
	parent *step
	name   string
	index  int // -1: none
	key    *protoreflect.MapKey
}

func (s *step) String() string {
	if s == nil {
		return ""
	}
	var b strings.Builder
	s.render(&b)
	return b.String()
}

func (s *step) render(b *strings.Builder) {
	if s.parent != nil {
		s.parent.render(b)
		b.WriteByte('.')
	}
	b.WriteString(s.name)
	switch {
	case s.key != nil:
		b.WriteByte('[')
		b.WriteString(s.key.String())
		b.WriteByte(']')
	case s.index >= 0:
		b.WriteByte('[')
		b.WriteString(strconv.Itoa(s.index))
		b.WriteByte(']')
	}
}

func (u *unknowns) walk(m protoreflect.Message, at *step) {
	if raw := m.GetUnknown(); len(raw) > 0 {
		u.report(m.Descriptor().FullName(), raw, at)
	}
	fields := m.Descriptor().Fields()
	for i := 0; i < fields.Len(); i++ {
		fd := fields.Get(i)
		if !holdsMessages(fd) || !m.Has(fd) {
			continue
		}
		v := m.Get(fd)
		switch {
		case fd.IsList():
			l := v.List()
			for j := 0; j < l.Len(); j++ {
				u.walk(l.Get(j).Message(), &step{parent: at, name: fd.JSONName(), index: j})
			}
		case fd.IsMap():
			v.Map().Range(func(k protoreflect.MapKey, v protoreflect.Value) bool {
				u.walk(v.Message(), &step{parent: at, name: fd.JSONName(), index: -1, key: &k})
				return true
			})
		default:
			u.walk(v.Message(), &step{parent: at, name: fd.JSONName(), index: -1})
		}
	}
}

// report lists the fields of raw, unknown fields of a message of type name.
func (u *unknowns) report(name protoreflect.FullName, raw []byte, at *step) {
	for len(raw) > 0 {
		num, _, n := protowire.ConsumeField(raw)
		if n < 0 {
			return
		}
		raw = raw[n:]
		if len(u.found) == maxUnknownReported {
			u.more++
			continue
		}
		s := fmt.Sprintf("unknown field number %d in %s", num, name)
		if at != nil {
			s += " (at " + at.String() + ")"
		}
		u.found = append(u.found, s)
	}
}
