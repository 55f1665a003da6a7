// Package replicaset is the ReplicaSet controller: it keeps the number of
// active pods of each ReplicaSet at spec.replicas and reports them in its
// status, as Kubernetes' ReplicaSet controller does. One file per stage:
//
//	controller.go    New and Run: the informers (pods, ReplicaSets), the
//	                 shared runner, Options
//	handlers.go      informer events -> ReplicaSet keys: a pod maps to its
//	                 controller (by controllerRef, through the ReplicaSet
//	                 cache); an orphan to every ReplicaSet of its namespace
//	                 whose selector matches; creations and deletions seen
//	                 lower the expectations. It adds one index to the shared
//	                 pods informer: orphans by namespace
//	replicaset.go    Reconcile: claim, then create or delete, then status
//	claim.go         controllerutil.ClaimPods (pure) says which pods are
//	                 owned, to adopt, to release; adopt and release by Update at the pod's
//	                 resourceVersion
//	template.go      the pods created: generateName "<rs>-", the template's
//	                 labels, annotations and spec, a controller reference
//	burst.go         a sync's creations run as a burst after it: the sync
//	                 writes the status while they are in flight, and when
//	                 at most 128 of a burst's calls are left to send, the
//	                 next sync reads the cache and starts the next burst; a
//	                 failed call stops the ReplicaSet's later calls until a
//	                 sync has reported it; 128 creations in flight at most,
//	                 over all ReplicaSets
//	slowstart.go     creations in batches of 1, 2, 4, ... (at most
//	                 BurstReplicas per sync), stopping after a failed batch;
//	                 the calls of a batch run concurrently, 128 at most
//	rank.go          rankForDeletion (pure): which pods a scale-down deletes
//	status.go        calculateStatus (pure) and the status write
//
// The sync of a ReplicaSet, level-based, from the caches only:
//
//  1. its pods are those it controls (the owner index) plus the matching
//     orphans of its namespace (the orphan index), active ones only
//     (controllerutil.IsPodActive: a pod being deleted or finished does not
//     count);
//  2. orphans that match are adopted and owned pods that no longer match are
//     released (neither while the ReplicaSet is being deleted);
//  3. pods are created or deleted to reach spec.replicas, counting the
//     creations made but not seen yet by the pods informer (package
//     expectations; trusted for 5 minutes); deletions wait until every creation and
//     deletion made has been seen. A lagging informer therefore never
//     causes extra pods. Before a ReplicaSet's first creation after the
//     controller started (the previous leader's last creations may reach
//     the API after the informer listed) and after a creation that failed
//     without a definite answer (apierrors.MayHaveHappened: the pod may
//     exist), a consistent List of its pods must find none the sync did
//     not count; until then it waits for their events (unseenPods). A
//     ReplicaSet being deleted neither creates nor
//     deletes pods. Creations run in a burst after the sync (burst.go),
//     and a failure of theirs is reported by the next sync;
//  4. the status (replicas, fullyLabeledReplicas, readyReplicas,
//     availableReplicas, observedGeneration, the ReplicaFailure condition)
//     is written when it changed; when a ready pod becomes available after
//     minReadySeconds, the ReplicaSet is synced again at that moment.
//
// Events on the ReplicaSet: SuccessfulCreate, FailedCreate,
// SuccessfulDelete, FailedDelete.
//
// The package does not delete a ReplicaSet's pods when the ReplicaSet is
// deleted (the garbage collector follows the owner references), does not
// schedule pods, and knows nothing of Deployments.
package replicaset
