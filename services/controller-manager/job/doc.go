// Package job is the Job controller of skiff-controller-manager, as
// Kubernetes' pkg/controller/job: it runs a batch/v1 Job's pods to
// completion.
//
// A sync of one Job, in order (sync.go):
//
//  1. read the Job and its pods (the pods informer's owner index: pods
//     whose controller reference is the Job);
//  2. decide (decide.go, pure): the pods finished since the last sync, the
//     finish condition it reached if any (backoffLimit, activeDeadlineSeconds,
//     podFailurePolicy, backoffLimitPerIndex/maxFailedIndexes, successPolicy,
//     completions), and what to do with pods: delete the active ones of a
//     finished Job (keeping their tracking finalizer, so that they are
//     counted), delete excess or suspended ones (finalizer removed first: not
//     counted), or create the missing ones (indexes for an Indexed Job)
//     unless the failed-pod backoff (backoff.go) says wait;
//  3. apply it: deletions, creations (slow start: 1, 2, 4...);
//  4. track (tracking.go, pure, then effects): a finished pod that still has
//     the batch.kubernetes.io/job-tracking finalizer is first recorded in
//     status.uncountedTerminatedPods (a status write), then its finalizer is
//     removed, then it moves from the uncounted lists to the counters (a
//     second status write); the interim FailureTarget or SuccessCriteriaMet
//     condition is written before finalizers go, Failed or Complete once
//     nothing is uncounted or terminating. A controller that stops between
//     any two steps finds the uid in the uncounted lists (counted once its
//     finalizer is gone) or the pod still holding its finalizer (not counted
//     yet): never lost, never counted twice.
//
// Expectations (package expectations for creations and deletions,
// expectations.go for finalizer removals) keep a burst of writes from
// being made twice before the informer shows them; a sync reads them
// before the pods cache. The package does not adopt orphan pods (Kubernetes' ClaimPods) and
// does not delete finished Jobs (see package ttlafterfinished).
package job
