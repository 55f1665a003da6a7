// Package localpath is Skiff's dynamic provisioner of node-local volumes,
// skiff.dev/local-path (the controller half; the node agent makes and
// removes the directories).
//
// At start it makes the default StorageClass (Options.DefaultStorageClass,
// "local-path": provisioner skiff.dev/local-path, WaitForFirstConsumer,
// reclaimPolicy Delete, annotated as the default class) when it does not
// exist, and again if it is deleted; it never changes one that exists.
//
// For a claim that the binder handed to skiff.dev/local-path (annotation
// volume.kubernetes.io/storage-provisioner) and that the scheduler placed
// (annotation volume.kubernetes.io/selected-node), it creates the
// PersistentVolume pvc-<claim uid>, pre-bound to the claim (the binder
// then binds both): spec.local.path <root>/pvc-<uid>_<namespace>_<name>,
// where <root> is the Node's annotation skiff.dev/local-volume-root (set by
// its node agent from --local-volume-root), node affinity
// kubernetes.io/hostname In [the node's hostname label], the claim's
// request as capacity, its access modes and volume mode, the class's
// reclaim policy, mount options and name, annotation
// pv.kubernetes.io/provisioned-by and finalizer skiff.dev/local-path-volume,
// which the node agent removes once it has removed the directory. A node
// without the root annotation gets the claim a ProvisioningFailed event,
// and the claim is tried again when the Node changes.
//
// Building the volume is a pure function (Volume) with table tests.
package localpath
