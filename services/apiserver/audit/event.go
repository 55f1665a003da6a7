package audit

import (
	"strconv"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"skiff.dev/internal/apierrors"
	"skiff.dev/internal/manifest"
	"skiff.dev/services/apiserver/server"
	"skiff.dev/services/apiserver/user"
)

// entry is a finished request waiting to be written.
type entry struct {
	ri        *server.RequestInfo
	name      string // the object's name (a create's, from the response)
	req, resp proto.Message
	err       error
	at        time.Time
	level     Level // the event's: the log's, or less (levelFor)
}

// timeFormat is Kubernetes' audit timestamps: RFC 3339, microseconds, UTC.
const timeFormat = "2006-01-02T15:04:05.000000Z07:00"

var jsonOpts = protojson.MarshalOptions{}

// appendUser appends `,"<key>":{"username":...,"uid":...,"groups":[...]}`.
func appendUser(b []byte, key string, u *user.Info) []byte {
	b = append(b, `,"`...)
	b = append(b, key...)
	b = append(b, `":{"username":`...)
	if u == nil {
		return append(b, `""}`...)
	}
	b = appendString(b, u.Name)
	if u.UID != "" {
		b = append(b, `,"uid":`...)
		b = appendString(b, u.UID)
	}
	b = append(b, `,"groups":[`...)
	for i, g := range u.Groups {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, g)
	}
	return append(b, "]}"...)
}

// appendEvent appends e as one audit.k8s.io/v1 Event and a newline.
func appendEvent(b []byte, level Level, e *entry) []byte {
	ri := e.ri
	b = append(b, `{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":`...)
	b = appendString(b, string(level))
	b = append(b, `,"auditID":`...)
	b = appendString(b, ri.ID)
	b = append(b, `,"stage":"ResponseComplete","requestURI":`...)
	b = appendString(b, ri.Path)
	b = append(b, `,"verb":`...)
	b = appendString(b, ri.Verb)
	// Kubernetes' shape: user is who authenticated, impersonatedUser whom
	// the request acted as.
	if ri.Impersonator != nil {
		b = appendUser(b, "user", ri.Impersonator)
		b = appendUser(b, "impersonatedUser", ri.User)
	} else {
		b = appendUser(b, "user", ri.User)
	}
	if ri.IsResource() {
		b = append(b, `,"objectRef":{"resource":`...)
		b = appendString(b, ri.Resource)
		b = appendField(b, "namespace", ri.Namespace)
		b = appendField(b, "name", e.name)
		b = appendField(b, "apiGroup", ri.APIGroup)
		b = appendField(b, "subresource", ri.Subresource)
		b = append(b, '}')
	}
	b = appendStatus(b, ri, e.err)
	if e.req != nil && level.atLeast(LevelRequest) {
		b = append(b, `,"requestObject":`...)
		b = appendMessage(b, e.req)
	}
	if e.resp != nil && level.atLeast(LevelRequestResponse) {
		b = append(b, `,"responseObject":`...)
		b = appendMessage(b, e.resp)
	}
	b = append(b, `,"requestReceivedTimestamp":"`...)
	b = ri.Start.UTC().AppendFormat(b, timeFormat)
	b = append(b, `","stageTimestamp":"`...)
	b = e.at.UTC().AppendFormat(b, timeFormat)
	return append(b, "\"}\n"...)
}

// appendStatus is the responseStatus: the HTTP code Kubernetes would have
// answered (RequestInfo.ResponseCode), Success or Failure, and the error's
// message and reason.
func appendStatus(b []byte, ri *server.RequestInfo, err error) []byte {
	b = append(b, `,"responseStatus":{"code":`...)
	code := ri.ResponseCode(err)
	b = strconv.AppendInt(b, int64(code), 10)
	if err == nil {
		return append(b, `,"status":"Success"}`...)
	}
	if code == apierrors.StatusClientClosedRequest {
		// The client went away: no Status to tell.
		b = append(b, `,"status":"Failure","message":`...)
		b = appendString(b, err.Error())
		return append(b, '}')
	}
	se := apierrors.FromError(err)
	b = append(b, `,"status":"Failure","message":`...)
	b = appendString(b, se.Status.GetMessage())
	b = appendField(b, "reason", se.Status.GetReason())
	return append(b, '}')
}

// appendMessage appends m as protojson, or null when it cannot be encoded.
func appendMessage(b []byte, m proto.Message) []byte {
	if !m.ProtoReflect().IsValid() {
		return append(b, "null"...)
	}
	out, err := jsonOpts.MarshalAppend(b, m)
	if err != nil {
		return append(b, "null"...)
	}
	return out
}

// appendField appends ,"key":"value" when value is not empty.
func appendField(b []byte, key, value string) []byte {
	if value == "" {
		return b
	}
	b = append(b, ',', '"')
	b = append(b, key...)
	b = append(b, '"', ':')
	return appendString(b, value)
}

// appendString appends s as a JSON string, escaped as Kubernetes' own
// audit log (encoding/json) escapes it.
func appendString(b []byte, s string) []byte { return manifest.AppendJSONString(b, s) }
