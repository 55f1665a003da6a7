// Package controller is the one runner every Skiff controller shares, in
// the style of controller-runtime: a controller is only its Reconciler, a
// function from a key ("namespace/name", or "name" for cluster-scoped
// objects) to a Result. The runner owns the rest, written once:
//
//	controller.go  the workers: Get a key, Reconcile it, then Forget, retry
//	               with backoff, or requeue after a delay, and Done
//	result.go      Reconciler, Result and Terminal errors
//	key.go         KeyOf and SplitKey
//	metrics.go     the controller_* metrics, labelled by controller name
//
// A controller is wired like this:
//
//	c := controller.New(controller.ReconcileFunc(r.reconcile), controller.Options{
//		Name: "replicaset", Workers: 4, Logger: log, Metrics: wqMetrics, Registerer: reg,
//	})
//	// in an informer's add/update/delete handlers:
//	c.Enqueue(controller.KeyOf(obj.GetMetadata().GetNamespace(), obj.GetMetadata().GetName()))
//	// once the informers have synced:
//	err := c.Run(ctx) // until ctx is cancelled
//
// Reconcile must be level-based and idempotent: it reads the current state
// for the key (from a cache) and makes the world match it; it is not told
// what changed. The runner guarantees that one key is never reconciled by
// two workers at once; different keys are reconciled in parallel.
//
// The package owns the worker loop, the per-outcome retry policy and its
// metrics. It does not watch anything (informers feed it keys through
// Enqueue), cache objects, elect a leader, or implement a queue (see
// internal/workqueue).
package controller
