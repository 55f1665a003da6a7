// Package namespace is Skiff's namespace controller, after Kubernetes'
// pkg/controller/namespace: deleting a Namespace deletes what is in it.
//
// The apiserver marks a deleted namespace (deletionTimestamp, status.phase
// Terminating, "kubernetes" in spec.finalizers) and its NamespaceLifecycle
// admission refuses new objects there. This controller then, for each such
// namespace (controller.go):
//
//  1. asks discovery for every namespaced resource the apiserver serves
//     (package dynamic: no list of kinds to keep up to date);
//  2. deletes every object of each in the namespace (ordinary deletes:
//     finalizers and pods' graceful deletion run as usual);
//  3. lists again: while anything is left (a pod whose node agent is still
//     stopping it, an object with finalizers), it comes back later;
//  4. when nothing is left, removes "kubernetes" from spec.finalizers with
//     an Update, and the apiserver deletes the namespace.
//
// A resource it cannot list or delete (its messages not linked into the
// program, or a refusal) keeps the finalizer and is reported (a Warning
// event and the error): the namespace is never finalized with objects of
// an unknown kind left in it.
package namespace
