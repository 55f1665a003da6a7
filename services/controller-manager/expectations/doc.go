// Package expectations remembers, per controller key, the pod creations and
// deletions a controller has made and its pods informer has not shown yet,
// so that the controller does not act twice on a stale cache (Kubernetes'
// controller.ControllerExpectations and UIDTrackingControllerExpectations).
//
// The contract, per sync of a key:
//
//  1. read Satisfied (or InFlight) BEFORE the cache;
//  2. before creating n pods, ExpectCreations(key, n); before deleting pods,
//     ExpectDeletions(key, their keys) (ExpectMoreDeletions to keep what is
//     expected already);
//  3. a call that fails (and so will never be observed) is observed at
//     once: CreationObserved, DeletionObserved;
//  4. the informer's handlers observe the rest: a pod added,
//     CreationObserved of its controller's key; a pod deleted or given a
//     deletionTimestamp, DeletionObserved;
//  5. Delete(key) when the object is gone.
//
// Expectations older than Timeout count for nothing (a lost event blocks a
// key at most that long). The package owns no informer and no client; the
// uids of other writes in flight (a Job's tracking finalizer removals) are
// the controller's own.
package expectations
