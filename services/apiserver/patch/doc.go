// Package patch is the machinery of Kubernetes' PATCH verb and of field
// management, for the HTTP API: JSON patch (RFC 6902), JSON merge patch
// (RFC 7386), strategic merge patch (Kubernetes' patch strategies and
// merge keys) and server-side apply (managedFields, field managers,
// conflicts and force). It works on objects in Kubernetes' JSON, as bytes,
// with Kubernetes' own libraries, as kube-apiserver's PATCH handler does
// (k8s.io/apiserver's endpoints/handlers/patch.go): evanphx/json-patch for
// the first two, apimachinery's strategicpatch for the third, and
// apimachinery's managedfields over structured-merge-diff for field
// management. The schemas come from Skiff's OpenAPI documents
// (internal/openapi), built once by New: the patch strategies and merge
// keys strategic merge patches read, and the list types, map types and
// defaults server-side apply reads.
//
// A PATCH request, as the HTTP layer is to run it:
//
//  1. Read the current object (its JSON, at the request's version).
//  2. For the three patch types, Patch gives the patched object; then
//     Update records the request's manager on it (what kube-apiserver
//     does on every create, update and patch: the manager is the
//     fieldManager query parameter, or ManagerFromUserAgent).
//     For application/apply-patch+yaml, Apply gives the object with the
//     applied configuration merged and managedFields updated (live is
//     nil when the object does not exist: apply creates it).
//  3. Decode the result with the codec (fieldValidation), then admission,
//     validation and the write with the current object's resourceVersion
//     as precondition; on a conflict, start again from 1.
//
// Errors are *apierrors.StatusError with Kubernetes' reasons, codes and
// messages: 400 BadRequest for a patch that does not parse, 422 Invalid
// for a JSON patch that does not apply (a failed test, a missing path),
// 409 Conflict for an apply that conflicts with other managers, and, as
// kube-apiserver, a 500 of no reason for the errors it does not classify.
//
// What the package does not do: decode, default or validate the result
// (the codec and the registry do), strict decoding of the patch itself
// (duplicate fields in a patch), CBOR apply patches, and the scale
// subresource's field management (kube-apiserver's ScaleHandler).
// Managed fields recorded at another version of a kind are dropped unless
// a Converter is given (WithConverter), as kube-apiserver drops those of
// versions it no longer serves.
package patch
