package httpapi

import (
	"bytes"
	"net/http"
	"strconv"

	"skiff.dev/internal/apierrors"
	metav1 "skiff.dev/proto/meta/v1"
)

// statusJSON is a Status in Kubernetes' JSON: the message's fields after
// the kind, apiVersion and (empty) metadata the proto message does not
// carry.
func statusJSON(st *metav1.Status) []byte {
	body := encodeJSON(st)
	var b bytes.Buffer
	b.Grow(len(body) + 48)
	b.WriteString(`{"kind":"Status","apiVersion":"v1","metadata":{}`)
	if len(body) > 2 {
		b.WriteByte(',')
		b.Write(body[1:])
	} else {
		b.WriteByte('}')
	}
	return b.Bytes()
}

// writeError answers err as kube-apiserver does: a Status with the HTTP
// code of its reason (404, 409, 410, 422 with causes, 429 with
// Retry-After...).
func writeError(w http.ResponseWriter, err error) {
	se := apierrors.FromError(err)
	st := se.Status
	code := apierrors.HTTPStatusCode(err)
	if code == apierrors.StatusClientClosedRequest {
		// Nobody reads it; what the logs and metrics already say.
		return
	}
	if st.GetCode() == 0 {
		st.Code = int32(code)
	}
	if st.GetStatus() == "" {
		st.Status = "Failure"
	}
	if s := st.GetDetails().GetRetryAfterSeconds(); s > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int(s)))
	}
	writeJSON(w, code, statusJSON(st))
}

func writeJSON(w http.ResponseWriter, code int, body []byte) {
	writeBody(w, code, "application/json", body)
}

func writeBody(w http.ResponseWriter, code int, contentType string, body []byte) {
	h := w.Header()
	h.Set("Content-Type", contentType)
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(code)
	_, _ = w.Write(body)
}

// success is the Status of a DELETE whose object is gone at once, as
// Kubernetes answers one.
func success(group, kind, name, uid string) []byte {
	return statusJSON(&metav1.Status{Status: "Success", Code: http.StatusOK,
		Details: &metav1.StatusDetails{Name: name, Group: group, Kind: kind, Uid: uid}})
}
