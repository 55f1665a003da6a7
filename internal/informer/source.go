package informer

import (
	"context"

	"google.golang.org/protobuf/proto"

	"skiff.dev/internal/client"
	"skiff.dev/internal/object"
	metav1 "skiff.dev/proto/meta/v1"
)

// Source is what an informer reads: one kind's List and Watch.
type Source[T object.Object] interface {
	// List returns one page of objects and the list's metadata
	// (resourceVersion, continue token).
	List(ctx context.Context, o *metav1.ListOptions) ([]T, *metav1.ListMeta, error)
	// Watch starts a watch; the stream's Next returns io.EOF on a clean end.
	Watch(ctx context.Context, o *metav1.ListOptions) (Stream[T], error)
	// Resource names the kind for logs and metrics ("pods").
	Resource() string
}

// Stream is a watch in progress.
type Stream[T object.Object] interface {
	Next() (client.Event[T], error)
	Stop()
}

// List is the shape of every generated <Kind>List message.
type List[T object.Object] interface {
	proto.Message
	GetItems() []T
	GetMetadata() *metav1.ListMeta
}

// FromClient adapts a typed client to a Source.
func FromClient[T object.Object, L List[T]](r *client.Resource[T, L]) Source[T] {
	return clientSource[T, L]{r}
}

type clientSource[T object.Object, L List[T]] struct{ r *client.Resource[T, L] }

func (s clientSource[T, L]) List(ctx context.Context, o *metav1.ListOptions) ([]T, *metav1.ListMeta, error) {
	l, err := s.r.List(ctx, o)
	if err != nil {
		return nil, nil, err
	}
	return l.GetItems(), l.GetMetadata(), nil
}

func (s clientSource[T, L]) Watch(ctx context.Context, o *metav1.ListOptions) (Stream[T], error) {
	w, err := s.r.Watch(ctx, o)
	if err != nil {
		return nil, err
	}
	return w, nil
}

func (s clientSource[T, L]) Resource() string { return s.r.Resource() }
