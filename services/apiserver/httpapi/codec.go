package httpapi

import (
	"errors"
	"fmt"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"google.golang.org/protobuf/proto"

	"skiff.dev/internal/apierrors"
	"skiff.dev/internal/manifest"
	metav1 "skiff.dev/proto/meta/v1"
)

// The wire shape of the HTTP API is Kubernetes' JSON, by the codec skiffctl
// uses for manifests (internal/manifest): field names, quantities,
// int-or-string, RFC 3339 times, base64 bytes, empty fields omitted.

// fieldValidation is the fieldValidation query parameter: Strict refuses
// unknown and duplicate fields, Warn (the default, as Kubernetes') drops
// them with a warning, Ignore drops them silently.
type fieldValidation string

const (
	validationStrict fieldValidation = "Strict"
	validationWarn   fieldValidation = "Warn"
	validationIgnore fieldValidation = "Ignore"
)

func parseFieldValidation(r *http.Request) (fieldValidation, error) {
	switch v := fieldValidation(r.URL.Query().Get("fieldValidation")); v {
	case "":
		return validationWarn, nil
	case validationStrict, validationWarn, validationIgnore:
		return v, nil
	default:
		return "", apierrors.NewBadRequest(fmt.Sprintf("fieldValidation: invalid value %q: supported values are \"Ignore\", \"Warn\", \"Strict\"", v))
	}
}

// encodeJSON is msg in Kubernetes' JSON.
func encodeJSON(msg proto.Message) []byte { return manifest.MarshalJSON(msg) }

// jsonBufs are the buffers answers are encoded into (writeObject).
var jsonBufs = sync.Pool{New: func() any { b := make([]byte, 0, 4<<10); return &b }}

// writeObject answers msg in Kubernetes' JSON, encoded into a pooled
// buffer: a writer does not keep what it is given, so the buffer serves
// the next answer.
func writeObject(w http.ResponseWriter, code int, msg proto.Message) {
	if st, ok := msg.(*metav1.Status); ok { // an eviction's answer
		writeJSON(w, code, statusJSON(st))
		return
	}
	bp := jsonBufs.Get().(*[]byte)
	b := manifest.AppendJSON((*bp)[:0], msg)
	writeJSON(w, code, b)
	if cap(b) <= 64<<10 { // a large one is left to the collector
		*bp = b
		jsonBufs.Put(bp)
	}
}

// decodeBody decodes a request body (JSON, or YAML) into msg. warnings
// are what Warn validation dropped, each to go in a Warning header.
func decodeBody(r *http.Request, body []byte, msg proto.Message, v fieldValidation) (warnings []string, err error) {
	mt := "application/json"
	if ct := r.Header.Get("Content-Type"); ct != "" {
		mt, _, _ = mime.ParseMediaType(ct)
	}
	switch mt {
	case "application/json", "*/*":
		return decodeJSON(body, msg, v)
	case kubeProtobuf:
		b, err := kubeProtoToJSON(body)
		if err != nil {
			return nil, err
		}
		return decodeJSON(b, msg, v)
	case "application/yaml":
		tree, err := manifest.ParseYAML(body)
		if err != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("the body of the request is not YAML: %v", err))
		}
		obj, ok := tree.(map[string]any)
		if !ok {
			return nil, apierrors.NewBadRequest("the body of the request is not a YAML mapping")
		}
		return nil, decodeError(manifest.Decode(obj, msg, manifest.DecodeOptions{AllowUnknown: v != validationStrict}))
	default:
		return nil, unsupportedMediaType(mt)
	}
}

// decodeJSON decodes an object's JSON (a body, a patch's result) into msg.
func decodeJSON(b []byte, msg proto.Message, v fieldValidation) (warnings []string, err error) {
	warnings, err = manifest.UnmarshalJSON(b, msg, manifest.JSONOptions{FieldValidation: manifest.FieldValidation(v)})
	return warnings, decodeError(err)
}

// encodeList is a list message in Kubernetes' JSON: items written even
// when there are none ("items":[]), as Kubernetes' lists always have them.
func encodeList(list proto.Message, items int) []byte {
	b := encodeJSON(list)
	if items == 0 && len(b) > 1 {
		b = append(b[:len(b)-1], `,"items":[]}`...)
	}
	return b
}

// writeWarnings adds a Warning header per warning, as Kubernetes words
// them (299, the agent "-").
func writeWarnings(w http.ResponseWriter, warnings []string) {
	for _, warn := range warnings {
		w.Header().Add("Warning", `299 - `+strconv.Quote(warn))
	}
}

// decodeError is the API error of a body the codec refused, a 400:
// unknown and duplicate fields (Strict) in Kubernetes' words, "strict
// decoding error: unknown field \"spec.foo\"", other faults each with
// its field's path.
func decodeError(err error) error {
	if err == nil {
		return nil
	}
	var errs manifest.Errors
	if !errors.As(err, &errs) {
		return apierrors.NewBadRequest(fmt.Sprintf("the body of the request could not be decoded: %v", err))
	}
	var strict, other []string
	for _, e := range errs {
		switch e.Type {
		case manifest.ErrorUnknown, manifest.ErrorDuplicate:
			strict = append(strict, e.Kubernetes())
		default:
			other = append(other, e.Error())
		}
	}
	var parts []string
	if len(strict) > 0 {
		parts = append(parts, "strict decoding error: "+strings.Join(strict, ", "))
	}
	parts = append(parts, other...)
	return apierrors.NewBadRequest(strings.Join(parts, "; "))
}

func unsupportedMediaType(mt string) error {
	se := apierrors.NewBadRequest(fmt.Sprintf("the body of the request was in an unknown format - accepted media types include: application/json, application/yaml (got %s)", mt))
	se.Status.Reason = "UnsupportedMediaType"
	se.Status.Code = http.StatusUnsupportedMediaType
	return se
}
