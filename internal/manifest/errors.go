package manifest

import (
	"strconv"
	"strings"
)

// ErrorType is what kind of problem a FieldError reports, so that the
// apiserver can answer each as Kubernetes does (strict decoding errors
// are a 400 in Kubernetes' words; the others name their field).
type ErrorType uint8

const (
	// ErrorInvalid is a value of the wrong type or form.
	ErrorInvalid ErrorType = iota
	// ErrorUnknown is a field that neither Skiff's type nor Kubernetes'
	// has: Kubernetes' strict decoding says `unknown field "spec.foo"`.
	ErrorUnknown
	// ErrorDuplicate is a field (or a map key) given twice in one JSON
	// object: `duplicate field "metadata.name"`.
	ErrorDuplicate
	// ErrorNotSupported is a field Kubernetes has but Skiff does not, with
	// a value; refused whatever the field validation, since dropping it
	// would change what the object means.
	ErrorNotSupported
)

// FieldError is one problem with one field of a document.
type FieldError struct {
	Path string // "spec.template.spec.containers[0].image"
	Msg  string
	Type ErrorType
	// strictPath is Path as Kubernetes' strict decoder spells it (a map
	// key after a dot: "metadata.labels.app"), where it differs.
	strictPath string
}

func (e *FieldError) Error() string {
	if e.Path == "" {
		return e.Msg
	}
	return e.Path + ": " + e.Msg
}

// Kubernetes is the error as Kubernetes' strict field validation words
// it, for an unknown or duplicate field (`unknown field "spec.foo"`, the
// text of its warnings and of its 400 "strict decoding error: ..."), and
// Error() for any other.
func (e *FieldError) Kubernetes() string {
	var what string
	switch e.Type {
	case ErrorUnknown:
		what = "unknown field "
	case ErrorDuplicate:
		what = "duplicate field "
	default:
		return e.Error()
	}
	p := e.strictPath
	if p == "" {
		p = e.Path
	}
	return what + strconv.Quote(p)
}

// Errors are every problem found in one document.
type Errors []*FieldError

func (l Errors) Error() string {
	parts := make([]string, len(l))
	for i, e := range l {
		parts[i] = e.Error()
	}
	return strings.Join(parts, "; ")
}
