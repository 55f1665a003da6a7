package manifest

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"skiff.dev/internal/kinds"
	appsv1 "skiff.dev/proto/apps/v1"
	coordinationv1 "skiff.dev/proto/coordination/v1"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
)

// exampleObjects are the example manifest of every kind
// (tests/conformance/testdata), decoded by Decode.
func exampleObjects(t testing.TB) map[string]proto.Message {
	t.Helper()
	out := map[string]proto.Message{}
	for _, k := range kinds.All() {
		name := k.Version + "." + k.Kind.Kind + ".yaml"
		if k.Group != "" {
			name = k.Group + "." + name
		}
		path := filepath.Join("..", "..", "tests", "conformance", "testdata", name)
		src, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%s: %v", k.GVK(), err)
		}
		docs, err := Read(path, bytes.NewReader(src))
		if err != nil || len(docs) != 1 {
			t.Fatalf("%s: %d documents, %v", path, len(docs), err)
		}
		obj := k.New()
		if err := Decode(docs[0].Object, obj, DecodeOptions{}); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		out[k.GVK()] = obj
	}
	if len(out) < 30 {
		t.Fatalf("%d example manifests", len(out))
	}
	return out
}

// viaEncode is msg as Encode's tree through encoding/json.
func viaEncode(t testing.TB, msg proto.Message) []byte {
	t.Helper()
	b, err := json.Marshal(Encode(msg))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// sameJSON fails unless a and b are the same JSON value.
func sameJSON(t testing.TB, what string, want, got []byte) {
	t.Helper()
	var w, g any
	if err := json.Unmarshal(want, &w); err != nil {
		t.Fatalf("%s: want: %v", what, err)
	}
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("%s: AppendJSON wrote invalid JSON: %v\n%s", what, err, got)
	}
	if reflect.DeepEqual(w, g) { // cmp is slow on big trees
		return
	}
	if diff := cmp.Diff(w, g); diff != "" {
		t.Errorf("%s: AppendJSON differs from Encode (-Encode +AppendJSON):\n%s", what, diff)
	}
}

// AppendJSON writes what Encode and encoding/json write, for the example
// of every kind and for random objects that set every field of every
// kind (and of its list type) with every special type.
func TestAppendJSONIsEncode(t *testing.T) {
	for gvk, obj := range exampleObjects(t) {
		sameJSON(t, gvk, viaEncode(t, obj), AppendJSON(nil, obj))
	}
	r := rand.New(rand.NewPCG(1, 2))
	for _, k := range kinds.All() {
		for i := 0; i < 8; i++ {
			for _, msg := range []proto.Message{k.New(), k.NewList()} {
				obj := randomObject(r, msg, 0.5+0.05*float64(i))
				sameJSON(t, k.GVK(), viaEncode(t, obj), AppendJSON(nil, obj))
			}
		}
	}
}

func TestAppendJSONShape(t *testing.T) {
	micro := mustTime("2024-05-01T12:00:00.123456789Z")
	cases := []struct {
		name string
		msg  proto.Message
		want string
	}{
		{"nothing", &corev1.ConfigMap{}, `{}`},
		{"nil", nil, `{}`},
		{"fields in declaration order, map keys sorted, HTML escaped as encoding/json",
			&corev1.ConfigMap{ApiVersion: "v1", Kind: "ConfigMap", Metadata: &metav1.ObjectMeta{Name: "a"},
				Data: map[string]string{"b": "<x & y>", "a": "line\n\u2028", "c": "bad\xff"}, BinaryData: map[string][]byte{"bin": {0, 1, 254, 255}}, Immutable: proto.Bool(false)},
			`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"},"data":{"a":"line\n\u2028","b":"\u003cx \u0026 y\u003e","c":"bad\ufffd"},"binaryData":{"bin":"AAH+/w=="},"immutable":false}`},
		{"int-or-string, an empty object kept, zero values that Kubernetes prints",
			&appsv1.Deployment{Spec: &appsv1.DeploymentSpec{Strategy: &appsv1.DeploymentStrategy{RollingUpdate: &appsv1.RollingUpdateDeployment{
				MaxSurge: &metav1.IntOrString{Value: &metav1.IntOrString_StrVal{StrVal: "25%"}}, MaxUnavailable: &metav1.IntOrString{Value: &metav1.IntOrString_IntVal{IntVal: 0}}}},
				Template: &corev1.PodTemplateSpec{Spec: &corev1.PodSpec{Volumes: []*corev1.Volume{{Name: "c", EmptyDir: &corev1.EmptyDirVolumeSource{}}}}},
				Selector: &metav1.LabelSelector{}}},
			`{"spec":{"selector":{},"template":{"spec":{"volumes":[{"name":"c","emptyDir":{}}]}},"strategy":{"rollingUpdate":{"maxUnavailable":0,"maxSurge":"25%"}}}}`},
		{"an int-or-string that holds nothing is left out",
			&appsv1.Deployment{Spec: &appsv1.DeploymentSpec{Strategy: &appsv1.DeploymentStrategy{RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: &metav1.IntOrString{}}}}},
			`{"spec":{"strategy":{"rollingUpdate":{}}}}`},
		{"times: whole seconds, microseconds for MicroTime",
			&coordinationv1.Lease{Metadata: &metav1.ObjectMeta{CreationTimestamp: tsOf(micro)}, Spec: &coordinationv1.LeaseSpec{RenewTime: tsOf(micro)}},
			`{"metadata":{"creationTimestamp":"2024-05-01T12:00:00Z"},"spec":{"renewTime":"2024-05-01T12:00:00.123456Z"}}`},
		{"fieldsV1 is the object its bytes hold, compact",
			&corev1.ConfigMap{Metadata: &metav1.ObjectMeta{ManagedFields: []*metav1.ManagedFieldsEntry{
				{Manager: "a", FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(` {"f:data": {".": {}, "f:k\u003c": {}}} `)}},
				{Manager: "b", FieldsV1: &metav1.FieldsV1{}},
				{Manager: "c", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:a":`)}},
			}}},
			`{"metadata":{"managedFields":[{"manager":"a","fieldsType":"FieldsV1","fieldsV1":{"f:data":{".":{},"f:k\u003c":{}}}},{"manager":"b","fieldsV1":{}},{"manager":"c"}]}}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := string(AppendJSON(nil, tc.msg))
			if got != tc.want {
				t.Errorf("AppendJSON:\n%s\nwant:\n%s", got, tc.want)
			}
			if got := string(MarshalJSON(tc.msg)); got != tc.want {
				t.Errorf("MarshalJSON:\n%s", got)
			}
			if tc.msg != nil {
				sameJSON(t, tc.name, viaEncode(t, tc.msg), []byte(got))
			}
		})
	}
	// Appending keeps what b held.
	if got := string(AppendJSON([]byte("x"), &corev1.ConfigMap{Kind: "ConfigMap"})); got != `x{"kind":"ConfigMap"}` {
		t.Errorf("AppendJSON to a buffer: %s", got)
	}
}

// The same object gives the same bytes, map order notwithstanding.
func TestAppendJSONIsDeterministic(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < 50; i++ {
		obj := randomObject(r, &corev1.Pod{}, 0.6)
		first := AppendJSON(nil, obj)
		for j := 0; j < 5; j++ {
			if again := AppendJSON(nil, proto.Clone(obj)); !bytes.Equal(first, again) {
				t.Fatalf("two encodings differ:\n%s\n%s", first, again)
			}
		}
	}
}

func mustTime(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		panic(err)
	}
	return t
}

func tsOf(t time.Time) *timestamppb.Timestamp { return timestamppb.New(t) }
