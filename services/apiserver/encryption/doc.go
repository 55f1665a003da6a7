// Package encryption encrypts objects at rest, as Kubernetes'
// --encryption-provider-config does: an EncryptionConfiguration
// (apiserver.config.k8s.io/v1) names, for groups of resources, an ordered
// list of providers (aesgcm, secretbox, identity), each with named keys.
// The first provider's first key encrypts every write; a read picks the
// provider and key by the value's prefix, so values written with an older
// key stay readable as long as that key is listed. The stored forms are
// Kubernetes' own:
//
//	aesgcm:    "k8s:enc:aesgcm:v1:<name>:" + 12-byte nonce + AES-GCM sealed
//	           plain value, the etcd key as additional authenticated data
//	secretbox: "k8s:enc:secretbox:v1:<name>:" + 24-byte nonce + NaCl
//	           secretbox sealed plain value
//	identity:  the plain value
//
// The transformation sits between the storage package's encoding and
// etcd, below the watch cache: the cache and every reader above it see
// plain objects.
package encryption
