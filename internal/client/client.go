// Package client is Skiff's typed Go client: one generic Resource type
// speaks the generic verbs (Create, Get, List, Update, UpdateStatus,
// Delete, Watch) of any kind's gRPC service, so there is no per-kind client
// code; kinds.go only names the services. Errors come back as
// *apierrors.StatusError (apierrors.IsNotFound, IsConflict, IsExpired...).
// It owns no caching: informers (a separate package) build on Watch and List.
package client

import (
	"context"
	"errors"
	"io"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"skiff.dev/internal/apierrors"
	"skiff.dev/internal/object"
	metav1 "skiff.dev/proto/meta/v1"
)

// Resource is a client for one kind served by one gRPC service.
type Resource[T object.Object, L proto.Message] struct {
	conn    grpc.ClientConnInterface
	service string // "skiff.core.v1.Pods"
}

// NewResource returns a client for the kind served by service.
func NewResource[T object.Object, L proto.Message](conn grpc.ClientConnInterface, service string) *Resource[T, L] {
	return &Resource[T, L]{conn: conn, service: service}
}

func invoke[Req, Resp proto.Message](ctx context.Context, conn grpc.ClientConnInterface, method string, in Req, opts []grpc.CallOption) (Resp, error) {
	out := object.New[Resp]()
	if err := conn.Invoke(ctx, method, in, out, opts...); err != nil {
		var zero Resp
		return zero, apierrors.FromError(err)
	}
	return out, nil
}

func (r *Resource[T, L]) method(name string) string { return "/" + r.service + "/" + name }

// Service is the full gRPC service name ("skiff.core.v1.Pods").
func (r *Resource[T, L]) Service() string { return r.service }

// Resource is the lower-case plural resource name ("pods"), for logs and metrics.
func (r *Resource[T, L]) Resource() string {
	return strings.ToLower(r.service[strings.LastIndexByte(r.service, '.')+1:])
}

// Create stores a new object and returns it as stored.
func (r *Resource[T, L]) Create(ctx context.Context, obj T, opts ...grpc.CallOption) (T, error) {
	return invoke[T, T](ctx, r.conn, r.method("Create"), obj, opts)
}

// CreateForMeta stores a new object as Create does and returns only the
// stored object's metadata (its name when it had a generateName, uid,
// resourceVersion): the rest of the answer is skipped, not decoded. It is
// for callers that create many objects and need no more, like a
// ReplicaSet creating its pods.
func (r *Resource[T, L]) CreateForMeta(ctx context.Context, obj T, opts ...grpc.CallOption) (*metav1.ObjectMeta, error) {
	opts = append(opts[:len(opts):len(opts)], grpc.ForceCodecV2(metaCodec{}))
	out, err := invoke[T, *metav1.PartialObjectMetadata](ctx, r.conn, r.method("Create"), obj, opts)
	if err != nil {
		return nil, err
	}
	return out.GetMetadata(), nil
}

// Get reads one object ("" namespace for cluster-scoped kinds).
func (r *Resource[T, L]) Get(ctx context.Context, namespace, name string, opts ...grpc.CallOption) (T, error) {
	return invoke[*metav1.GetRequest, T](ctx, r.conn, r.method("Get"), &metav1.GetRequest{Namespace: namespace, Name: name}, opts)
}

// List lists objects.
func (r *Resource[T, L]) List(ctx context.Context, o *metav1.ListOptions, opts ...grpc.CallOption) (L, error) {
	return invoke[*metav1.ListOptions, L](ctx, r.conn, r.method("List"), o, opts)
}

// Update replaces the desired state; metadata.resourceVersion, when set, must match.
func (r *Resource[T, L]) Update(ctx context.Context, obj T, opts ...grpc.CallOption) (T, error) {
	return invoke[T, T](ctx, r.conn, r.method("Update"), obj, opts)
}

// UpdateStatus replaces the status only.
func (r *Resource[T, L]) UpdateStatus(ctx context.Context, obj T, opts ...grpc.CallOption) (T, error) {
	return invoke[T, T](ctx, r.conn, r.method("UpdateStatus"), obj, opts)
}

// Delete deletes (or, with finalizers or a grace period, marks) an object.
func (r *Resource[T, L]) Delete(ctx context.Context, req *metav1.DeleteRequest, opts ...grpc.CallOption) (T, error) {
	return invoke[*metav1.DeleteRequest, T](ctx, r.conn, r.method("Delete"), req, opts)
}

// Event is one watch event with its decoded object.
type Event[T object.Object] struct {
	Type   string // ADDED, MODIFIED, DELETED, BOOKMARK
	Object T
}

// WatchStream yields watch events in order.
type WatchStream[T object.Object] struct {
	stream  grpc.ClientStream
	pending []Event[T]
	buf     []byte // the last message, reused
	cancel  context.CancelFunc
}

var watchDesc = &grpc.StreamDesc{ServerStreams: true}

// Watch starts a watch. The call returns once the server has accepted it.
func (r *Resource[T, L]) Watch(ctx context.Context, o *metav1.ListOptions, opts ...grpc.CallOption) (*WatchStream[T], error) {
	ctx, cancel := context.WithCancel(ctx)
	s, err := r.conn.NewStream(ctx, watchDesc, r.method("Watch"), append(opts, RawWatch())...)
	if err == nil {
		err = s.SendMsg(o)
	}
	if err == nil {
		err = s.CloseSend()
	}
	if err == nil {
		_, err = s.Header() // the server sends headers once the watch is registered
	}
	if err != nil {
		cancel()
		return nil, apierrors.FromError(err)
	}
	return &WatchStream[T]{stream: s, cancel: cancel}, nil
}

// Next returns the next event. At the end of the stream it returns io.EOF
// (a clean end, e.g. the watch's timeout) or the server's status as a
// *apierrors.StatusError (Expired: relist; ServiceUnavailable: watch again
// from the last resourceVersion seen).
func (w *WatchStream[T]) Next() (Event[T], error) {
	for len(w.pending) == 0 {
		if err := w.stream.RecvMsg(&w.buf); err != nil {
			if errors.Is(err, io.EOF) {
				return Event[T]{}, io.EOF
			}
			return Event[T]{}, apierrors.FromError(err)
		}
		err := WatchEvents(w.buf, func(typ string, raw []byte) error {
			obj := object.New[T]()
			if err := proto.Unmarshal(raw, obj); err != nil {
				return err
			}
			w.pending = append(w.pending, Event[T]{Type: typ, Object: obj})
			return nil
		})
		if err != nil {
			return Event[T]{}, err
		}
	}
	ev := w.pending[0]
	w.pending = w.pending[1:]
	return ev, nil
}

// Stop ends the watch.
func (w *WatchStream[T]) Stop() { w.cancel() }
