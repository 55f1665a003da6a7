package kinds

import (
	"context"

	"google.golang.org/protobuf/proto"

	"skiff.dev/internal/apierrors"
	"skiff.dev/internal/client"
	"skiff.dev/internal/object"
	metav1 "skiff.dev/proto/meta/v1"
)

// Client is the generic verbs of one kind, on object.Object.
type Client interface {
	Create(ctx context.Context, obj object.Object) (object.Object, error)
	Get(ctx context.Context, namespace, name string) (object.Object, error)
	// List returns the items and the list's resourceVersion. With a limit
	// it reads every page (consistent at the first page's revision).
	List(ctx context.Context, o *metav1.ListOptions) ([]object.Object, string, error)
	Update(ctx context.Context, obj object.Object) (object.Object, error)
	Delete(ctx context.Context, req *metav1.DeleteRequest) (object.Object, error)
	Watch(ctx context.Context, o *metav1.ListOptions) (Watch, error)
}

// Watch is a running watch.
type Watch interface {
	// Next returns the next event: ADDED, MODIFIED, DELETED or BOOKMARK.
	Next() (string, object.Object, error)
	Stop()
}

// typed adapts client.Resource to Client.
type typed[T object.Object, L proto.Message] struct {
	r *client.Resource[T, L]
}

func (c typed[T, L]) Create(ctx context.Context, obj object.Object) (object.Object, error) {
	return c.r.Create(ctx, obj.(T))
}

func (c typed[T, L]) Get(ctx context.Context, ns, name string) (object.Object, error) {
	return c.r.Get(ctx, ns, name)
}

func (c typed[T, L]) Update(ctx context.Context, obj object.Object) (object.Object, error) {
	return c.r.Update(ctx, obj.(T))
}

func (c typed[T, L]) Delete(ctx context.Context, req *metav1.DeleteRequest) (object.Object, error) {
	return c.r.Delete(ctx, req)
}

func (c typed[T, L]) List(ctx context.Context, o *metav1.ListOptions) ([]object.Object, string, error) {
	var out []object.Object
	rv := ""
	opts := proto.Clone(o).(*metav1.ListOptions)
	restarted := false
	for {
		l, err := c.r.List(ctx, opts)
		if apierrors.IsExpired(err) && opts.GetContinue() != "" && !restarted {
			// The pages' revision was compacted: list again from the start.
			opts.Continue, out, restarted = "", nil, true
			continue
		}
		if err != nil {
			return nil, "", err
		}
		m := l.ProtoReflect()
		fds := m.Descriptor().Fields()
		items := m.Get(fds.ByName("items")).List()
		for i := 0; i < items.Len(); i++ {
			out = append(out, items.Get(i).Message().Interface().(object.Object))
		}
		meta := m.Get(fds.ByName("metadata")).Message().Interface().(*metav1.ListMeta)
		if opts.GetContinue() == "" {
			rv = meta.GetResourceVersion() // the pages are consistent at the first one's revision
		}
		if meta.GetContinue() == "" || opts.GetLimit() == 0 {
			return out, rv, nil
		}
		opts.Continue = meta.GetContinue()
	}
}

func (c typed[T, L]) Watch(ctx context.Context, o *metav1.ListOptions) (Watch, error) {
	w, err := c.r.Watch(ctx, o)
	if err != nil {
		return nil, err
	}
	return typedWatch[T]{w}, nil
}

type typedWatch[T object.Object] struct{ w *client.WatchStream[T] }

func (w typedWatch[T]) Next() (string, object.Object, error) {
	ev, err := w.w.Next()
	if err != nil {
		return "", nil, err
	}
	return ev.Type, ev.Object, nil
}

func (w typedWatch[T]) Stop() { w.w.Stop() }
