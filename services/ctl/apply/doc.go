// Package apply computes what `skiffctl apply` writes, as kubectl's
// client-side apply does: a three-way merge of
//
//	original  the configuration applied last time (the
//	          kubectl.kubernetes.io/last-applied-configuration annotation)
//	modified  the configuration being applied now
//	live      the object as the server has it
//
// Fields of modified are set on live; fields of original that modified
// no longer has are removed; fields in neither (status, server defaults,
// what other writers set) are kept. Maps merge key by key; lists are
// replaced, except the lists Kubernetes merges by a key (containers and
// volumes by name, ports by containerPort...), whose elements merge
// one by one.
//
// Everything here is a pure function over generic trees (package
// manifest's map[string]any); reading the live object and writing the
// result are the caller's.
package apply
