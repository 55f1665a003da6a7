// Package validation checks objects against the rules the Kubernetes API
// enforces, and reports every problem with its field path, so a client
// learns all that is wrong with a request at once:
//
//	spec.template.spec.containers[0].image: Required value
//
// Call the function for a kind on create, and the <Kind>Update function on
// update (it validates the new object and what may not change). Validation
// expects a defaulted object, as the apiserver runs package defaults first:
// fields that have a default (restartPolicy, imagePullPolicy, port protocol,
// deployment strategy, ...) are reported as required when empty. Names must
// already be generated from generateName.
//
// Every function is pure, never mutates its arguments and copes with nil
// sub-messages and arbitrary field values.
//
// The syntax of label keys and values (and the qualified names that share
// it), the selector operators and quantities is packages labels' and
// quantity's; this package reports what breaks it at the field, in
// Kubernetes' words, and adds the API's own limits (quantities in a
// resource list are non-negative, a request at most its limit).
//
// The package owns the rules only: it does not default, look other objects
// up (a volume's ConfigMap, a pod's node, a namespace's existence) or
// enforce resourceVersion preconditions. On update, the apiserver should
// carry server-owned metadata (uid, creationTimestamp, deletionTimestamp,
// generation) over from the stored object before calling an Update function,
// as Kubernetes' BeforeUpdate does; what is left different is then a real
// attempt to change it and is rejected.
package validation
