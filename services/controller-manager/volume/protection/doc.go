// Package protection is Kubernetes' storage-object-in-use protection, the
// controller half of the apiserver's StorageObjectInUseProtection admission
// (which puts the finalizers on at create):
//
//   - pvc-protection keeps the finalizer kubernetes.io/pvc-protection on
//     every claim and, once a claim is being deleted, removes it when no pod
//     uses the claim any more: a pod uses it while it is scheduled, names
//     the claim in a persistentVolumeClaim volume and has not terminated
//     (Succeeded or Failed). A deleted claim stays until its pods are gone.
//   - pv-protection keeps kubernetes.io/pv-protection on every volume and,
//     once a volume is being deleted, removes it when the volume is not
//     Bound.
//
// The decisions (ClaimInUse, VolumeInUse) are pure functions; the
// controllers only read informers and remove or add finalizers.
package protection
