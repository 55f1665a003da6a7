// Package openapi builds the OpenAPI documents kube-apiserver serves, for
// Skiff's kinds, from their proto descriptors: the Swagger 2.0 document of
// /openapi/v2, the OpenAPI 3.0 document of each group version
// (/openapi/v3/api/v1, /openapi/v3/apis/apps/v1...) and the /openapi/v3
// index that points at them with a content hash. kubectl explain reads
// the schemas by their x-kubernetes-group-version-kind, kubectl apply's
// strategic merge patches read x-kubernetes-patch-strategy and
// x-kubernetes-patch-merge-key, and kubectl's validation looks for the
// fieldValidation parameter of each kind's PATCH operation.
//
// Build computes every document once, from a list of kinds
// (internal/kinds), as bytes ready to serve; it does no I/O. Schemas are
// named as Kubernetes names its Go types ("io.k8s.api.core.v1.Pod",
// "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta") and describe the JSON
// Skiff's codec reads and writes: proto JSON names, timestamps as
// date-time strings, quantities and IntOrString as Kubernetes' schemas of
// them, bytes as base64 strings, maps as additionalProperties.
// Descriptions, patch strategies and merge keys are Kubernetes' own, from
// internal/kfields, for the fields Kubernetes has.
//
// Server-side apply builds its schema (structured-merge-diff's) from the
// OpenAPI 3.0 documents, so they carry what it needs as Kubernetes'
// documents do: x-kubernetes-list-type and x-kubernetes-list-map-keys,
// x-kubernetes-map-type for atomic maps and structs, the defaults of
// fields (a list map's key missing from an element takes its default:
// a container port's protocol is TCP), and managedFields' fieldsV1 as a
// free-form object. These are markers in the comments of Kubernetes'
// source (+listType, +listMapKey, +mapType, +structType, +default), out
// of reach of internal/kfields' reflection; markers.gen.go holds them,
// read from k8s.io/api's source by TestKubernetesMarkers.
//
// What the package does not know: required fields, unions, and the
// markers of fields Kubernetes does not have. Serving the documents (content types, ETags, the protobuf
// form of /openapi/v2 that client-go asks for) is the HTTP server's work.
package openapi
