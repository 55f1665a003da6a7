// Package apierrors is the one place where API error categories meet gRPC
// codes. The apiserver returns *StatusError values; they travel as a gRPC
// status whose code follows the table below and whose single detail is a
// skiff.meta.v1.Status (reason, message, field causes). Clients turn any
// error back into a *StatusError with FromError and ask IsNotFound,
// IsConflict, IsExpired...
//
//	Reason                 gRPC code           HTTP (Kubernetes)
//	NotFound               NOT_FOUND           404
//	AlreadyExists          ALREADY_EXISTS      409
//	Conflict               ABORTED             409  stale resourceVersion, failed precondition
//	Invalid                INVALID_ARGUMENT    422  causes name every bad field
//	BadRequest             INVALID_ARGUMENT    400
//	RequestEntityTooLarge  INVALID_ARGUMENT    413
//	Expired                OUT_OF_RANGE        410  revision compacted: relist, then watch
//	MethodNotAllowed       UNIMPLEMENTED       405
//	TooManyRequests        RESOURCE_EXHAUSTED  429  details.retryAfterSeconds
//	Timeout                DEADLINE_EXCEEDED   504
//	ServiceUnavailable     UNAVAILABLE         503  also: a slow watcher cut off
//	Unauthorized           UNAUTHENTICATED     401
//	Forbidden              PERMISSION_DENIED   403
//	InternalError          INTERNAL            500
//	(the client went away) CANCELLED           499  nginx's; HTTPStatusCode
package apierrors

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"skiff.dev/internal/field"
	metav1 "skiff.dev/proto/meta/v1"
)

// Reason is the machine-readable category of an error.
type Reason string

const (
	ReasonNotFound              Reason = "NotFound"
	ReasonAlreadyExists         Reason = "AlreadyExists"
	ReasonConflict              Reason = "Conflict"
	ReasonInvalid               Reason = "Invalid"
	ReasonBadRequest            Reason = "BadRequest"
	ReasonRequestEntityTooLarge Reason = "RequestEntityTooLarge"
	ReasonExpired               Reason = "Expired"
	ReasonMethodNotAllowed      Reason = "MethodNotAllowed"
	ReasonTooManyRequests       Reason = "TooManyRequests"
	ReasonTimeout               Reason = "Timeout"
	ReasonServiceUnavailable    Reason = "ServiceUnavailable"
	ReasonUnauthorized          Reason = "Unauthorized"
	ReasonForbidden             Reason = "Forbidden"
	ReasonInternalError         Reason = "InternalError"
	ReasonUnknown               Reason = ""
)

var reasonTable = map[Reason]struct {
	code codes.Code
	http int32
}{
	ReasonNotFound:              {codes.NotFound, 404},
	ReasonAlreadyExists:         {codes.AlreadyExists, 409},
	ReasonConflict:              {codes.Aborted, 409},
	ReasonInvalid:               {codes.InvalidArgument, 422},
	ReasonBadRequest:            {codes.InvalidArgument, 400},
	ReasonRequestEntityTooLarge: {codes.InvalidArgument, 413},
	ReasonExpired:               {codes.OutOfRange, 410},
	ReasonMethodNotAllowed:      {codes.Unimplemented, 405},
	ReasonTooManyRequests:       {codes.ResourceExhausted, 429},
	ReasonTimeout:               {codes.DeadlineExceeded, 504},
	ReasonServiceUnavailable:    {codes.Unavailable, 503},
	ReasonUnauthorized:          {codes.Unauthenticated, 401},
	ReasonForbidden:             {codes.PermissionDenied, 403},
	ReasonInternalError:         {codes.Internal, 500},
}

// Code returns the gRPC code for a reason.
func (r Reason) Code() codes.Code {
	if e, ok := reasonTable[r]; ok {
		return e.code
	}
	return codes.Unknown
}

// StatusError is an API error: a Status that knows its gRPC code.
type StatusError struct {
	Status *metav1.Status
}

func (e *StatusError) Error() string { return e.Status.GetMessage() }

// Reason returns the error's category.
func (e *StatusError) Reason() Reason { return Reason(e.Status.GetReason()) }

// GRPCStatus lets grpc-go send the error with its code and Status detail.
func (e *StatusError) GRPCStatus() *status.Status {
	st := status.New(e.Reason().Code(), e.Status.GetMessage())
	if withDetail, err := st.WithDetails(e.Status); err == nil {
		return withDetail
	}
	return st
}

func newError(reason Reason, message string, details *metav1.StatusDetails) *StatusError {
	return &StatusError{Status: &metav1.Status{
		Status:  "Failure",
		Message: message,
		Reason:  string(reason),
		Details: details,
		Code:    reasonTable[reason].http,
	}}
}

// NewNotFound: `pods "web" not found`.
func NewNotFound(resource, name string) *StatusError {
	return newError(ReasonNotFound, fmt.Sprintf("%s %q not found", resource, name),
		&metav1.StatusDetails{Name: name, Kind: resource})
}

// NewAlreadyExists: `pods "web" already exists`.
func NewAlreadyExists(resource, name string) *StatusError {
	return newError(ReasonAlreadyExists, fmt.Sprintf("%s %q already exists", resource, name),
		&metav1.StatusDetails{Name: name, Kind: resource})
}

// NewConflict: `Operation cannot be fulfilled on pods "web": <why>`.
func NewConflict(resource, name, why string) *StatusError {
	return newError(ReasonConflict, fmt.Sprintf("Operation cannot be fulfilled on %s %q: %s", resource, name, why),
		&metav1.StatusDetails{Name: name, Kind: resource})
}

// NewInvalid lists every bad field: `Deployment "web" is invalid: spec.replicas: ...`.
func NewInvalid(kind, name string, errs field.ErrorList) *StatusError {
	causes := make([]*metav1.StatusCause, len(errs))
	for i, e := range errs {
		causes[i] = &metav1.StatusCause{Reason: string(e.Type), Message: e.Error(), Field: e.Field}
	}
	return newError(ReasonInvalid, fmt.Sprintf("%s %q is invalid: %s", kind, name, errs.Error()),
		&metav1.StatusDetails{Name: name, Kind: kind, Causes: causes})
}

// NewBadRequest is for malformed requests that are not about one object's fields.
func NewBadRequest(message string) *StatusError {
	return newError(ReasonBadRequest, message, nil)
}

// NewTooLarge refuses an object whose encoding exceeds the limit.
func NewTooLarge(resource, name string, size, limit int) *StatusError {
	return newError(ReasonRequestEntityTooLarge,
		fmt.Sprintf("%s %q is too large: %d bytes encoded, the limit is %d bytes", resource, name, size, limit),
		&metav1.StatusDetails{Name: name, Kind: resource})
}

// NewExpired is the answer to a watch or list from a compacted revision.
func NewExpired(message string) *StatusError {
	return newError(ReasonExpired, message, nil)
}

// NewMethodNotAllowed refuses a verb a resource does not support.
func NewMethodNotAllowed(resource, verb string) *StatusError {
	return newError(ReasonMethodNotAllowed, fmt.Sprintf("%s does not support %s", resource, verb),
		&metav1.StatusDetails{Kind: resource})
}

// NewServiceUnavailable says the server cannot serve this now (e.g. a slow watcher was cut off).
func NewServiceUnavailable(message string) *StatusError {
	return newError(ReasonServiceUnavailable, message, nil)
}

// NewTooManyRequests asks the client to retry after some seconds.
func NewTooManyRequests(message string, retryAfterSeconds int32) *StatusError {
	return newError(ReasonTooManyRequests, message, &metav1.StatusDetails{RetryAfterSeconds: retryAfterSeconds})
}

// NewUnauthorized says the request carries no valid credentials.
func NewUnauthorized(message string) *StatusError {
	return newError(ReasonUnauthorized, message, nil)
}

// NewForbidden says who may not do what: `user "bob" cannot list
// resource "pods" in API group "" in the namespace "team-a": <why>`.
func NewForbidden(resource, name, message string) *StatusError {
	return newError(ReasonForbidden, message, &metav1.StatusDetails{Name: name, Kind: resource})
}

// NewTimeout says the server gave up waiting.
func NewTimeout(message string) *StatusError {
	return newError(ReasonTimeout, message, nil)
}

// NewInternal wraps an unexpected error.
func NewInternal(err error) *StatusError {
	return newError(ReasonInternalError, fmt.Sprintf("Internal error occurred: %v", err), nil)
}

// FromError turns any error (a *StatusError, a gRPC status from the wire,
// a context error) into a *StatusError. It returns nil for nil.
func FromError(err error) *StatusError {
	if err == nil {
		return nil
	}
	var se *StatusError
	if errors.As(err, &se) {
		return se
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return NewTimeout(err.Error())
	}
	st, ok := status.FromError(err)
	if !ok {
		return NewInternal(err)
	}
	for _, d := range st.Details() {
		if s, ok := d.(*metav1.Status); ok {
			return &StatusError{Status: s}
		}
	}
	// A status without our detail (transport errors, other servers): derive the reason from the code.
	reason := ReasonUnknown
	for r, e := range reasonTable {
		if e.code == st.Code() && r != ReasonBadRequest && r != ReasonRequestEntityTooLarge {
			reason = r
			break
		}
	}
	if st.Code() == codes.Canceled {
		reason = ReasonUnknown
	}
	return &StatusError{Status: &metav1.Status{Status: "Failure", Message: st.Message(), Reason: string(reason)}}
}

// StatusClientClosedRequest is the HTTP status of a request the client
// gave up (nginx's 499: no standard status says it).
const StatusClientClosedRequest = 499

// HTTPStatusCode is the HTTP status Kubernetes would answer err with, by
// the table above: 200 for nil (a create's 201 is the caller's to say),
// the Status detail's code, else the code's reason's (a status without
// detail, from grpc-go or another server), StatusClientClosedRequest when
// the client went away, 500 for anything else.
func HTTPStatusCode(err error) int {
	if err == nil {
		return 200
	}
	if errors.Is(err, context.Canceled) || status.Code(err) == codes.Canceled {
		return StatusClientClosedRequest
	}
	se := FromError(err)
	if code := se.Status.GetCode(); code != 0 {
		return int(code)
	}
	if e, ok := reasonTable[se.Reason()]; ok {
		return int(e.http)
	}
	return 500
}

// ReasonForError returns the reason of err, or ReasonUnknown.
func ReasonForError(err error) Reason {
	if se := FromError(err); se != nil {
		return se.Reason()
	}
	return ReasonUnknown
}

func IsNotFound(err error) bool           { return ReasonForError(err) == ReasonNotFound }
func IsAlreadyExists(err error) bool      { return ReasonForError(err) == ReasonAlreadyExists }
func IsConflict(err error) bool           { return ReasonForError(err) == ReasonConflict }
func IsInvalid(err error) bool            { return ReasonForError(err) == ReasonInvalid }
func IsBadRequest(err error) bool         { return ReasonForError(err) == ReasonBadRequest }
func IsExpired(err error) bool            { return ReasonForError(err) == ReasonExpired }
func IsTooLarge(err error) bool           { return ReasonForError(err) == ReasonRequestEntityTooLarge }
func IsMethodNotAllowed(err error) bool   { return ReasonForError(err) == ReasonMethodNotAllowed }
func IsServiceUnavailable(err error) bool { return ReasonForError(err) == ReasonServiceUnavailable }
func IsTooManyRequests(err error) bool    { return ReasonForError(err) == ReasonTooManyRequests }
func IsUnauthorized(err error) bool       { return ReasonForError(err) == ReasonUnauthorized }
func IsForbidden(err error) bool          { return ReasonForError(err) == ReasonForbidden }

// MayHaveHappened reports whether a write that returned err may have been
// carried out all the same: the answer was lost (the connection broke, the
// deadline passed, the server failed or went away mid-call), as opposed
// to a refusal, which says the write was not made. It is false for nil.
func MayHaveHappened(err error) bool {
	if err == nil {
		return false
	}
	switch ReasonForError(err) {
	case ReasonTimeout, ReasonServiceUnavailable, ReasonInternalError, ReasonUnknown:
		return true
	}
	return false
}
