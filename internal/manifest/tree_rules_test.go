package manifest

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"

	appsv1 "skiff.dev/proto/apps/v1"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
)

// managedFieldsYAML is a ConfigMap's metadata as kubectl get -o yaml
// prints it from Kubernetes: fieldsV1 is an object, not a string.
const managedFieldsYAML = `metadata:
  managedFields:
  - apiVersion: v1
    fieldsType: FieldsV1
    fieldsV1:
      f:data:
        .: {}
        f:a: {}
      f:metadata:
        f:labels:
          f:app: {}
    manager: kubectl-client-side-apply
    operation: Update
    time: "2024-05-01T12:00:00Z"
  name: web
`

func TestManagedFieldsAreObjects(t *testing.T) {
	want := &corev1.ConfigMap{Metadata: &metav1.ObjectMeta{Name: "web", ManagedFields: []*metav1.ManagedFieldsEntry{{
		Manager:    "kubectl-client-side-apply",
		Operation:  "Update",
		ApiVersion: "v1",
		Time:       ts("2024-05-01T12:00:00Z"),
		FieldsType: "FieldsV1",
		FieldsV1:   &metav1.FieldsV1{Raw: []byte(`{"f:data":{".":{},"f:a":{}},"f:metadata":{"f:labels":{"f:app":{}}}}`)},
	}}}}
	got := &corev1.ConfigMap{}
	if err := Decode(parse(t, managedFieldsYAML), got, DecodeOptions{}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got, protocmp.Transform()); diff != "" {
		t.Errorf("decoded (-want +got):\n%s", diff)
	}
	if out := string(YAML(Encode(got))); out != managedFieldsYAML {
		t.Errorf("printed:\n%s\nwant:\n%s", out, managedFieldsYAML)
	}

	for _, tc := range []struct {
		name string
		raw  string
		want any // the tree Encode makes of it; nil: left out
	}{
		{"nothing is an empty object", "", map[string]any{}},
		{"JSON with spaces", ` {"f:a" : {}} `, map[string]any{"f:a": map[string]any{}}},
		{"not JSON", `{"f:a":`, nil},
		{"two values", `{} {}`, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cm := &corev1.ConfigMap{Metadata: &metav1.ObjectMeta{ManagedFields: []*metav1.ManagedFieldsEntry{{FieldsV1: &metav1.FieldsV1{Raw: []byte(tc.raw)}}}}}
			entry := Encode(cm)["metadata"].(map[string]any)["managedFields"].([]any)[0].(map[string]any)
			got, ok := entry["fieldsV1"]
			if tc.want == nil {
				if ok {
					t.Errorf("fieldsV1 %v, want it left out", got)
				}
				return
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("fieldsV1 (-want +got):\n%s", diff)
			}
		})
	}

	bad := "metadata:\n  managedFields:\n  - fieldsV1: \"{}\"\n"
	if got := errorStrings(t, Decode(parse(t, bad), &corev1.ConfigMap{}, DecodeOptions{})); !cmp.Equal(got, []string{`metadata.managedFields[0].fieldsV1: expected an object, got string "{}"`}) {
		t.Errorf("fieldsV1 as a string: %q", got)
	}
}

// kubectl create --dry-run=client -o yaml prints fields it did not set
// as null or {} (creationTimestamp: null, resources: {}, status: {}); a
// field Kubernetes has but Skiff does not is accepted and dropped when it
// is so empty (null, {}, [], ""), and refused, lenient or not, with a
// value, 0 and false included.
func TestEmptyFieldsSkiffLacksAreDropped(t *testing.T) {
	const dryRun = `apiVersion: apps/v1
kind: Deployment
metadata:
  creationTimestamp: null
  labels:
    app: web
  name: web
spec:
  replicas: 1
  selector:
    matchLabels:
      app: web
  strategy: {}
  template:
    metadata:
      creationTimestamp: null
      labels:
        app: web
    spec:
      containers:
      - image: nginx
        name: nginx
        resources: {}
status: {}
`
	for _, o := range []DecodeOptions{{}, {AllowUnknown: true}} {
		if err := Decode(parse(t, dryRun), &appsv1.Deployment{}, o); err != nil {
			t.Errorf("AllowUnknown %v: %v", o.AllowUnknown, err)
		}
	}
	const refused = ": field is not supported by Skiff (see docs/fields.md)"
	for _, tc := range []struct {
		field string // a field of a pod's spec that Skiff lacks
		empty bool
	}{
		{"os: null", true},
		{"os: {}", true},
		{"resourceClaims: []", true},
		{`hostnameOverride: ""`, true},
		{"overhead: {}", true},
		{"os: {name: linux}", false},
		{"hostUsers: true", false},
		{"hostUsers: false", false}, // a user namespace, on purpose
		{"setHostnameAsFQDN: false", false},
		{"resourceClaims: [{name: a}]", false},
	} {
		for _, o := range []DecodeOptions{{}, {AllowUnknown: true}} {
			pod := &corev1.Pod{}
			src := "spec: {containers: [{name: a, image: nginx}], " + tc.field + "}"
			got := errorStrings(t, Decode(parse(t, src), pod, o))
			var want []string
			if !tc.empty {
				want = []string{"spec." + strings.SplitN(tc.field, ":", 2)[0] + refused}
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("%s (AllowUnknown %v): errors (-want +got):\n%s", tc.field, o.AllowUnknown, diff)
			}
			if tc.empty && !proto.Equal(pod, &corev1.Pod{Spec: &corev1.PodSpec{Containers: []*corev1.Container{{Name: "a", Image: "nginx"}}}}) {
				t.Errorf("%s: decoded %v", tc.field, pod)
			}
		}
	}
}

// Every error says what kind of problem it is, and how Kubernetes' strict
// field validation words it.
func TestErrorTypes(t *testing.T) {
	err := Decode(parse(t, "spec: {replicas: two, flavour: vanilla, template: {spec: {os: {name: linux}}}}"), &appsv1.Deployment{}, DecodeOptions{})
	errs, ok := err.(Errors)
	if !ok {
		t.Fatalf("error %v (%T), want Errors", err, err)
	}
	type row struct {
		Path       string
		Type       ErrorType
		Kubernetes string
	}
	var got []row
	for _, e := range errs {
		got = append(got, row{e.Path, e.Type, e.Kubernetes()})
	}
	want := []row{
		{"spec.flavour", ErrorUnknown, `unknown field "spec.flavour"`},
		{"spec.replicas", ErrorInvalid, `spec.replicas: expected an integer, got string "two"`},
		{"spec.template.spec.os", ErrorNotSupported, "spec.template.spec.os" + ": " + notSupported},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("errors (-want +got):\n%s", diff)
	}
}
