// Package storage keeps objects of one kind in etcd, under
// /registry/<group>/<resource>/<namespace>/<name> (cluster-scoped kinds drop
// the namespace). Values are the protobuf encoding of the storage version
// behind a 4-byte magic "skf\x00"; resourceVersion is not stored but set from
// the key's etcd mod revision on every read. Writes are etcd transactions
// that compare the mod revision, so concurrent writers never lose an update:
// Create fails on an existing key, GuaranteedUpdate and Delete retry their
// function on the fresh state. It owns no validation, caching or watching of
// clients: the registry and the watch cache sit above it.
package storage
