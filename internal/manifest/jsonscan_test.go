package manifest

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"

	appsv1 "skiff.dev/proto/apps/v1"
	corev1 "skiff.dev/proto/core/v1"
	policyv1 "skiff.dev/proto/policy/v1"
)

// Malformed JSON is a *SyntaxError, wherever it is (in a field the
// decoder reads, in one it skips, in fieldsV1), as encoding/json finds.
func TestSyntaxErrors(t *testing.T) {
	deep := `{"x":` + strings.Repeat("[", maxDepth+2) + strings.Repeat("]", maxDepth+2) + `}`
	for _, doc := range []string{
		``, ` `, `{`, `{"data"}`, `{"data":}`, `{"data":{"a":"b",}}`, `{"data":{"a":"b"}`,
		`{"kind":"a",}`, `{"kind":tru}`, `{"kind":nul}`, `{"kind":"` + "\x01" + `"}`, `{"kind":"\q"}`,
		`{"kind":"\u12"}`, `{"kind":"abc`, `{"kind":01}`, `{"kind":-}`, `{"kind":1.}`, `{"kind":1e}`,
		`{"kind":+1}`, `{"kind":.5}`, `{} {}`, `{}x`, `{"x":[1,]}`, `{"x":[1 2]}`, `{"x":{"a" 1}}`,
		`{"x":{1:2}}`, `{'kind':'Pod'}`, `{"metadata":{"managedFields":[{"fieldsV1":{"a":}}]}}`,
		`{"x":"\ud800` + "\xff", deep,
	} {
		if json.Valid([]byte(doc)) {
			t.Errorf("%q: encoding/json finds it valid: the case is wrong", doc)
			continue
		}
		_, err := UnmarshalJSON([]byte(doc), &corev1.ConfigMap{}, JSONOptions{})
		var se *SyntaxError
		if !errors.As(err, &se) {
			t.Errorf("%q: error %v (%T), want a *SyntaxError", doc, err, err)
		}
	}
	// Well-formed JSON, however odd, is no syntax error.
	for _, doc := range []string{
		`{}`, ` {"kind" : "a" } `, `{"x":[[],{},"\ud800\udc00\ud800\u0041","\/\b\f\n\r\t",-0,0.5e-3,1E+2,true,false,null]}`,
		`{"kind":"\u00e9\ud83d\ude80"}`, "{\"kind\":\"\xff\"}",
	} {
		if !json.Valid([]byte(doc)) && !strings.Contains(doc, "\xff") {
			t.Errorf("%q: encoding/json finds it invalid: the case is wrong", doc)
		}
		_, err := UnmarshalJSON([]byte(doc), &corev1.ConfigMap{}, JSONOptions{FieldValidation: FieldValidationIgnore})
		if err != nil {
			t.Errorf("%q: %v", doc, err)
		}
	}
	// A document that is not an object.
	for doc, want := range map[string]string{
		`[]`:    "expected an object, got a list",
		`"a"`:   `expected an object, got string "a"`,
		`null`:  "expected an object, got null",
		` 12 `:  "expected an object, got integer 12",
		`[1,2]`: "expected an object, got a list",
	} {
		_, err := UnmarshalJSON([]byte(doc), &corev1.ConfigMap{}, JSONOptions{})
		if err == nil || err.Error() != want {
			t.Errorf("%s: error %v, want %q", doc, err, want)
		}
	}
}

// Strings read as encoding/json reads them: escapes, surrogate pairs,
// lone surrogates and invalid UTF-8 as U+FFFD.
func TestStrings(t *testing.T) {
	for _, s := range []string{
		`plain`, `esc \" \\ \/ \b \f \n \r \t`, `\u00e9\u0041\u2028`, `\ud83d\ude80 pair`,
		`\ud800 lone`, `\udc00 low`, `\ud800\u0041 not a pair`, `\ud800\ud800 two highs`, "bad \xff\xc3 utf-8", `日本語 🚀`,
	} {
		doc := `{"data":{"k":"` + s + `"}}`
		var want struct{ Data map[string]string }
		if err := json.Unmarshal([]byte(doc), &want); err != nil {
			t.Fatalf("%q: %v", s, err)
		}
		got := &corev1.ConfigMap{}
		if _, err := UnmarshalJSON([]byte(doc), got, JSONOptions{}); err != nil {
			t.Fatalf("%q: %v", s, err)
		}
		if diff := cmp.Diff(want.Data["k"], got.Data["k"]); diff != "" {
			t.Errorf("%q: (-encoding/json +UnmarshalJSON):\n%s", s, diff)
		}
		// Keys too: an escaped key names the same field.
		if _, err := UnmarshalJSON([]byte(`{"d\u0061ta":{"k":"v"}}`), got, JSONOptions{FieldValidation: FieldValidationStrict}); err != nil || got.Data["k"] != "v" {
			t.Errorf("escaped key: %v %v", err, got)
		}
	}
}

func TestAppendCompact(t *testing.T) {
	for raw, want := range map[string]string{
		` { "a" : [ 1 , 2.50 , "x y" ] , "b" : { } } `: `{"a":[1,2.50,"x y"],"b":{}}`,
		"\"bad \xff\"": "\"bad \uFFFD\"",
		`{"a":`:        "",
		`{} {}`:        "",
	} {
		got, ok := appendCompact([]byte("x"), []byte(raw))
		if want == "" {
			if ok || string(got) != "x" {
				t.Errorf("%q: %q, %v; want refused", raw, got, ok)
			}
			continue
		}
		if !ok || string(got) != "x"+want {
			t.Errorf("%q: %q, %v; want %q", raw, got, ok, want)
		}
	}
}

// FuzzUnmarshalJSON checks UnmarshalJSON against encoding/json (what is
// well formed) and against Read and Decode (what an object decodes to,
// what is refused), and AppendJSON against Encode on what it decoded,
// into a Pod, a Deployment, a ConfigMap and a
// PodDisruptionBudget (between them every special type), from the kinds'
// examples and a few odd documents.
func FuzzUnmarshalJSON(f *testing.F) {
	for _, obj := range exampleObjects(f) {
		f.Add(AppendJSON(nil, obj))
	}
	for _, doc := range []string{
		`{"spec":{"containers":[{"name":"a","resources":{"limits":{"cpu":0.5}}}],"os":{},"flavour":1}}`,
		`{"metadata":{"managedFields":[{"fieldsV1":{"f:a":{}}}],"labels":{"a":"1","b":null}}}`,
		`{"spec":{"strategy":{"rollingUpdate":{"maxSurge":"25%","maxUnavailable":1e0}},"replicas":-0}}`,
		`{"status":{"disruptedPods":{"a":"2024-05-01T12:00:00Z"}},"binaryData":{"x":"AAH+/w=="},"data":{"x":"\u00e9\ud800"}}`,
	} {
		f.Add([]byte(doc))
	}
	msgs := []proto.Message{&corev1.Pod{}, &appsv1.Deployment{}, &corev1.ConfigMap{}, &policyv1.PodDisruptionBudget{}}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, msg := range msgs {
			fuzzOne(t, data, msg)
		}
	})
}

func fuzzOne(t *testing.T, data []byte, newMsg proto.Message) {
	got := newMsg.ProtoReflect().New().Interface()
	_, err := UnmarshalJSON(data, got, JSONOptions{FieldValidation: FieldValidationStrict})
	if err == nil { // and what it decoded, AppendJSON writes as Encode does
		sameJSON(t, string(data), viaEncode(t, got), AppendJSON(nil, got))
	}
	var se *SyntaxError
	syntax := errors.As(err, &se)
	switch valid := json.Valid(data); {
	case syntax && valid && !strings.Contains(se.msg, "out of range"):
		t.Fatalf("%q: %v; encoding/json finds it well formed", data, err)
	case !syntax && !valid:
		t.Fatalf("%q: encoding/json finds it malformed, UnmarshalJSON: %v", data, err)
	case syntax:
		return
	}
	if bytes.TrimLeft(data, " \t\r\n")[0] != '{' {
		return // not an object: Read would take a list's items
	}
	if _, rerr := readJSON(bytes.NewReader(data)); rerr != nil {
		return // a number out of range, which Read refuses even where nobody looks
	}
	var errs Errors
	if errors.As(err, &errs) {
		for _, e := range errs {
			if e.Type == ErrorDuplicate {
				return // Read's tree keeps only the last: the first one's errors are not Decode's
			}
		}
	}
	decodeBoth(t, data, newMsg)
}
