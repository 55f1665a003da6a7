// Package statefulset is the StatefulSet controller: it gives each
// StatefulSet replicas pods of stable identity, in order, each with its own
// claims, as Kubernetes' StatefulSet controller does. One file per stage:
//
//	controller.go    New and Run: the informers (pods, StatefulSets,
//	                 claims, ControllerRevisions), the shared runner,
//	                 Options (Workers: --concurrent-statefulset-syncs)
//	handlers.go      informer events -> StatefulSet keys: a pod to its
//	                 controller; an orphan to the sets whose selector
//	                 matches it and whose name its name carries;
//	                 creations and deletions seen lower the expectations;
//	                 a claim deleted or given other owners to the sets
//	                 whose claim it could be
//	expectations.go  the pod creations and deletions in flight, by name
//	sync.go          Reconcile: claim pods and revisions, the current and
//	                 update revisions (services/controller-manager/history),
//	                 carry out decide's steps, write the status, truncate
//	                 the history to revisionHistoryLimit
//	plan.go          decide (pure): the steps of one sync (create, delete,
//	                 fix identity, fix claim owners); computeStatus (pure)
//	identity.go      names and identity (pure): pod <set>-<ordinal> with
//	                 labels statefulset.kubernetes.io/pod-name,
//	                 apps.kubernetes.io/pod-index, controller-revision-hash,
//	                 hostname = pod name, subdomain = serviceName; claims
//	                 <template>-<set>-<ordinal>
//	retention.go     persistentVolumeClaimRetentionPolicy (pure): the
//	                 owner references the claims should carry
//
// A sync, level-based, from the caches:
//
//  1. its pods are those it controls whose names are <set>-<ordinal> and
//     whose labels its selector matches; orphans of that kind are adopted,
//     pods that stopped matching are released;
//  2. revisions: its template, as the JSON {"spec":{"template":...,
//     "$patch":"replace"}}, is a ControllerRevision <set>-<hash>; a template
//     equal to an older revision renumbers that one (a rollback);
//     status.currentRevision stays until a rolling update completes;
//  3. unless creations or deletions it made are not seen yet
//     (expectations), decide's steps run in order, stopping at the first
//     failure: a pod's missing claims are created before it (and never
//     deleted by the controller: the garbage collector follows the owner
//     references the retention policy puts on them); OrderedReady creates
//     one pod at a time in ordinal order, each after the previous one is
//     Running, Ready and available for minReadySeconds, and scales down
//     from the highest ordinal one at a time; Parallel does each step for
//     every pod at once; RollingUpdate deletes pods of other revisions
//     from the highest ordinal down to the partition, maxUnavailable at a
//     time (default 1), to be created again at the update revision;
//     OnDelete only creates pods deleted by someone else at the update
//     revision; failed pods are deleted and created again;
//  4. the status (replicas, readyReplicas, availableReplicas,
//     currentReplicas, updatedReplicas, currentRevision, updateRevision,
//     collisionCount, observedGeneration) is written when it changed; a
//     ready pod becoming available after minReadySeconds requeues the set
//     at that moment.
//
// Events on the StatefulSet, as Kubernetes words them: SuccessfulCreate
// ("create Pod web-0 in StatefulSet web successful", "create Claim
// www-web-0 Pod web-0 in StatefulSet web success"), FailedCreate,
// SuccessfulDelete, FailedDelete, RecreatingFailedPod.
//
// The package does not delete a StatefulSet's pods or claims when it is
// deleted (the garbage collector does), does not bind or provision claims,
// and does not schedule pods.
package statefulset
