// Package workqueue is the rate-limited work queue every Skiff controller
// pulls keys from, the equivalent of client-go's util/workqueue, generic over
// the key type. The files follow a key's life:
//
//	queue.go         Add, Get, Done: a FIFO that holds a key at most once and
//	                 never hands a key to two workers at a time
//	delaying.go      AddAfter: one goroutine, a heap of waiting keys and the
//	                 injected Clock
//	rate_limiters.go AddRateLimited, Forget, NumRequeues: per-key exponential
//	                 backoff and an overall token bucket
//	metrics.go       the workqueue_* metrics, labelled by queue name
//	clock.go         Clock and Timer; fakeclock.go steps time in tests
//
// A worker runs this loop, in order:
//
//	for {
//		key, shutdown := q.Get()     // blocks until a key is ready
//		if shutdown {
//			return
//		}
//		err := work(key)
//		if err != nil {
//			q.AddRateLimited(key)    // retry after backoff
//		} else {
//			q.Forget(key)            // reset the key's backoff
//		}
//		q.Done(key)                  // always, exactly once per Get
//	}
//
// Glossary. Dirty: a key that has been added and not yet handed out by Get.
// Processing: a key between Get and Done. A key added while processing stays
// dirty and is queued again at Done, so the worker that gets it next sees the
// latest state (level-triggered). FIFO order holds otherwise.
//
// The package owns queuing, delays, backoff and their metrics. It does not
// know what a key means, run workers or reconcile anything: see
// internal/controller, which owns the worker loop.
package workqueue
