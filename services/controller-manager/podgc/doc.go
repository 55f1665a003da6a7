// Package podgc is Skiff's pod garbage collector, after Kubernetes'
// pkg/controller/podgc: it deletes the pods nobody else will, every
// CheckPeriod (20 s, Kubernetes' gcCheckPeriod) on the controller's clock,
// and as soon as a Node is deleted.
//
// One pass (controller.go) reads the pods and nodes of the informers and
// decides (gc.go, a pure function) three sets, each force-deleted (grace
// period 0, uid precondition) in this order:
//
//   - terminated: pods in phase Succeeded or Failed beyond
//     TerminatedPodThreshold (--terminated-pod-gc-threshold, 12500; 0
//     disables), pods evicted by their agent first, then the oldest by
//     creationTimestamp;
//   - orphaned: pods bound (spec.nodeName) to a node that does not exist,
//     running or terminating: their agent went with the node. A node missing
//     from the cache is first quarantined for QuarantineTime (40 s,
//     quarantine.go), then looked up with a GET, so that a cache that lags
//     behind a node just created never costs that node its pods; a node the
//     GET still finds is quarantined again;
//   - unscheduled: terminating pods bound to no node (a finalizer holds
//     them; the apiserver deletes other unbound pods at once).
//
// A pod not yet Succeeded or Failed is first set to phase Failed through
// UpdateStatus, as Kubernetes does, so that whoever holds it by a
// finalizer sees it finished; an orphaned pod also gets the condition
// DisruptionTarget=True, reason DeletionByPodGC, "PodGC: node no longer
// exists" (the node agent leaves conditions it does not own alone).
//
// A pod that is finished and was deleted with grace period 0 already is
// left out (a finalizer holds it; a force delete can do no more), and does
// not count against the threshold.
//
// The pass is level-based: what it failed to delete it finds again on the
// next one. It does not evict pods from nodes that exist (package
// nodelifecycle does, and force-deletes the terminating pods of an
// unreachable or out-of-service node).
package podgc
