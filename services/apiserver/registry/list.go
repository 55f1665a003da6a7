package registry

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"

	"skiff.dev/internal/apierrors"
	"skiff.dev/internal/fields"
	"skiff.dev/internal/labels"
	"skiff.dev/internal/object"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/apiserver/storage"
	"skiff.dev/services/apiserver/watchcache"
)

// ListResult is a List's answer: storage objects and the list metadata.
type ListResult[T object.Object] struct {
	Items []T
	Meta  *metav1.ListMeta
}

// Predicate builds the selector predicate of a List or Watch.
func (r *Registry[T]) Predicate(opts *metav1.ListOptions) (watchcache.Predicate[T], error) {
	lsel, err := labels.Parse(opts.GetLabelSelector())
	if err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("labelSelector %q: %v", opts.GetLabelSelector(), err))
	}
	fsel, err := fields.Parse(opts.GetFieldSelector())
	if err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("fieldSelector %q: %v", opts.GetFieldSelector(), err))
	}
	if err := fsel.Validate(r.resource(), r.strategy.Kind.FieldSelectors); err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	if lsel.Empty() && fsel.Empty() {
		return nil, nil
	}
	return func(e *watchcache.Entry[T]) bool {
		return lsel.Matches(e.Labels()) && (fsel.Empty() || fsel.Matches(fields.Set(e.Fields())))
	}, nil
}

// prefix is the key prefix of a List or Watch's namespace.
func (r *Registry[T]) prefix(namespace string) (string, error) {
	if err := r.checkClusterScope(namespace); err != nil {
		return "", err
	}
	return r.store.NamespacePrefix(namespace), nil
}

// continueToken is the opaque continue of a paged list.
type continueToken struct {
	Rev    int64  `json:"rv"`
	Start  string `json:"start"`
	Prefix string `json:"prefix"`
}

func encodeContinue(t continueToken) string {
	b, _ := json.Marshal(t)
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeContinue(s, prefix string) (continueToken, error) {
	var t continueToken
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err == nil {
		err = json.Unmarshal(b, &t)
	}
	if err != nil || t.Rev <= 0 || !strings.HasPrefix(t.Start, t.Prefix) {
		return t, apierrors.NewBadRequest(fmt.Sprintf("continue %q is not a token this server issued", s))
	}
	if t.Prefix != prefix {
		return t, apierrors.NewBadRequest("continue token was issued for another namespace or resource")
	}
	return t, nil
}

// List answers from the watch cache, or from etcd for paged lists (limit or
// continue), which stay consistent at the first page's revision.
func (r *Registry[T]) List(ctx context.Context, opts *metav1.ListOptions) (*ListResult[T], error) {
	prefix, err := r.prefix(opts.GetNamespace())
	if err != nil {
		return nil, err
	}
	pred, err := r.Predicate(opts)
	if err != nil {
		return nil, err
	}
	if opts.GetLimit() < 0 {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("limit %d: must be 0 (no limit) or more", opts.GetLimit()))
	}
	rv, err := storage.ParseRV(opts.GetResourceVersion())
	if err != nil {
		return nil, err
	}
	if opts.GetLimit() > 0 || opts.GetContinue() != "" {
		return r.listPaged(ctx, prefix, pred, opts, rv)
	}
	switch opts.GetResourceVersion() {
	case "0":
		err = r.cache.WaitReady(ctx)
	case "":
		// Consistent: what etcd has now, served once the cache has it.
		if rv, err = r.store.CurrentRevision(ctx); err == nil {
			err = r.cache.WaitFresh(ctx, rv)
		}
	default:
		err = r.cache.WaitFresh(ctx, rv)
	}
	if err != nil {
		return nil, err
	}
	entries, rev := r.cache.List(prefix, pred)
	items := make([]T, len(entries))
	for i, e := range entries {
		if items[i], err = e.Object(); err != nil {
			return nil, apierrors.NewInternal(err)
		}
	}
	return &ListResult[T]{Items: items, Meta: &metav1.ListMeta{ResourceVersion: fmt.Sprint(rev)}}, nil
}

func (r *Registry[T]) listPaged(ctx context.Context, prefix string, pred watchcache.Predicate[T], opts *metav1.ListOptions, rv int64) (*ListResult[T], error) {
	start, rev := "", int64(0)
	if c := opts.GetContinue(); c != "" {
		t, err := decodeContinue(c, prefix)
		if err != nil {
			return nil, err
		}
		start, rev = t.Start, t.Rev
	} else if opts.GetResourceVersion() != "" && opts.GetResourceVersion() != "0" {
		rev = rv // an exact revision was asked for
	}
	var keep func(T) bool
	if pred != nil {
		keep = func(obj T) bool {
			return pred(watchcache.ObjectEntry(obj, r.cache.Codec()))
		}
	}
	page, err := r.store.List(ctx, prefix, start, rev, opts.GetLimit(), keep)
	if apierrors.IsExpired(err) && opts.GetContinue() != "" {
		return nil, apierrors.NewExpired(fmt.Sprintf("The provided continue parameter is too old to display a consistent list result (revision %d was compacted). List again without continue.", rev))
	}
	if err != nil {
		return nil, err
	}
	meta := &metav1.ListMeta{ResourceVersion: fmt.Sprint(page.Revision)}
	if page.NextKey != "" {
		meta.Continue = encodeContinue(continueToken{Rev: page.Revision, Start: page.NextKey, Prefix: prefix})
	}
	return &ListResult[T]{Items: page.Items, Meta: meta}, nil
}

// Watch starts a watch on the cache. resourceVersion "" or "0" starts with
// the current state as ADDED events.
func (r *Registry[T]) Watch(ctx context.Context, opts *metav1.ListOptions) (*watchcache.Watcher[T], error) {
	prefix, err := r.prefix(opts.GetNamespace())
	if err != nil {
		return nil, err
	}
	pred, err := r.Predicate(opts)
	if err != nil {
		return nil, err
	}
	rv, err := storage.ParseRV(opts.GetResourceVersion())
	if err != nil {
		return nil, err
	}
	return r.cache.Watch(ctx, rv, prefix, pred, opts.GetAllowWatchBookmarks())
}
