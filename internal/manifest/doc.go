// Package manifest turns manifests into typed API objects and back, in
// Kubernetes' shape: skiffctl's YAML and JSON, and the JSON bodies of the
// apiserver's HTTP API.
//
// The generic pipeline (skiffctl), one file per stage:
//
//	read.go    a file, a directory or stdin -> documents (multi-document
//	           YAML, JSON streams, kind: List expanded), each a generic
//	           value tree (map[string]any, []any, string, int64, float64,
//	           bool, nil) with its source
//	decode.go  generic tree -> typed proto message, by walking the
//	           message's protoreflect descriptor with the JSON names the
//	           .proto files declare (Kubernetes' spelling). Quantities
//	           accept numbers (cpu: 1), IntOrString accepts a number or a
//	           string (maxSurge: 25% or 1), timestamps are RFC 3339,
//	           managedFields' fieldsV1 is a JSON object. A field
//	           Kubernetes has but Skiff does not (internal/kfields) is
//	           refused, lenient or not ("is not supported by Skiff"),
//	           unless its value is empty (null, {}, [], ""); any other
//	           unknown field is an error with its path and a did-you-mean
//	           suggestion, unless the decoder is lenient (--validate=false)
//	convert.go one document value -> one proto value, the rules both
//	           decoders share
//	encode.go  typed proto message -> generic tree in Kubernetes' shape
//	           (zero values omitted as Kubernetes' omitempty does)
//	yaml.go    generic tree -> YAML as kubectl prints it (sorted keys,
//	           lists at the parent's indentation, block scalars)
//
// The direct JSON codec (the HTTP API), with no tree between the bytes
// and the message:
//
//	jsonplan.go   per message type, once: fields in declaration order,
//	              quoted JSON names, field options, the generated Go
//	              struct's field of each (read and set with reflect,
//	              several times cheaper than protoreflect)
//	jsonencode.go AppendJSON: message -> compact JSON, the same value
//	              as Encode's tree through encoding/json, deterministic
//	jsonscan.go   a JSON scanner over the bytes (syntax as
//	              encoding/json's; strings read into one arena)
//	jsondecode.go UnmarshalJSON: JSON -> message, what Decode accepts
//	              and refuses, plus Kubernetes' field validation (Strict,
//	              Warn, Ignore) of unknown and duplicate fields
//	errors.go     FieldError, with its type and Kubernetes' words for
//	              strict decoding errors
//
// The package owns the wire shape of manifests only: it does not know
// which kinds exist (package kinds), defaults or validates objects
// (internal/defaults, internal/validation), or talks to the apiserver.
package manifest
