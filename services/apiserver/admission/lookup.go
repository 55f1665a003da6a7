package admission

import (
	"context"
	"fmt"
	"sync"
	"time"

	"skiff.dev/internal/apierrors"
	"skiff.dev/internal/client"
	"skiff.dev/internal/informer"
	"skiff.dev/internal/object"
	metav1 "skiff.dev/proto/meta/v1"
)

// emptyLookupTTL is how long a namespace that a live read found without
// objects (no LimitRange, no ResourceQuota) is believed empty while the
// informer shows nothing for it.
const emptyLookupTTL = 10 * time.Second

// maxEmptyLookups bounds the remembered empty namespaces.
const maxEmptyLookups = 10000

// perNamespace reads the objects of one kind in a namespace (limit ranges,
// quotas) from an informer, and from the API when the informer has none:
// an object created a moment ago (a LimitRange applied together with a
// pod) is then not missed. A namespace the API also says is empty is
// remembered for emptyLookupTTL, so namespaces without such objects cost
// one read per TTL, not one per request.
type perNamespace[T object.Object, L informer.List[T]] struct {
	plugin   string
	informer *informer.Informer[T]
	client   *client.Resource[T, L]
	now      func() time.Time

	mu    sync.RWMutex
	empty map[string]time.Time // namespace -> until when it is believed empty
}

func newPerNamespace[T object.Object, L informer.List[T]](d *Deps, plugin string, c *client.Resource[T, L]) *perNamespace[T, L] {
	return &perNamespace[T, L]{
		plugin:   plugin,
		informer: informer.For(d.Informers, c),
		client:   c,
		now:      d.Now,
		empty:    map[string]time.Time{},
	}
}

func (p *perNamespace[T, L]) get(ctx context.Context, ns string) ([]T, error) {
	if err := waitSynced(ctx, p.plugin, p.informer); err != nil {
		return nil, err
	}
	if items := p.informer.Store().ByNamespace(ns); len(items) > 0 {
		return items, nil
	}
	now := p.now()
	p.mu.RLock()
	until, ok := p.empty[ns]
	p.mu.RUnlock()
	if ok && now.Before(until) {
		return nil, nil
	}
	list, err := p.client.List(ctx, &metav1.ListOptions{Namespace: ns})
	if err != nil {
		return nil, apierrors.NewInternal(fmt.Errorf("%s: listing %s of namespace %q: %w", p.plugin, p.client.Resource(), ns, err))
	}
	items := list.GetItems()
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(items) > 0 {
		delete(p.empty, ns)
		return items, nil
	}
	if len(p.empty) >= maxEmptyLookups {
		clear(p.empty)
	}
	p.empty[ns] = now.Add(emptyLookupTTL)
	return nil, nil
}
