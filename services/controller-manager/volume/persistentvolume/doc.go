// Package persistentvolume is Kubernetes' PersistentVolume controller (the
// "binder"): it binds claims to volumes and follows both through their
// phases.
//
// A claim (PersistentVolumeClaim) is synced by syncClaim:
//   - Pending, no spec.volumeName: the smallest Available volume that fits
//     (FindMatchingVolume: class, access modes, size, selector, volume mode)
//     is bound; for a class whose volumeBindingMode is WaitForFirstConsumer
//     only a volume pre-bound to the claim is until the scheduler has placed
//     the claim (volume.kubernetes.io/selected-node), and then also a static
//     volume reachable from that node (a provisioner's volume comes
//     pre-bound). Without a match, a claim
//     of a class with a provisioner is handed to it: annotation
//     volume.kubernetes.io/storage-provisioner (and the beta one), event
//     ExternalProvisioning; else event FailedBinding.
//   - spec.volumeName set by the user (pre-bound): bound to that volume if
//     it is free and fits (else VolumeMismatch / FailedBinding).
//   - Bound: kept consistent; Lost when its volume is gone.
//
// Binding writes the volume first (spec.claimRef, status Bound) and then the
// claim (spec.volumeName, annotations pv.kubernetes.io/bind-completed and
// bound-by-controller, status Bound with the volume's capacity and access
// modes), as Kubernetes does, so a crash between leaves a volume that the
// next sync finishes binding.
//
// A volume is synced by syncVolume: Available without a claim; Bound with
// one; Released once its claim is gone, and then reclaimed by its
// persistentVolumeReclaimPolicy: Delete deletes the PersistentVolume object
// (its finalizers, such as the local-path one, keep it until the storage is
// cleaned), Retain leaves it Released, Recycle is not supported (Failed).
//
// It does not provision (package localpath does, for skiff.dev/local-path),
// choose nodes (the scheduler sets volume.kubernetes.io/selected-node) or
// mount anything (the node agent). Matching is a pure function with table
// tests (match.go, nodeaffinity.go); the syncs are in claim.go and volume.go.
package persistentvolume
