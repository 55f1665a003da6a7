// Package registry holds the rules every kind shares between the wire and
// etcd, written once with type parameters: name generation, uid and
// creationTimestamp, every timestamp kept at Kubernetes' precision
// (timestamps.go), namespace scoping, defaulting and validation through a
// small per-kind Strategy, generation bumped only when the spec changes,
// status written only through UpdateStatus, optimistic concurrency on
// resourceVersion, delete preconditions, finalizers and graceful deletion.
// Reads come from the watch cache where that is consistent; writes go to
// storage. It owns no wire format: package server adapts it to gRPC.
package registry
