// Package informer is Skiff's client-side cache of API objects, the
// equivalent of client-go's tools/cache. The data flow, one file per stage:
//
//	source.go     what the informer reads: List and Watch of one kind (a
//	              typed client, or a test double that drops streams)
//	reflector.go  list, then watch from the list's resourceVersion; resume
//	              from the last version seen after a dropped stream (bookmarks
//	              keep it fresh); relist when the server says "Expired"
//	store.go      the indexed, thread-safe local copy (by namespace, owner
//	              uid, label, and any index a caller adds, such as node name)
//	informer.go   applies the reflector's changes to the store and calls the
//	              add/update/delete handlers, with a periodic resync
//	factory.go    shared informers: one per kind per process, whatever the
//	              number of controllers that use it
//
// Objects handed out by the store and to handlers are shared and must be
// treated as read-only: clone (proto.Clone) before changing one.
//
// The package owns no work queue and no reconcile loop (see internal/workqueue
// and internal/controller); handlers should do little more than enqueue keys.
package informer
