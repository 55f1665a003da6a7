package garbagecollector

import (
	"context"
	"strings"

	"google.golang.org/protobuf/proto"

	"skiff.dev/internal/apierrors"
	"skiff.dev/internal/client"
	"skiff.dev/internal/informer"
	"skiff.dev/internal/object"
	metav1 "skiff.dev/proto/meta/v1"
)

// kind is what the collector needs of one kind, whatever its Go type: the
// shared informer that feeds the graph, and the live reads and writes of
// attemptToDelete and attemptToOrphan. watchKind makes one for any kind.
type kind interface {
	// groupKind is "group/Kind" ("/Pod" for the core group), the key an
	// ownerReference's apiVersion and kind resolve to.
	groupKind() string
	namespaced() bool
	synced() <-chan struct{}
	// get reads the object from the API (not the cache) and returns its
	// metadata.
	get(ctx context.Context, namespace, name string) (*metav1.ObjectMeta, error)
	delete(ctx context.Context, req *metav1.DeleteRequest) error
	// update applies mutate to the object id names and writes it with its
	// resourceVersion, reading it again from the API after a conflict. An
	// object gone, or replaced by another uid, is apierrors.NotFound.
	// mutate returns false when there is nothing to write; update reports
	// whether it wrote.
	update(ctx context.Context, id Identity, mutate func(*metav1.ObjectMeta) bool) (bool, error)
	// object returns the object id names, for an Event about it: the cached
	// one, or a stand-in with its identity.
	object(id Identity) object.Object
}

// watchKind registers the informer of the kind r serves with the collector:
// every change feeds the graph. apiVersion and kind name the kind as its
// objects and ownerReferences do.
func watchKind[T object.Object, L informer.List[T]](c *Controller, f *informer.Factory, r *client.Resource[T, L], apiVersion, kindName string, namespaced bool) {
	k := &kindOf[T, L]{
		apiVersion: apiVersion, kind: kindName, isNamespaced: namespaced,
		r: r, inf: informer.For(f, r),
	}
	node := func(obj T) *Node { return NodeOf(apiVersion, kindName, obj.GetMetadata()) }
	k.inf.AddHandler(informer.Handler[T]{
		OnAdd: func(obj T) { c.observe(node(obj)) },
		OnUpdate: func(old, cur T) {
			if uid := old.GetMetadata().GetUid(); uid != cur.GetMetadata().GetUid() {
				// Deleted and created again under the same name while the
				// watch was away: the old uid is gone.
				c.forget(uid)
			}
			c.observe(node(cur))
		},
		OnDelete: func(obj T) { c.forget(obj.GetMetadata().GetUid()) },
	})
	c.addKind(k)
}

// groupKindOf is the key of apiVersion ("group/version" or "version") and kind.
func groupKindOf(apiVersion, kind string) string {
	group := ""
	if i := strings.LastIndexByte(apiVersion, '/'); i >= 0 {
		group = apiVersion[:i]
	}
	return group + "/" + kind
}

// kindOf is the kind adapter of T.
type kindOf[T object.Object, L informer.List[T]] struct {
	apiVersion, kind string
	isNamespaced     bool
	r                *client.Resource[T, L]
	inf              *informer.Informer[T]
}

func (k *kindOf[T, L]) groupKind() string       { return groupKindOf(k.apiVersion, k.kind) }
func (k *kindOf[T, L]) namespaced() bool        { return k.isNamespaced }
func (k *kindOf[T, L]) synced() <-chan struct{} { return k.inf.Synced() }

func (k *kindOf[T, L]) get(ctx context.Context, namespace, name string) (*metav1.ObjectMeta, error) {
	obj, err := k.r.Get(ctx, namespace, name)
	if err != nil {
		return nil, err
	}
	return obj.GetMetadata(), nil
}

func (k *kindOf[T, L]) delete(ctx context.Context, req *metav1.DeleteRequest) error {
	_, err := k.r.Delete(ctx, req)
	return err
}

func (k *kindOf[T, L]) update(ctx context.Context, id Identity, mutate func(*metav1.ObjectMeta) bool) (bool, error) {
	live, wrote := false, false
	err := client.RetryOnConflict(ctx, client.DefaultRetry, func() error {
		cur, err := k.current(ctx, id, live)
		live = true // after a conflict the cache is behind: ask the API
		if err != nil {
			return err
		}
		next := proto.Clone(cur).(T)
		if !mutate(object.Meta(next)) {
			return nil
		}
		if _, err = k.r.Update(ctx, next); err == nil {
			wrote = true
		}
		return err
	})
	return wrote, err
}

// current returns the object id names, from the cache unless live (or the
// cache does not hold that uid), else from the API.
func (k *kindOf[T, L]) current(ctx context.Context, id Identity, live bool) (T, error) {
	if !live {
		if obj, ok := k.inf.Store().GetByName(id.Namespace, id.Name); ok && obj.GetMetadata().GetUid() == id.UID {
			return obj, nil
		}
	}
	obj, err := k.r.Get(ctx, id.Namespace, id.Name)
	if err == nil && obj.GetMetadata().GetUid() != id.UID {
		var zero T
		return zero, apierrors.NewNotFound(k.r.Resource(), id.Name)
	}
	return obj, err
}

func (k *kindOf[T, L]) object(id Identity) object.Object {
	if obj, ok := k.inf.Store().GetByName(id.Namespace, id.Name); ok && obj.GetMetadata().GetUid() == id.UID {
		return obj
	}
	obj := object.New[T]()
	object.SetTypeMeta(obj, k.apiVersion, k.kind)
	m := object.Meta(obj)
	m.Namespace, m.Name, m.Uid = id.Namespace, id.Name, id.UID
	return obj
}
