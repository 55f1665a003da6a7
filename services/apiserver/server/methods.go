package server

import (
	"context"
	"fmt"
	"io"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// Methods knows every method registered through its Registrar, to call it
// in-process: the HTTP API (package httpapi) serves Kubernetes' REST
// requests by calling the same methods, through the same chain
// (authentication, fairness, authorization, audit, metrics), as a gRPC
// client's call does. A call hands its request message to the method
// (handOver): its nested messages, lists and maps become the method's.
type Methods struct {
	chain  *Chain
	mu     sync.RWMutex
	unary  map[string]unaryMethod
	stream map[string]streamMethod
}

type unaryMethod struct {
	srv     any
	handler grpc.MethodHandler
}

type streamMethod struct {
	srv  any
	desc grpc.StreamDesc
}

// NewMethods returns an empty table whose calls pass chain.
func NewMethods(chain *Chain) *Methods {
	return &Methods{chain: chain, unary: map[string]unaryMethod{}, stream: map[string]streamMethod{}}
}

// Registrar records the services registered on r (after EncodedLists'
// changes, when it wraps r) and registers them on r.
func (m *Methods) Registrar(r grpc.ServiceRegistrar) grpc.ServiceRegistrar {
	return recording{ServiceRegistrar: r, m: m}
}

type recording struct {
	grpc.ServiceRegistrar
	m *Methods
}

func (r recording) RegisterService(desc *grpc.ServiceDesc, impl any) {
	r.m.mu.Lock()
	for _, md := range desc.Methods {
		r.m.unary["/"+desc.ServiceName+"/"+md.MethodName] = unaryMethod{srv: impl, handler: md.Handler}
	}
	for _, sd := range desc.Streams {
		r.m.stream["/"+desc.ServiceName+"/"+sd.StreamName] = streamMethod{srv: impl, desc: sd}
	}
	r.m.mu.Unlock()
	r.ServiceRegistrar.RegisterService(desc, impl)
}

// Has says whether the unary or streaming method exists.
func (m *Methods) Has(fullMethod string) bool {
	m.mu.RLock()
	defer m.mu.RUnlock()
	_, u := m.unary[fullMethod]
	_, s := m.stream[fullMethod]
	return u || s
}

func (m *Methods) unaryOf(fullMethod string) (unaryMethod, error) {
	m.mu.RLock()
	um, ok := m.unary[fullMethod]
	m.mu.RUnlock()
	if !ok {
		return um, fmt.Errorf("no method %s", fullMethod)
	}
	return um, nil
}

// Call calls a unary method with req through the chain and returns its
// answer (a List's encoded answer decoded into resp's type when resp is
// given: pass the method's response message). ctx carries what the chain
// authenticates by: the peer (TLS state) and incoming metadata
// (authorization, x-request-id).
func (m *Methods) Call(ctx context.Context, fullMethod string, req, resp proto.Message) (proto.Message, error) {
	um, err := m.unaryOf(fullMethod)
	if err != nil {
		return nil, err
	}
	out, err := um.handler(um.srv, ctx, handOver(req), m.chain.Unary)
	return answer(out, err, resp)
}

// CallList calls a List method with req through the chain, as Call does,
// and leaves a list answered with its encoding (Endpoint.ListEncoded)
// undecoded but for its head: encoded is true, list is a new list message
// with only what the list has besides its items (apiVersion, kind,
// metadata), and items is each item's encoding, in order, shared with
// the watch cache: they must never change. A method that answered with a
// message gives it as list (encoded false, items nil). As with Call, an
// in-process call's seats are given back when its handler returns.
func (m *Methods) CallList(ctx context.Context, fullMethod string, req proto.Message) (list proto.Message, items [][]byte, encoded bool, err error) {
	um, err := m.unaryOf(fullMethod)
	if err != nil {
		return nil, nil, false, err
	}
	out, err := um.handler(um.srv, ctx, handOver(req), m.chain.Unary)
	v, ok := out.(*encodedList)
	if err != nil || !ok {
		list, err = answer(out, err, nil)
		return list, nil, false, err
	}
	// The pieces are the head, then a record's tag and length and its
	// item for each item (Endpoint.encodeList).
	if len(v.pieces)%2 != 1 {
		list, err = v.Message()
		return list, nil, false, err
	}
	list = v.newList()
	if err := proto.Unmarshal(v.pieces[0], list); err != nil {
		return nil, nil, false, err
	}
	items = make([][]byte, 0, len(v.pieces)/2)
	for i := 2; i < len(v.pieces); i += 2 {
		items = append(items, v.pieces[i])
	}
	return list, items, true, nil
}

// CallDirect calls a unary method's handler without the chain, for a
// request the chain has already admitted as a whole (an HTTP PATCH is a
// get and an update of its own, authorized once as patch).
func (m *Methods) CallDirect(ctx context.Context, fullMethod string, req, resp proto.Message) (proto.Message, error) {
	um, err := m.unaryOf(fullMethod)
	if err != nil {
		return nil, err
	}
	out, err := um.handler(um.srv, ctx, handOver(req), nil)
	return answer(out, toStatus(err), resp)
}

// Admit runs a request that is not one method (an HTTP PATCH,
// DELETECOLLECTION, a discovery document) through the chain as
// fullMethod: its route (Routes) names its resource and verb, req its
// namespace and name. handler does the work, with CallDirect.
func (m *Methods) Admit(ctx context.Context, fullMethod string, req any, handler func(ctx context.Context) (proto.Message, error)) (proto.Message, error) {
	out, err := m.chain.Unary(ctx, req, &grpc.UnaryServerInfo{FullMethod: fullMethod}, func(ctx context.Context, _ any) (any, error) {
		return handler(ctx)
	})
	if err != nil {
		return nil, err
	}
	msg, _ := out.(proto.Message)
	return msg, nil
}

// handOver is the decoder a method's handler is called with in-process:
// it sets the handler's new request message's fields to req's, sharing
// their values (a nested message, list or map is req's own, not a copy),
// so that the handler owns req's parts as it owns what gRPC decodes for
// it. A caller passes a request it does not read again, or only its
// scalars. (A deep copy cost an HTTP create 2.6 µs of its ~230.)
func handOver(req proto.Message) func(any) error {
	return func(v any) error {
		m, ok := v.(proto.Message)
		if !ok {
			return status.Errorf(codes.Internal, "in-process call: the handler decodes into %T, not a message", v)
		}
		dst, src := m.ProtoReflect(), req.ProtoReflect()
		if dst.Descriptor().FullName() != src.Descriptor().FullName() {
			return status.Errorf(codes.Internal, "in-process call: the method takes %s, not %s", dst.Descriptor().FullName(), src.Descriptor().FullName())
		}
		src.Range(func(fd protoreflect.FieldDescriptor, val protoreflect.Value) bool {
			dst.Set(fd, val)
			return true
		})
		if u := src.GetUnknown(); len(u) > 0 {
			dst.SetUnknown(u)
		}
		return nil
	}
}

func answer(out any, err error, resp proto.Message) (proto.Message, error) {
	if err != nil {
		return nil, err
	}
	switch v := out.(type) {
	case *encodedList:
		if resp == nil {
			return v.Message()
		}
		if err := v.unmarshal(resp); err != nil {
			return nil, err
		}
		return resp, nil
	case proto.Message:
		return v, nil
	}
	return nil, fmt.Errorf("method answered %T", out)
}

// Stream calls a server-streaming method with req through the chain.
// established runs once the handler answers (its header or first
// message); send gets each message's encoding (a watch's messages are
// shared encodings: decode them as metav1.WatchResponse or the kind's
// watch response).
func (m *Methods) Stream(ctx context.Context, fullMethod string, req proto.Message, established func(), send func([]byte) error) error {
	return m.serveStream(fullMethod, &callStream{ctx: ctx, req: req, established: established, send: send})
}

// serveStream runs a streaming method on ss through the chain.
func (m *Methods) serveStream(fullMethod string, ss *callStream) error {
	m.mu.RLock()
	sm, ok := m.stream[fullMethod]
	m.mu.RUnlock()
	if !ok {
		return fmt.Errorf("no method %s", fullMethod)
	}
	info := &grpc.StreamServerInfo{FullMethod: fullMethod, IsClientStream: sm.desc.ClientStreams, IsServerStream: sm.desc.ServerStreams}
	return m.chain.Stream(sm.srv, ss, info, sm.desc.Handler)
}

// Bidi calls a bidirectional streaming method (exec, attach,
// port-forward) through the chain: first is its first request (the
// options the chain admits), recv returns each later one (io.EOF: the
// client's end), send gets each response's encoding.
func (m *Methods) Bidi(ctx context.Context, fullMethod string, first proto.Message, recv func() (proto.Message, error), send func([]byte) error) error {
	return m.serveStream(fullMethod, &callStream{ctx: ctx, req: first, recv: recv, send: send})
}

// callStream is an in-process server stream: its one request is req.
type callStream struct {
	ctx         context.Context
	req         proto.Message
	received    bool
	established func()
	answered    bool
	send        func([]byte) error
	recv        func() (proto.Message, error) // later requests (Bidi); nil: none
}

func (s *callStream) answer() {
	if !s.answered {
		s.answered = true
		if s.established != nil {
			s.established()
		}
	}
}

func (s *callStream) SetHeader(metadata.MD) error  { return nil }
func (s *callStream) SendHeader(metadata.MD) error { s.answer(); return nil }
func (s *callStream) SetTrailer(metadata.MD)       {}
func (s *callStream) Context() context.Context     { return s.ctx }

func (s *callStream) SendMsg(v any) error {
	s.answer()
	var b []byte
	switch v := v.(type) {
	case rawBatch:
		for _, p := range v {
			b = append(b, p...)
		}
	case *Relayed: // a node agent's message, passed on undecoded
		b = v.data.Materialize()
		v.Free()
	case proto.Message:
		var err error
		if b, err = proto.Marshal(v); err != nil {
			return err
		}
	default:
		return fmt.Errorf("stream sent %T", v)
	}
	return s.send(b)
}

func (s *callStream) RecvMsg(v any) error {
	next := s.req
	if s.received {
		if s.recv == nil {
			return io.EOF
		}
		var err error
		if next, err = s.recv(); err != nil {
			return err
		}
	}
	s.received = true
	switch t := v.(type) {
	case *decodeTarget:
		proto.Merge(t.msg, next)
	case *Relayed: // relayed to a node agent undecoded: its encoding
		b, err := proto.Marshal(next)
		if err != nil {
			return err
		}
		t.data = mem.BufferSlice{mem.SliceBuffer(b)}
	case proto.Message:
		proto.Merge(t, next)
	default:
		return fmt.Errorf("stream received into %T", v)
	}
	return nil
}
