// Package manifest turns manifests into typed API objects and back.
//
// The pipeline, one file per stage:
//
//	read.go    a file, a directory or stdin -> documents (multi-document
//	           YAML, JSON streams, kind: List expanded), each a generic
//	           value tree (map[string]any, []any, string, int64, float64,
//	           bool, nil) with its source
//	decode.go  generic tree -> typed proto message, by walking the
//	           message's protoreflect descriptor with the JSON names the
//	           .proto files declare (Kubernetes' spelling). Quantities
//	           accept numbers (cpu: 1), IntOrString accepts a number or a
//	           string (maxSurge: 25% or 1), timestamps are RFC 3339. A
//	           field Kubernetes has but Skiff does not (internal/kfields)
//	           is refused, lenient or not ("is not supported by Skiff");
//	           any other unknown field is an error with its path and a
//	           did-you-mean suggestion, unless the decoder is lenient
//	           (--validate=false)
//	encode.go  typed proto message -> generic tree in Kubernetes' shape
//	           (zero values omitted as Kubernetes' omitempty does)
//	yaml.go    generic tree -> YAML as kubectl prints it (sorted keys,
//	           lists at the parent's indentation, block scalars)
//
// The package owns the wire shape of manifests only: it does not know
// which kinds exist (package kinds), defaults or validates objects
// (internal/defaults, internal/validation), or talks to the apiserver.
package manifest
