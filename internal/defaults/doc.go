// Package defaults fills in the fields a client may leave empty, the way
// Kubernetes' SetDefaults_* functions do, so that validation and every
// controller see one fully specified object.
//
// The apiserver calls the function for a kind on every object it receives
// (create and update), before validation:
//
//	defaults.Pod(pod)
//	if errs := validation.Pod(pod); len(errs) > 0 { ... }
//
// Each function mutates its argument in place, creates nil sub-messages it
// needs to hold a default, tolerates a nil argument, and is idempotent:
// defaulting a defaulted object changes nothing. A value the client set is
// never overwritten, even when it is invalid (rejecting it is validation's
// job); the one exception is a namespace's kubernetes.io/metadata.name
// label, which always equals its name, as in Kubernetes.
//
// The package owns defaults only. It does not validate, generate names,
// set server-owned metadata (uid, creationTimestamp, resourceVersion,
// generation) or compute status beyond the initial phase.
package defaults
