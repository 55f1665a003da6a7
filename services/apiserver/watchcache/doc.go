// Package watchcache keeps, per resource, the current state of every object
// and a window of recent events in memory, fed by ONE etcd watch, and fans
// the events out to every client watcher.
//
// The flow: the cache lists the resource from etcd at revision R, then
// watches from R+1. Each etcd event is decoded once into an immutable Entry
// (shared by the store, the event window and every watcher: never copy or
// modify it), applied to the store (a B-tree ordered by key), appended to
// the window (a ring). At most once per batch interval the events that
// arrived are sealed into a batch and every watcher is woken: each reads
// the window from its own cursor, filtering with its predicate, and never
// blocks the cache; a watcher too far behind is cut off with a
// ServiceUnavailable status and resumes from the last resourceVersion it
// saw (the events a watch starts with are not lag). Watchers without a
// predicate share each batch's encoded messages (batch.go). Lists at "any
// recent" revision are served from the store; a consistent list first
// asks etcd for its current revision and waits until the cache has caught
// up to it. The pages of a paged list
// read a copy-on-write snapshot of the store taken for the first page
// (snapshot.go), so they stay at its revision while the cache moves on.
//
// A watch from revision N replays the window's events after N. When N is
// older than the window, or etcd has compacted it, the watch fails with the
// Expired reason (gRPC OUT_OF_RANGE, Kubernetes' 410 Gone): the client
// relists. Progress notifications from etcd advance the cache's revision
// even when this resource does not change, and become BOOKMARK events.
//
// It owns no validation and no wire encoding beyond caching each entry's
// encoded bytes per served version and each recent batch's messages as
// the endpoint encoded them (Share).
package watchcache
