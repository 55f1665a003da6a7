package patch

import (
	"cmp"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	kerrors "k8s.io/apimachinery/pkg/api/errors"
	kmetav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"skiff.dev/internal/apierrors"
	metav1 "skiff.dev/proto/meta/v1"
)

// The errors are made with apimachinery's constructors, as kube-apiserver
// makes them, and carried over into Skiff's Status field by field
// (fromStatus), so that reasons, codes, messages and causes are
// Kubernetes' to the letter.

func badRequest(msg string) error { return fromStatus(kerrors.NewBadRequest(msg).ErrStatus) }

// unsupported is kube-apiserver's 415 for a content type that is no patch
// type.
func unsupported(typ Type) error {
	accepted := make([]string, len(Types))
	for i, t := range Types {
		accepted[i] = string(t)
	}
	return fromStatus(kmetav1.Status{
		Status:  kmetav1.StatusFailure,
		Code:    http.StatusUnsupportedMediaType,
		Reason:  kmetav1.StatusReasonUnsupportedMediaType,
		Message: fmt.Sprintf("the body of the request was in an unknown format - accepted media types include: %v", strings.Join(accepted, ", ")),
	})
}

// fromError is err as kube-apiserver answers it: a Kubernetes API error
// keeps its status; any other is a 500 of no reason with err's text
// (responsewriters.ErrorToAPIStatus).
func fromError(err error) error {
	var se *apierrors.StatusError
	if errors.As(err, &se) {
		return se
	}
	var ks kerrors.APIStatus
	if errors.As(err, &ks) {
		return fromStatus(ks.Status())
	}
	return &apierrors.StatusError{Status: &metav1.Status{
		Status:  kmetav1.StatusFailure,
		Code:    http.StatusInternalServerError,
		Message: err.Error(),
	}}
}

// sortCauses orders an error's causes by message and field: those of an
// apply's conflicts come in no order (of a map's iteration) from
// structured-merge-diff, and a client that shows them, or a test,
// deserves the same answer to the same request.
func sortCauses(err error) error {
	var se *apierrors.StatusError
	if errors.As(err, &se) {
		slices.SortStableFunc(se.Status.GetDetails().GetCauses(), func(a, b *metav1.StatusCause) int {
			return cmp.Or(strings.Compare(a.GetMessage(), b.GetMessage()), strings.Compare(a.GetField(), b.GetField()))
		})
	}
	return err
}

func fromStatus(s kmetav1.Status) *apierrors.StatusError {
	out := &metav1.Status{Status: s.Status, Message: s.Message, Reason: string(s.Reason), Code: s.Code}
	if d := s.Details; d != nil {
		out.Details = &metav1.StatusDetails{Name: d.Name, Group: d.Group, Kind: d.Kind, Uid: string(d.UID), RetryAfterSeconds: d.RetryAfterSeconds}
		for _, c := range d.Causes {
			out.Details.Causes = append(out.Details.Causes, &metav1.StatusCause{Reason: string(c.Type), Message: c.Message, Field: c.Field})
		}
	}
	return &apierrors.StatusError{Status: out}
}
