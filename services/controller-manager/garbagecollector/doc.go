// Package garbagecollector deletes objects whose owners are gone, as
// Kubernetes' garbage collector does, and carries out the Foreground and
// Orphan propagation policies of a Delete. The files follow the data:
//
//	kinds.go            one generic adapter per kind (watchKind): the shared
//	                    informer feeds the graph; a live Get, Delete and
//	                    Update serve the queues
//	graph.go            the ownerReference graph (pure): nodes by uid with
//	                    their owners, deletion state and finalizers, the
//	                    dependents of every owner uid, and the owner uids
//	                    known to be gone; each change returns the uids to
//	                    look at
//	decide.go           the decisions (pure): what to do with a dependent
//	                    given its owners' status, when a foreground owner
//	                    may go
//	garbagecollector.go the two queues and their effects
//	metrics.go          garbagecollector_* metrics
//
// The informer handlers only update the graph under a mutex and enqueue
// uids; all API calls happen in the queues' workers:
//
//   - attemptToDelete (uid): for an owner with a deletionTimestamp and the
//     "foregroundDeletion" finalizer, wait until no dependent with
//     blockOwnerDeletion=true remains, then remove the finalizer (the
//     apiserver then deletes the owner). For any other object with
//     ownerReferences, resolve each owner: present in the graph, known gone
//     (the informer saw it deleted), or unknown, in which case a live GET by
//     name decides (not found, or another uid under that name: gone). With
//     no live owner left the object is deleted (Preconditions uid and
//     resourceVersion; Foreground when an owner waits for it and it has
//     dependents of its own, so the wait covers the subtree; else
//     Background, or the policy finalizer it already carries). With a live
//     owner it only loses its references to the gone and waiting ones.
//   - attemptToOrphan (uid): for an owner with a deletionTimestamp and the
//     "orphan" finalizer, remove its ownerReference from every dependent,
//     then the finalizer.
//
// Restarts: Run waits for every informer's first list, then queues all the
// work the graph shows (Graph.Pending), so half-finished jobs resume.
//
// The collector owns no object and never creates one. It does not collect
// kinds it does not watch (an ownerReference to an unknown kind is left
// alone, with a Warning event), detect ownership cycles under foreground
// deletion, or delete namespaces' contents (a namespace controller's job).
package garbagecollector
