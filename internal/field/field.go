// Package field names places in an object ("spec.containers[0].image") and
// collects what is wrong with them. Validation returns an ErrorList; the
// apiserver turns it into an Invalid status whose causes carry each path,
// and clients print it as is. It owns no validation rules itself.
package field

import (
	"fmt"
	"strconv"
	"strings"
)

// Path is an immutable path to a field, built from the root outwards.
type Path struct {
	parent *Path
	name   string // a field name, or "" for an index/key step
	index  string // "[3]" or "[key]" when this step is an index or map key
}

// NewPath starts a path at a top-level field, optionally with more steps.
func NewPath(name string, more ...string) *Path {
	p := &Path{name: name}
	for _, m := range more {
		p = &Path{parent: p, name: m}
	}
	return p
}

// Child returns the path to a field below p.
func (p *Path) Child(name string, more ...string) *Path {
	c := &Path{parent: p, name: name}
	for _, m := range more {
		c = &Path{parent: c, name: m}
	}
	return c
}

// Index returns the path to element i of the list at p.
func (p *Path) Index(i int) *Path { return &Path{parent: p, index: "[" + strconv.Itoa(i) + "]"} }

// Key returns the path to entry k of the map at p.
func (p *Path) Key(k string) *Path { return &Path{parent: p, index: "[" + k + "]"} }

// String renders the path as "a.b[1].c[key]".
func (p *Path) String() string {
	if p == nil {
		return "<nil>"
	}
	var steps []*Path
	for s := p; s != nil; s = s.parent {
		steps = append(steps, s)
	}
	var b strings.Builder
	for i := len(steps) - 1; i >= 0; i-- {
		s := steps[i]
		if s.index != "" {
			b.WriteString(s.index)
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(s.name)
	}
	return b.String()
}

// ErrorType says what kind of problem a field has. The values are the
// Kubernetes StatusCause types, so clients that know those know these.
type ErrorType string

const (
	ErrorTypeRequired     ErrorType = "FieldValueRequired"
	ErrorTypeInvalid      ErrorType = "FieldValueInvalid"
	ErrorTypeNotSupported ErrorType = "FieldValueNotSupported"
	ErrorTypeDuplicate    ErrorType = "FieldValueDuplicate"
	ErrorTypeForbidden    ErrorType = "FieldValueForbidden"
	ErrorTypeTooLong      ErrorType = "FieldValueTooLong"
	ErrorTypeTooMany      ErrorType = "FieldValueTooMany"
	ErrorTypeNotFound     ErrorType = "FieldValueNotFound"
)

// String is the human phrase printed before the detail.
func (t ErrorType) String() string {
	switch t {
	case ErrorTypeRequired:
		return "Required value"
	case ErrorTypeInvalid:
		return "Invalid value"
	case ErrorTypeNotSupported:
		return "Unsupported value"
	case ErrorTypeDuplicate:
		return "Duplicate value"
	case ErrorTypeForbidden:
		return "Forbidden"
	case ErrorTypeTooLong:
		return "Too long"
	case ErrorTypeTooMany:
		return "Too many"
	case ErrorTypeNotFound:
		return "Not found"
	}
	return string(t)
}

// Error is one problem with one field.
type Error struct {
	Type     ErrorType
	Field    string
	BadValue any
	Detail   string
}

// Error renders `spec.replicas: Invalid value: -1: must be greater than or equal to 0`.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.Field)
	b.WriteString(": ")
	b.WriteString(e.Type.String())
	switch e.Type {
	case ErrorTypeInvalid, ErrorTypeNotSupported, ErrorTypeDuplicate, ErrorTypeTooMany, ErrorTypeNotFound:
		fmt.Fprintf(&b, ": %s", quote(e.BadValue))
	}
	if e.Detail != "" {
		b.WriteString(": ")
		b.WriteString(e.Detail)
	}
	return b.String()
}

func quote(v any) string {
	if s, ok := v.(string); ok {
		return strconv.Quote(s)
	}
	return fmt.Sprint(v)
}

// Required says the field must be set.
func Required(p *Path, detail string) *Error {
	return &Error{Type: ErrorTypeRequired, Field: p.String(), Detail: detail}
}

// Invalid says the value is malformed or out of range.
func Invalid(p *Path, value any, detail string) *Error {
	return &Error{Type: ErrorTypeInvalid, Field: p.String(), BadValue: value, Detail: detail}
}

// NotSupported says the value is not one of the allowed ones.
func NotSupported(p *Path, value any, allowed []string) *Error {
	detail := ""
	if len(allowed) > 0 {
		qs := make([]string, len(allowed))
		for i, a := range allowed {
			qs[i] = strconv.Quote(a)
		}
		detail = "supported values: " + strings.Join(qs, ", ")
	}
	return &Error{Type: ErrorTypeNotSupported, Field: p.String(), BadValue: value, Detail: detail}
}

// Duplicate says the value appears twice where it must be unique.
func Duplicate(p *Path, value any) *Error {
	return &Error{Type: ErrorTypeDuplicate, Field: p.String(), BadValue: value}
}

// NotFound says the value names something that does not exist.
func NotFound(p *Path, value any) *Error {
	return &Error{Type: ErrorTypeNotFound, Field: p.String(), BadValue: value}
}

// Forbidden says the field may not be set or changed here.
func Forbidden(p *Path, detail string) *Error {
	return &Error{Type: ErrorTypeForbidden, Field: p.String(), Detail: detail}
}

// TooLong says the value exceeds maxLength.
func TooLong(p *Path, maxLength int) *Error {
	return &Error{Type: ErrorTypeTooLong, Field: p.String(), Detail: fmt.Sprintf("must have at most %d bytes", maxLength)}
}

// TooMany says a list has more than maxItems items (it has n).
func TooMany(p *Path, n, maxItems int) *Error {
	return &Error{Type: ErrorTypeTooMany, Field: p.String(), BadValue: n, Detail: fmt.Sprintf("must have at most %d items", maxItems)}
}

// ErrorList collects the problems of one object.
type ErrorList []*Error

// Error joins every problem, so one message names every bad field.
func (l ErrorList) Error() string {
	parts := make([]string, len(l))
	for i, e := range l {
		parts[i] = e.Error()
	}
	return strings.Join(parts, "; ")
}
