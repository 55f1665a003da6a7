package registry

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"skiff.dev/internal/apierrors"
	"skiff.dev/internal/field"
	"skiff.dev/internal/fields"
	"skiff.dev/internal/labels"
	"skiff.dev/internal/object"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/apiserver/storage"
	"skiff.dev/services/apiserver/watchcache"
)

// ListResult is a List's answer: the listed objects' entries (shared with
// the watch cache: never modify them) and the list metadata.
type ListResult[T object.Object] struct {
	Entries []*watchcache.Entry[T]
	Meta    *metav1.ListMeta
}

// Objects decodes the entries into objects the caller owns.
func (l *ListResult[T]) Objects() ([]T, error) {
	items := make([]T, len(l.Entries))
	for i, e := range l.Entries {
		var err error
		if items[i], err = e.Object(); err != nil {
			return nil, apierrors.NewInternal(err)
		}
	}
	return items, nil
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

// CountObjects is how many objects a List of namespace ("" for all, or a
// cluster-scoped kind) would read, from the watch cache, counted up to
// upTo: flow control's estimate of the List's work.
func (r *Registry[T]) CountObjects(namespace string, upTo int) (int, error) {
	prefix, err := r.prefix(namespace)
	if err != nil {
		return 0, err
	}
	return r.cache.CountPrefix(prefix, upTo), nil
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

// List answers from the watch cache: a whole list from its current state,
// the pages of a paged list (limit or continue) from a snapshot at the
// first page's revision, which stays consistent across pages. A page whose
// revision the cache no longer has (its snapshot was dropped, or the
// token is another apiserver's) is read from etcd at that revision.
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
	if err := validateListOptions(opts, false); err != nil {
		return nil, err
	}
	rv, err := storage.ParseRV(opts.GetResourceVersion())
	if err != nil {
		return nil, err
	}
	if opts.GetLimit() > 0 || opts.GetContinue() != "" || opts.GetResourceVersionMatch() == MatchExact {
		return r.listPaged(ctx, prefix, pred, opts, rv)
	}
	if err := r.waitFresh(ctx, opts.GetResourceVersion(), rv); err != nil {
		return nil, err
	}
	entries, rev := r.cache.List(prefix, pred)
	return &ListResult[T]{Entries: entries, Meta: listMeta(rev, "", prefix)}, nil
}

// waitFresh waits until the cache may answer a list at resourceVersion
// (rv parsed): "0" as soon as it has loaded, "" once it has what etcd has
// now (a consistent read), N once it has revision N.
func (r *Registry[T]) waitFresh(ctx context.Context, resourceVersion string, rv int64) error {
	var err error
	switch resourceVersion {
	case "0":
		err = r.cache.WaitReady(ctx)
	case "":
		if rv, err = r.store.CurrentRevision(ctx); err == nil {
			err = r.cache.WaitFresh(ctx, rv)
		}
	default:
		err = r.cache.WaitFresh(ctx, rv)
	}
	return err
}

// listMeta is the metadata of a list at revision rev whose next page
// starts at key next ("" for none).
func listMeta(rev int64, next, prefix string) *metav1.ListMeta {
	meta := &metav1.ListMeta{ResourceVersion: strconv.FormatInt(rev, 10)}
	if next != "" {
		meta.Continue = encodeContinue(continueToken{Rev: rev, Start: next, Prefix: prefix})
	}
	return meta
}

// pageMeta is the metadata of a page whose next page starts at key next
// ("" for none), left objects from there on: as Kubernetes, a page with a
// next one of a list without selectors (pred nil) says how many items
// remain; with selectors, which ones would match is not counted.
func pageMeta[T object.Object](rev int64, next, prefix string, pred watchcache.Predicate[T], left func() int64) *metav1.ListMeta {
	meta := listMeta(rev, next, prefix)
	if next != "" && pred == nil {
		n := left()
		meta.RemainingItemCount = &n
	}
	return meta
}

func (r *Registry[T]) listPaged(ctx context.Context, prefix string, pred watchcache.Predicate[T], opts *metav1.ListOptions, rv int64) (*ListResult[T], error) {
	start, rev := "", int64(0)
	if c := opts.GetContinue(); c != "" {
		t, err := decodeContinue(c, prefix)
		if err != nil {
			return nil, err
		}
		start, rev = t.Start, t.Rev
	} else if opts.GetResourceVersion() != "" && opts.GetResourceVersion() != "0" && opts.GetResourceVersionMatch() != MatchNotOlderThan {
		rev = rv // an exact revision was asked for
	}
	var snap watchcache.Snapshot[T]
	if rev == 0 {
		// A first page of the current state.
		if err := r.waitFresh(ctx, opts.GetResourceVersion(), rv); err != nil {
			return nil, err
		}
		snap = r.cache.Snapshot()
	} else if s, ok := r.cache.SnapshotAt(rev); ok {
		// As etcd would, refuse a revision it has compacted.
		if err := r.cache.CheckNotCompacted(ctx, rev); err != nil {
			return nil, r.pageError(err, opts, rev)
		}
		snap = s
	} else {
		return r.listFromEtcd(ctx, prefix, start, rev, pred, opts)
	}
	entries, next := snap.Page(prefix, start, opts.GetLimit(), pred)
	return &ListResult[T]{Entries: entries, Meta: pageMeta(snap.Rev, next, prefix, pred, func() int64 { return snap.Remaining(prefix, next) })}, nil
}

// listFromEtcd reads a page at revision rev from etcd, as it is stored:
// no object is decoded (predicates read what they need of the entries).
func (r *Registry[T]) listFromEtcd(ctx context.Context, prefix, start string, rev int64, pred watchcache.Predicate[T], opts *metav1.ListOptions) (*ListResult[T], error) {
	var entries []*watchcache.Entry[T]
	page, err := r.store.List(ctx, prefix, start, rev, opts.GetLimit(), func(key string, value []byte, modRev int64) (bool, error) {
		e, err := r.cache.NewEntry(key, value, modRev)
		if err != nil {
			return false, apierrors.NewInternal(err)
		}
		if pred != nil && !pred(e) {
			return false, nil
		}
		entries = append(entries, e)
		return true, nil
	})
	if err != nil {
		return nil, r.pageError(err, opts, rev)
	}
	return &ListResult[T]{Entries: entries, Meta: pageMeta(page.Revision, page.NextKey, prefix, pred, func() int64 { return page.Left })}, nil
}

// pageError is err of a paged list at revision rev; a continue whose
// revision was compacted says what to do.
func (r *Registry[T]) pageError(err error, opts *metav1.ListOptions, rev int64) error {
	if apierrors.IsExpired(err) && opts.GetContinue() != "" {
		return apierrors.NewExpired(fmt.Sprintf("The provided continue parameter is too old to display a consistent list result (revision %d was compacted). List again without continue.", rev))
	}
	return err
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
	if err := validateListOptions(opts, true); err != nil {
		return nil, err
	}
	rv, err := storage.ParseRV(opts.GetResourceVersion())
	if err != nil {
		return nil, err
	}
	if opts.SendInitialEvents != nil || opts.GetResourceVersion() == "" {
		// The state at least as new as the resourceVersion ("": a
		// consistent read, as Kubernetes starts a watch without one;
		// "0": any). A cache behind etcd would otherwise start from an
		// older state and send, as changes, what was there before.
		if err := r.waitFresh(ctx, opts.GetResourceVersion(), rv); err != nil {
			return nil, err
		}
	}
	if opts.SendInitialEvents != nil {
		// That state as ADDED events, or none of it.
		rv = 0
		if !opts.GetSendInitialEvents() {
			rv = r.cache.Revision()
		}
	}
	return r.cache.Watch(ctx, rv, prefix, pred, opts.GetAllowWatchBookmarks())
}

// Kubernetes' resourceVersionMatch values.
const (
	MatchNotOlderThan = "NotOlderThan"
	MatchExact        = "Exact"
)

// validateListOptions checks resourceVersionMatch and sendInitialEvents
// as Kubernetes' ValidateListOptions does, in its words.
func validateListOptions(opts *metav1.ListOptions, watch bool) error {
	var errs field.ErrorList
	match := opts.GetResourceVersionMatch()
	matchPath := field.NewPath("resourceVersionMatch")
	if opts.SendInitialEvents != nil {
		switch {
		case !watch:
			errs = append(errs, field.Forbidden(field.NewPath("sendInitialEvents"), "sendInitialEvents is forbidden for list"))
		default:
			if !opts.GetAllowWatchBookmarks() {
				errs = append(errs, field.Forbidden(field.NewPath("allowWatchBookmarks"), "allowWatchBookmarks must be set to true when sendInitialEvents is set"))
			}
			if match != MatchNotOlderThan {
				errs = append(errs, field.Forbidden(matchPath, "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan"))
			}
		}
	} else if match != "" {
		switch {
		case watch:
			errs = append(errs, field.Forbidden(matchPath, "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided"))
		case match != MatchNotOlderThan && match != MatchExact:
			errs = append(errs, field.NotSupported(matchPath, match, []string{MatchExact, MatchNotOlderThan}))
		case opts.GetResourceVersion() == "":
			errs = append(errs, field.Forbidden(matchPath, "resourceVersionMatch is forbidden unless resourceVersion is provided"))
		case opts.GetContinue() != "":
			errs = append(errs, field.Forbidden(matchPath, "resourceVersionMatch is forbidden when continue is provided"))
		case match == MatchExact && opts.GetResourceVersion() == "0":
			errs = append(errs, field.Forbidden(matchPath, `resourceVersionMatch "exact" is forbidden for resourceVersion "0"`))
		}
	}
	if len(errs) > 0 {
		return apierrors.NewInvalid("ListOptions", "", errs)
	}
	return nil
}
