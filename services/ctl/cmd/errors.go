package cmd

import (
	"errors"
	"fmt"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"skiff.dev/internal/apierrors"
	"skiff.dev/internal/manifest"
)

// message renders an error as one line for stderr, the way kubectl words
// it: a refused connection names the server, an API error its reason.
func (r *root) message(err error) string {
	var ee *exitError
	if errors.As(err, &ee) {
		return "error: " + ee.msg
	}
	var docErr *documentError
	if errors.As(err, &docErr) {
		return docErr.Error()
	}
	var se *apierrors.StatusError
	if errors.As(err, &se) {
		return r.statusMessage(se)
	}
	if st, ok := status.FromError(err); ok && st.Code() != codes.Unknown {
		return r.statusMessage(apierrors.FromError(err))
	}
	return "error: " + err.Error()
}

func (r *root) server() string {
	if r.resolved != nil {
		return r.resolved.Server
	}
	return "the server"
}

func (r *root) statusMessage(se *apierrors.StatusError) string {
	msg := se.Status.GetMessage()
	switch se.Reason() {
	case apierrors.ReasonServiceUnavailable:
		if se.Status.GetCode() != 0 {
			break // the server's answer, which may quote a refused node agent
		}
		// A transport error: the server itself cannot be reached.
		if strings.Contains(msg, "connection refused") {
			return fmt.Sprintf("The connection to the server %s was refused - did you specify the right host or port?", r.server())
		}
		return fmt.Sprintf("Unable to connect to the server %s: %s", r.server(), transportDetail(msg))
	case apierrors.ReasonUnauthorized:
		if msg == "" {
			msg = "Unauthorized"
		}
		return fmt.Sprintf("error: You must be logged in to the server (%s)", msg)
	case apierrors.ReasonInvalid:
		return "The " + withCauses(se)
	case apierrors.ReasonTimeout:
		if se.Status.GetCode() == 0 {
			return fmt.Sprintf("Unable to connect to the server %s: %s", r.server(), msg)
		}
	case apierrors.ReasonUnknown:
		return "Error from server: " + msg
	}
	return fmt.Sprintf("Error from server (%s): %s", se.Reason(), msg)
}

// withCauses is an Invalid message that names every bad field, even when
// the server's message does not list them all.
func withCauses(se *apierrors.StatusError) string {
	msg := se.Status.GetMessage()
	var missing []string
	for _, c := range se.Status.GetDetails().GetCauses() {
		if c.GetField() != "" && !strings.Contains(msg, c.GetField()) {
			missing = append(missing, c.GetMessage())
		}
	}
	if len(missing) > 0 {
		msg += "; " + strings.Join(missing, "; ")
	}
	return msg
}

func transportDetail(msg string) string {
	if i := strings.LastIndex(msg, "desc = "); i >= 0 {
		msg = msg[i+len("desc = "):]
	}
	return strings.Trim(msg, `"`)
}

// documentError is a document of a manifest that cannot be used.
type documentError struct {
	doc  *manifest.Document
	what string // `Deployment "web"`, when known
	err  error
}

func (e *documentError) Error() string {
	where := fmt.Sprintf("error validating %q", e.doc.Source)
	if e.doc.Source == "-" {
		where = "error validating STDIN"
	}
	if e.doc.Multi {
		where += fmt.Sprintf(" (document %d", e.doc.Index+1)
		if e.what != "" {
			where += ", " + e.what
		}
		where += ")"
	} else if e.what != "" {
		where += " (" + e.what + ")"
	}
	var errs manifest.Errors
	if errors.As(e.err, &errs) && len(errs) > 1 {
		lines := make([]string, len(errs))
		for i, fe := range errs {
			lines[i] = "  * " + fe.Error()
		}
		return "error: " + where + ":\n" + strings.Join(lines, "\n")
	}
	return "error: " + where + ": " + e.err.Error()
}
