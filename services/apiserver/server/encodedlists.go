package server

import (
	"context"
	"slices"

	"google.golang.org/grpc"

	metav1 "skiff.dev/proto/meta/v1"
)

// EncodedLists registers services on r as they are, except that the List
// method of a service whose implementation has ListEncoded (an Endpoint,
// or a kind's server that embeds one) is served by ListEncoded: its
// encoded list goes to the wire as it is, where the generated handler
// needs the list as a message. (A server that embeds an Endpoint and
// defines List of its own must not be registered through it.) Every unary
// method answers a request body that does not decode with a BadRequest
// (decode.go: decodeErrors).
func EncodedLists(r grpc.ServiceRegistrar) grpc.ServiceRegistrar { return encodedLists{r} }

type encodedLister interface {
	ListEncoded(context.Context, *metav1.ListOptions) (*encodedList, error)
}

type encodedLists struct{ grpc.ServiceRegistrar }

func (r encodedLists) RegisterService(desc *grpc.ServiceDesc, impl any) {
	l, ok := impl.(encodedLister)
	d := *desc
	d.Methods = slices.Clone(desc.Methods)
	for i := range d.Methods {
		md := &d.Methods[i]
		fullMethod := "/" + desc.ServiceName + "/" + md.MethodName
		if ok && md.MethodName == "List" {
			md.Handler = listHandler(l, fullMethod)
		}
		md.Handler = decodeErrors(md.Handler, fullMethod)
	}
	r.ServiceRegistrar.RegisterService(&d, impl)
}

// listHandler is the generated List handler's work, with ListEncoded.
func listHandler(l encodedLister, fullMethod string) grpc.MethodHandler {
	list := func(ctx context.Context, req any) (any, error) {
		enc, err := l.ListEncoded(ctx, req.(*metav1.ListOptions))
		if err != nil {
			return nil, err // not a nil *encodedList in an interface
		}
		enc.hold, _ = ctx.Value(seatHoldKey{}).(*seatHold)
		return enc, nil
	}
	return func(srv any, ctx context.Context, dec func(any) error, interceptor grpc.UnaryServerInterceptor) (any, error) {
		in := new(metav1.ListOptions)
		if err := dec(in); err != nil {
			return nil, err
		}
		if interceptor == nil {
			return list(ctx, in)
		}
		return interceptor(ctx, in, &grpc.UnaryServerInfo{Server: srv, FullMethod: fullMethod}, list)
	}
}
