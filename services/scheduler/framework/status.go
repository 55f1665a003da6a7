package framework

import (
	"errors"
	"strings"
)

// Code is the kind of a plugin's verdict.
type Code int

// The codes, as in Kubernetes.
const (
	// Success: the pod may go on (a nil *Status is a Success).
	Success Code = iota
	// Error: the plugin failed; the pod is retried after a backoff.
	Error
	// Unschedulable: the pod does not fit, but a change in the cluster
	// (or preemption) could make it fit.
	Unschedulable
	// UnschedulableAndUnresolvable: the pod does not fit on that node and
	// preemption would not help (a taint, a selector, a node name).
	UnschedulableAndUnresolvable
	// Skip: from PreFilter, the plugin's Filter need not run for this pod;
	// from PreScore, its Score; from Bind, the next bind plugin should bind.
	Skip
)

var codeNames = [...]string{"Success", "Error", "Unschedulable", "UnschedulableAndUnresolvable", "Skip"}

func (c Code) String() string {
	if c >= 0 && int(c) < len(codeNames) {
		return codeNames[c]
	}
	return "Unknown"
}

// Status is a plugin's verdict with its reasons. A nil *Status is Success.
type Status struct {
	code    Code
	reasons []string
	err     error
	plugin  string
}

// NewStatus returns a status with code and reasons.
func NewStatus(code Code, reasons ...string) *Status {
	return &Status{code: code, reasons: reasons}
}

// AsStatus wraps err as an Error status (nil for a nil err).
func AsStatus(err error) *Status {
	if err == nil {
		return nil
	}
	return &Status{code: Error, reasons: []string{err.Error()}, err: err}
}

// Code is the status' code; Success for nil.
func (s *Status) Code() Code {
	if s == nil {
		return Success
	}
	return s.code
}

// IsSuccess reports a nil or Success status.
func (s *Status) IsSuccess() bool { return s.Code() == Success }

// IsSkip reports a Skip status.
func (s *Status) IsSkip() bool { return s.Code() == Skip }

// IsRejected reports Unschedulable or UnschedulableAndUnresolvable.
func (s *Status) IsRejected() bool {
	c := s.Code()
	return c == Unschedulable || c == UnschedulableAndUnresolvable
}

// Reasons are the human reasons ("Insufficient cpu").
func (s *Status) Reasons() []string {
	if s == nil {
		return nil
	}
	return s.reasons
}

// Message joins the reasons.
func (s *Status) Message() string {
	if s == nil {
		return ""
	}
	return strings.Join(s.reasons, ", ")
}

// Plugin names the plugin that returned the status ("" before the
// framework records it).
func (s *Status) Plugin() string {
	if s == nil {
		return ""
	}
	return s.plugin
}

// WithPlugin returns a copy of s that names the plugin that returned it
// (s itself may be shared by concurrent callers and is not changed).
func (s *Status) WithPlugin(name string) *Status {
	if s == nil || s.plugin == name {
		return s
	}
	c := *s
	c.plugin = name
	return &c
}

// AsError returns nil for a success or rejection-free status, else an error
// carrying the reasons (wrapping the original error, if any).
func (s *Status) AsError() error {
	if s.IsSuccess() || s.IsSkip() {
		return nil
	}
	if s.err != nil {
		return s.err
	}
	return errors.New(s.Message())
}

// Err is the error an Error status was made from, if any.
func (s *Status) Err() error {
	if s == nil {
		return nil
	}
	return s.err
}

func (s *Status) String() string {
	if s == nil {
		return "Success"
	}
	var b strings.Builder
	b.WriteString(s.code.String())
	if s.plugin != "" {
		b.WriteString(" from ")
		b.WriteString(s.plugin)
	}
	if len(s.reasons) > 0 {
		b.WriteString(": ")
		b.WriteString(s.Message())
	}
	return b.String()
}
