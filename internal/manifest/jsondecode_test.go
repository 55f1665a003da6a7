package manifest

import (
	"bytes"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/testing/protocmp"

	"skiff.dev/internal/kinds"
	appsv1 "skiff.dev/proto/apps/v1"
	corev1 "skiff.dev/proto/core/v1"
	policyv1 "skiff.dev/proto/policy/v1"
)

// decodeBoth decodes the JSON object data into two new messages like
// newMsg's: with Decode over Read's tree, and with UnmarshalJSON
// (Strict). It returns each one's errors, as comparable strings (an
// unknown field by its path: Decode adds did-you-means), and fails unless
// the messages are equal where neither has errors.
func decodeBoth(t testing.TB, data []byte, newMsg proto.Message) (treeErrs, jsonErrs []string) {
	t.Helper()
	trees, err := readJSON(bytes.NewReader(data))
	if err != nil || len(trees) != 1 {
		t.Fatalf("Read: %d documents, %v\n%s", len(trees), err, data)
	}
	tree, ok := trees[0].(map[string]any)
	if !ok {
		t.Fatalf("not an object: %s", data)
	}
	want := newMsg.ProtoReflect().New().Interface()
	treeErrs = comparable(t, Decode(tree, want, DecodeOptions{}))
	got := newMsg.ProtoReflect().New().Interface()
	warnings, err := UnmarshalJSON(data, got, JSONOptions{FieldValidation: FieldValidationStrict})
	if len(warnings) > 0 {
		t.Errorf("Strict gave warnings %q", warnings)
	}
	jsonErrs = comparable(t, err)
	if diff := cmp.Diff(treeErrs, jsonErrs); diff != "" {
		t.Errorf("errors (-Decode +UnmarshalJSON):\n%s\nof %s", diff, data)
	}
	if len(treeErrs) == 0 && len(jsonErrs) == 0 {
		normalizeFieldsV1(want.ProtoReflect())
		normalizeFieldsV1(got.ProtoReflect())
		if !proto.Equal(want, got) {
			t.Errorf("decoded (-Decode +UnmarshalJSON):\n%s\nof %s", cmp.Diff(want, got, protocmp.Transform()), data)
		}
	}
	return treeErrs, jsonErrs
}

// comparable renders a decoder's errors, sorted (Decode reports them in
// key order, UnmarshalJSON in the document's order).
func comparable(t testing.TB, err error) []string {
	t.Helper()
	if err == nil {
		return nil
	}
	var errs Errors
	if !errors.As(err, &errs) {
		t.Fatalf("error %v (%T), want Errors", err, err)
	}
	var out []string
	for _, e := range errs {
		if e.Type == ErrorUnknown {
			out = append(out, e.Path+": unknown field")
			continue
		}
		out = append(out, e.Error())
	}
	slices.Sort(out)
	return out
}

// normalizeFieldsV1 rewrites every fieldsV1's bytes as encoding/json
// writes their value (Decode's are its tree's, keys sorted;
// UnmarshalJSON's are the document's, compacted).
func normalizeFieldsV1(m protoreflect.Message) {
	if m.Descriptor().FullName() == fieldsV1Name {
		rawFD := m.Descriptor().Fields().ByNumber(fieldsV1RawNumber)
		var v any
		if json.Unmarshal(m.Get(rawFD).Bytes(), &v) == nil {
			b, _ := json.Marshal(v)
			m.Set(rawFD, protoreflect.ValueOfBytes(b))
		}
		return
	}
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		switch {
		case fd.IsList() && fd.Message() != nil:
			for i := 0; i < v.List().Len(); i++ {
				normalizeFieldsV1(v.List().Get(i).Message())
			}
		case fd.IsMap() && fd.MapValue().Message() != nil:
			v.Map().Range(func(_ protoreflect.MapKey, e protoreflect.Value) bool {
				normalizeFieldsV1(e.Message())
				return true
			})
		case !fd.IsList() && !fd.IsMap() && fd.Message() != nil:
			normalizeFieldsV1(v.Message())
		}
		return true
	})
}

// UnmarshalJSON decodes what Decode decodes, to the same message: every
// kind's example (as encoding/json writes Encode's tree and as AppendJSON
// writes it) and random objects of every kind and list type.
func TestUnmarshalJSONIsDecode(t *testing.T) {
	for gvk, obj := range exampleObjects(t) {
		for _, data := range [][]byte{viaEncode(t, obj), AppendJSON(nil, obj)} {
			if treeErrs, _ := decodeBoth(t, data, obj); treeErrs != nil {
				t.Errorf("%s: %q", gvk, treeErrs)
			}
			got := obj.ProtoReflect().New().Interface()
			if _, err := UnmarshalJSON(data, got, JSONOptions{}); err != nil || !proto.Equal(obj, got) {
				t.Errorf("%s: round trip: %v\n%v\n%v", gvk, err, obj, got)
			}
		}
	}
	r := rand.New(rand.NewPCG(5, 6))
	for _, k := range kinds.All() {
		for i := 0; i < 6; i++ {
			for _, msg := range []proto.Message{k.New(), k.NewList()} {
				decodeBoth(t, AppendJSON(nil, randomObject(r, msg, 0.5+0.05*float64(i))), msg)
			}
		}
	}
}

// Every refusal of Decode, the same from UnmarshalJSON: the kinds of
// values each field takes, in fields, lists and maps, and the fields
// Kubernetes has but Skiff does not.
func TestUnmarshalJSONRefusesAsDecode(t *testing.T) {
	cases := []struct {
		name string
		msg  proto.Message
		doc  string
		want []string // Decode's errors (checked, then compared)
	}{
		{"wrong scalars", &appsv1.Deployment{},
			`{"spec":{"replicas":"two","paused":"yes","minReadySeconds":1.5,"revisionHistoryLimit":3000000000,"selector":{"matchLabels":{"app":1}},"strategy":{"rollingUpdate":{"maxSurge":true,"maxUnavailable":1.5}}}}`,
			[]string{
				`spec.minReadySeconds: expected an integer, got number 1.5`,
				`spec.paused: expected a boolean, got string "yes"`,
				`spec.replicas: expected an integer, got string "two"`,
				`spec.revisionHistoryLimit: expected an integer, got integer 3000000000`,
				`spec.selector.matchLabels[app]: expected a string, got integer 1`,
				`spec.strategy.rollingUpdate.maxSurge: expected an integer or a string, got boolean true`,
				`spec.strategy.rollingUpdate.maxUnavailable: expected an integer or a string, got number 1.5`,
			}},
		{"objects, lists and null in the wrong places", &corev1.Pod{},
			`{"metadata":[1],"spec":{"containers":{"name":"a"},"volumes":[null,"v",{"name":"v"}],"nodeSelector":["a"],"tolerations":[{"key":"k"}],"imagePullSecrets":"x"}}`,
			[]string{
				`metadata: expected an object, got a list`,
				`spec.containers: expected a list, got an object`,
				`spec.imagePullSecrets: expected a list, got string "x"`,
				`spec.nodeSelector: expected an object, got a list`,
				`spec.volumes[0]: expected an object, got null`,
				`spec.volumes[1]: expected an object, got string "v"`,
			}},
		{"scalars in lists", &corev1.Pod{},
			`{"spec":{"containers":[{"name":"a","args":["x",null,1,true,{},[]]}]}}`,
			[]string{
				`spec.containers[0].args[1]: expected a string, got null`,
				`spec.containers[0].args[2]: expected a string, got integer 1`,
				`spec.containers[0].args[3]: expected a string, got boolean true`,
				`spec.containers[0].args[4]: expected a string, got an object`,
				`spec.containers[0].args[5]: expected a string, got a list`,
			}},
		{"numbers: integers written as floats, big ones, quantities", &corev1.Pod{},
			`{"metadata":{"generation":1e3,"deletionGracePeriodSeconds":-0},"spec":{"activeDeadlineSeconds":1.0,"priority":-2147483649,"containers":[{"name":"a","resources":{"limits":{"cpu":0.5,"memory":1e9,"pods":10,"x":-1,"y":"1Gi","z":true,"n":null},"requests":{"cpu":12345678901234567890}}}]}}`,
			[]string{
				`spec.containers[0].resources.limits[z]: expected a quantity (a string such as "500m" or a number), got boolean true`,
				`spec.priority: expected an integer, got integer -2147483649`,
			}},
		{"timestamps, bytes and fieldsV1", &corev1.ConfigMap{},
			`{"metadata":{"creationTimestamp":"yesterday","deletionTimestamp":5,"managedFields":[{"time":"2024-05-01T12:00:00.5+02:00","fieldsV1":"{}"},{"fieldsV1":[]},{"fieldsV1":{"f:a":{" ":1.50}}}]},"binaryData":{"a":"!!","b":"AAH+/w==","c":5}}`,
			[]string{
				`binaryData[a]: expected base64 data: illegal base64 data at input byte 0`,
				`binaryData[c]: expected base64 data, got integer 5`,
				`metadata.creationTimestamp: expected an RFC 3339 time (2006-01-02T15:04:05Z), got "yesterday"`,
				`metadata.deletionTimestamp: expected an RFC 3339 time, got integer 5`,
				`metadata.managedFields[0].fieldsV1: expected an object, got string "{}"`,
				`metadata.managedFields[1].fieldsV1: expected an object, got a list`,
			}},
		{"a map of timestamps", &policyv1.PodDisruptionBudget{},
			`{"status":{"disruptedPods":{"a":"2024-05-01T12:00:00Z","b":1,"c":null}}}`,
			[]string{`status.disruptedPods[b]: expected an RFC 3339 time, got integer 1`}},
		{"fields Kubernetes has but Skiff does not", &corev1.Pod{},
			`{"metadata":{"selfLink":"/x"},"spec":{"os":{"name":"linux"},"hostUsers":false,"resourceClaims":[],"overhead":{},"hostnameOverride":"","containers":[{"name":"a","resizePolicy":[{"resourceName":"cpu"}]}]},"status":{"hostIPs":[{"ip":"1.2.3.4"}],"resize":null}}`,
			[]string{
				`metadata.selfLink: ` + notSupported,
				`spec.containers[0].resizePolicy: ` + notSupported,
				`spec.hostUsers: ` + notSupported,
				`spec.os: ` + notSupported,
				`status.hostIPs: ` + notSupported,
			}},
		{"unknown fields", &corev1.Pod{},
			`{"spec":{"flavour":"vanilla","containers":[{"name":"a","imagePullPolicyy":"Always","x":{"deep":[1,{"a":null}]}}]},"Kind":"Pod"}`,
			[]string{
				`Kind: unknown field`,
				`spec.containers[0].imagePullPolicyy: unknown field`,
				`spec.containers[0].x: unknown field`,
				`spec.flavour: unknown field`,
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			treeErrs, _ := decodeBoth(t, []byte(tc.doc), tc.msg)
			if diff := cmp.Diff(tc.want, treeErrs); diff != "" {
				t.Errorf("Decode's errors (-want +got):\n%s", diff)
			}
		})
	}
}
