package informer

import (
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"time"

	"go.uber.org/zap"

	"skiff.dev/internal/apierrors"
	"skiff.dev/internal/object"
	metav1 "skiff.dev/proto/meta/v1"
)

// reflector keeps an informer in step with the server:
//
//	list (paged, consistent at one revision) -> replace the store
//	watch from that revision, with bookmarks -> apply each event
//	stream ended cleanly or dropped -> watch again from the last revision seen
//	"Expired" (the revision was compacted) -> list again
//
// Failures back off exponentially (with jitter) up to maxBackoff; a watch
// that delivered events resets the backoff.
type reflector[T object.Object] struct {
	inf *Informer[T]
	log *zap.Logger
	m   *Metrics
	res string

	backoff time.Duration
}

const (
	minBackoff = 100 * time.Millisecond
	maxBackoff = 30 * time.Second
	// Watches end on their own after a random time in [minWatchTimeout,
	// 2*minWatchTimeout), so that reconnections spread out.
	minWatchTimeout = 5 * time.Minute
)

func newReflector[T object.Object](inf *Informer[T]) *reflector[T] {
	return &reflector[T]{inf: inf, log: inf.log, m: inf.opts.Metrics, res: inf.src.Resource()}
}

func (r *reflector[T]) run(ctx context.Context) {
	needList := true
	for ctx.Err() == nil {
		if needList {
			if err := r.list(ctx); err != nil {
				if ctx.Err() != nil {
					return
				}
				r.log.Warn("list failed; retrying", zap.Error(err), zap.Duration("backoff", r.nextBackoff()))
				r.m.listFailed(r.res)
				r.wait(ctx)
				continue
			}
			needList = false
		}
		events, err := r.watch(ctx)
		if ctx.Err() != nil {
			return
		}
		if events > 0 {
			r.backoff = 0
		}
		switch {
		case err == nil || errors.Is(err, io.EOF):
			// A clean end (the watch's timeout): watch again at once.
			r.m.watchEnded(r.res, "timeout")
		case apierrors.IsExpired(err):
			r.log.Info("watch revision compacted; relisting", zap.String("resourceVersion", r.inf.ResourceVersion()))
			r.m.watchEnded(r.res, "expired")
			needList = true
		default:
			r.log.Info("watch ended; resuming from the last revision seen", zap.Error(err),
				zap.String("resourceVersion", r.inf.ResourceVersion()), zap.Duration("backoff", r.nextBackoff()))
			r.m.watchEnded(r.res, "error")
			r.wait(ctx)
		}
	}
}

// nextBackoff doubles the backoff (within bounds) and returns it.
func (r *reflector[T]) nextBackoff() time.Duration {
	r.backoff = min(max(2*r.backoff, minBackoff), maxBackoff)
	return r.backoff
}

// wait sleeps for the current backoff, plus up to half of it at random, or
// until ctx ends.
func (r *reflector[T]) wait(ctx context.Context) {
	d := r.backoff + time.Duration(rand.Int64N(int64(r.backoff)/2+1))
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// list reads every object, page by page at the first page's revision, and
// replaces the store's content with them.
func (r *reflector[T]) list(ctx context.Context) error {
	base := r.inf.opts.ListOptions
	opts := &metav1.ListOptions{
		Namespace:     base.GetNamespace(),
		LabelSelector: base.GetLabelSelector(),
		FieldSelector: base.GetFieldSelector(),
		Limit:         r.inf.opts.PageSize,
	}
	var items []T
	var rv string
	for {
		page, meta, err := r.inf.src.List(ctx, opts)
		if err != nil {
			return err
		}
		items = append(items, page...)
		if rv == "" {
			rv = meta.GetResourceVersion()
		}
		if meta.GetContinue() == "" {
			break
		}
		opts.Continue = meta.GetContinue()
	}
	r.m.listed(r.res, len(items))
	r.inf.replace(items, rv)
	r.log.Debug("listed", zap.Int("items", len(items)), zap.String("resourceVersion", rv))
	return nil
}

// watch watches from the cache's revision until the stream ends, applying
// each event, and returns how many events it applied and why it ended.
func (r *reflector[T]) watch(ctx context.Context) (int, error) {
	base := r.inf.opts.ListOptions
	timeout := minWatchTimeout + time.Duration(rand.Int64N(int64(minWatchTimeout)))
	w, err := r.inf.src.Watch(ctx, &metav1.ListOptions{
		Namespace:           base.GetNamespace(),
		LabelSelector:       base.GetLabelSelector(),
		FieldSelector:       base.GetFieldSelector(),
		ResourceVersion:     r.inf.ResourceVersion(),
		AllowWatchBookmarks: true,
		TimeoutSeconds:      int64(timeout / time.Second),
	})
	if err != nil {
		return 0, err
	}
	defer w.Stop()
	n := 0
	for {
		ev, err := w.Next()
		if err != nil {
			return n, err
		}
		n++
		switch ev.Type {
		case "BOOKMARK":
			r.inf.bookmark(ev.Object.GetMetadata().GetResourceVersion())
		case "ADDED", "MODIFIED", "DELETED":
			r.inf.apply(ev.Type, ev.Object)
			r.m.event(r.res, ev.Type)
		default:
			r.log.Warn("unknown watch event type; ignored", zap.String("type", ev.Type))
		}
	}
}
