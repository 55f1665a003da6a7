package manifest

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"

	appsv1 "skiff.dev/proto/apps/v1"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
)

// Kubernetes' field validation of unknown and duplicate fields: Strict
// refuses them, Warn drops them with a warning each, Ignore drops them;
// the last of duplicates counts. Kubernetes words them
// `unknown field "spec.foo"` and `duplicate field "metadata.name"`.
func TestFieldValidation(t *testing.T) {
	cases := []struct {
		name   string
		msg    proto.Message
		doc    string
		texts  []string      // Kubernetes' words, in the document's order
		paths  []string      // the errors' paths (Strict)
		want   proto.Message // what Warn and Ignore decode
		strict []ErrorType
	}{
		{
			name:  "unknown fields, at any depth, with a list index",
			msg:   &corev1.Pod{},
			doc:   `{"spec":{"foo":1,"containers":[{"name":"a"},{"name":"b","bar":{"x":[1]}}]},"extra":null}`,
			texts: []string{`unknown field "spec.foo"`, `unknown field "spec.containers[1].bar"`, `unknown field "extra"`},
			paths: []string{"spec.foo", "spec.containers[1].bar", "extra"},
			want:  &corev1.Pod{Spec: &corev1.PodSpec{Containers: []*corev1.Container{{Name: "a"}, {Name: "b"}}}},
		},
		{
			name:  "a duplicate field: the last counts",
			msg:   &corev1.ConfigMap{},
			doc:   `{"metadata":{"name":"a","name":"b"},"data":{"k":"v"}}`,
			texts: []string{`duplicate field "metadata.name"`},
			paths: []string{"metadata.name"},
			want:  &corev1.ConfigMap{Metadata: &metav1.ObjectMeta{Name: "b"}, Data: map[string]string{"k": "v"}},
		},
		{
			name:  "a duplicate object replaces the first whole, as Decode's tree does",
			msg:   &appsv1.Deployment{},
			doc:   `{"spec":{"replicas":3,"paused":true},"spec":{"minReadySeconds":5},"metadata":{"labels":{"a":"1"},"labels":{"b":"2"}}}`,
			texts: []string{`duplicate field "spec"`, `duplicate field "metadata.labels"`},
			paths: []string{"spec", "metadata.labels"},
			want:  &appsv1.Deployment{Metadata: &metav1.ObjectMeta{Labels: map[string]string{"b": "2"}}, Spec: &appsv1.DeploymentSpec{MinReadySeconds: 5}},
		},
		{
			name:  "a duplicate map key, and one whose last value is null",
			msg:   &corev1.ConfigMap{},
			doc:   `{"metadata":{"labels":{"app":"a","app":"b","gone":"x","gone":null,"kept":null,"kept":"y"}}}`,
			texts: []string{`duplicate field "metadata.labels.app"`, `duplicate field "metadata.labels.gone"`, `duplicate field "metadata.labels.kept"`},
			paths: []string{"metadata.labels[app]", "metadata.labels[gone]", "metadata.labels[kept]"},
			want:  &corev1.ConfigMap{Metadata: &metav1.ObjectMeta{Labels: map[string]string{"app": "b", "kept": "y"}}},
		},
		{
			name:  "a duplicate list: the last counts",
			msg:   &corev1.Pod{},
			doc:   `{"spec":{"containers":[{"name":"a"},{"name":"b"}],"containers":[{"name":"c"}]}}`,
			texts: []string{`duplicate field "spec.containers"`},
			paths: []string{"spec.containers"},
			want:  &corev1.Pod{Spec: &corev1.PodSpec{Containers: []*corev1.Container{{Name: "c"}}}},
		},
		{
			name:  "a repeated unknown field is reported once",
			msg:   &corev1.ConfigMap{},
			doc:   `{"foo":1,"foo":2}`,
			texts: []string{`unknown field "foo"`},
			paths: []string{"foo"},
			want:  &corev1.ConfigMap{},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, mode := range []FieldValidation{FieldValidationStrict, FieldValidationWarn, "", FieldValidationIgnore} {
				got := proto.Clone(tc.msg)
				warnings, err := UnmarshalJSON([]byte(tc.doc), got, JSONOptions{FieldValidation: mode})
				switch mode {
				case FieldValidationStrict:
					var errs Errors
					if !errors.As(err, &errs) {
						t.Fatalf("Strict: error %v (%T), want Errors", err, err)
					}
					var texts, paths []string
					for _, e := range errs {
						if e.Type != ErrorUnknown && e.Type != ErrorDuplicate {
							t.Errorf("Strict: error %v of type %d", e, e.Type)
						}
						texts = append(texts, e.Kubernetes())
						paths = append(paths, e.Path)
					}
					if diff := cmp.Diff(tc.texts, texts); diff != "" {
						t.Errorf("Strict: errors (-want +got):\n%s", diff)
					}
					if diff := cmp.Diff(tc.paths, paths); diff != "" {
						t.Errorf("Strict: paths (-want +got):\n%s", diff)
					}
					if len(warnings) > 0 {
						t.Errorf("Strict: warnings %q", warnings)
					}
					continue
				case FieldValidationIgnore:
					if err != nil || len(warnings) > 0 {
						t.Errorf("Ignore: %v, warnings %q", err, warnings)
					}
				default:
					if err != nil {
						t.Errorf("Warn: %v", err)
					}
					if diff := cmp.Diff(tc.texts, warnings); diff != "" {
						t.Errorf("Warn %q: warnings (-want +got):\n%s", mode, diff)
					}
				}
				if diff := cmp.Diff(tc.want, got, protocmp.Transform()); diff != "" {
					t.Errorf("%q: decoded (-want +got):\n%s", mode, diff)
				}
			}
		})
	}
}

// A field Kubernetes has but Skiff does not is refused in every mode when
// it has a value, and dropped silently in every mode when it is empty.
func TestFieldsSkiffLacksInEveryMode(t *testing.T) {
	for _, tc := range []struct {
		field   string
		refused bool
	}{
		{`"os":null`, false},
		{`"os":{}`, false},
		{`"os": { }`, false},
		{`"resourceClaims":[]`, false},
		{`"resourceClaims":[ ]`, false},
		{`"hostnameOverride":""`, false},
		{`"os":{"name":"linux"}`, true},
		{`"resourceClaims":[{}]`, true},
		{`"hostnameOverride":"x"`, true},
		{`"hostUsers":false`, true},
		{`"hostUsers":true`, true},
		{`"hostUsers":0`, true},
	} {
		for _, mode := range []FieldValidation{FieldValidationStrict, FieldValidationWarn, FieldValidationIgnore} {
			doc := `{"spec":{` + tc.field + `,"containers":[{"name":"a"}]}}`
			pod := &corev1.Pod{}
			warnings, err := UnmarshalJSON([]byte(doc), pod, JSONOptions{FieldValidation: mode})
			if len(warnings) > 0 {
				t.Errorf("%s, %s: warnings %q", tc.field, mode, warnings)
			}
			if !tc.refused {
				if err != nil {
					t.Errorf("%s, %s: %v", tc.field, mode, err)
				}
				if want := (&corev1.Pod{Spec: &corev1.PodSpec{Containers: []*corev1.Container{{Name: "a"}}}}); !proto.Equal(pod, want) {
					t.Errorf("%s, %s: decoded %v", tc.field, mode, pod)
				}
				continue
			}
			var errs Errors
			if !errors.As(err, &errs) || len(errs) != 1 || errs[0].Type != ErrorNotSupported ||
				errs[0].Error() != "spec."+strings.Split(strings.Trim(tc.field, `"`), `"`)[0]+": "+notSupported {
				t.Errorf("%s, %s: error %v, want it refused as not supported", tc.field, mode, err)
			}
		}
	}
}

// null for any field is the field unset: a message, a list, a map, a
// scalar, a special one.
func TestNullIsUnset(t *testing.T) {
	doc := `{"apiVersion":null,"metadata":null,"spec":{"replicas":null,"selector":null,"template":{"metadata":{"labels":null,"creationTimestamp":null},"spec":{"containers":null,"affinity":null,"nodeSelector":null,"activeDeadlineSeconds":null}},"strategy":{"rollingUpdate":{"maxSurge":null}}},"status":null}`
	got := &appsv1.Deployment{}
	if _, err := UnmarshalJSON([]byte(doc), got, JSONOptions{FieldValidation: FieldValidationStrict}); err != nil {
		t.Fatal(err)
	}
	want := &appsv1.Deployment{Spec: &appsv1.DeploymentSpec{
		Template: &corev1.PodTemplateSpec{Metadata: &metav1.ObjectMeta{}, Spec: &corev1.PodSpec{}},
		Strategy: &appsv1.DeploymentStrategy{RollingUpdate: &appsv1.RollingUpdateDeployment{}},
	}}
	if diff := cmp.Diff(want, got, protocmp.Transform()); diff != "" {
		t.Errorf("decoded (-want +got):\n%s", diff)
	}
	decodeBoth(t, []byte(doc), &appsv1.Deployment{})
}

// What client-go and kubectl send: creationTimestamp null, empty
// resources, strategy and status, managedFields with fieldsV1 objects.
func TestClientBodies(t *testing.T) {
	for _, tc := range []struct {
		name string
		msg  proto.Message
		body string
	}{
		{"client-go creates a ConfigMap", &corev1.ConfigMap{},
			`{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"cm-1","namespace":"default","creationTimestamp":null},"data":{"payload":"xxxx"}}`},
		{"kubectl create deployment", &appsv1.Deployment{},
			`{"kind":"Deployment","apiVersion":"apps/v1","metadata":{"name":"web","creationTimestamp":null,"labels":{"app":"web"}},"spec":{"replicas":1,"selector":{"matchLabels":{"app":"web"}},"template":{"metadata":{"creationTimestamp":null,"labels":{"app":"web"}},"spec":{"containers":[{"name":"nginx","image":"nginx","resources":{}}]}},"strategy":{}},"status":{}}`},
		{"kubectl replace of what it got", &corev1.ConfigMap{},
			`{"apiVersion":"v1","data":{"a":"1"},"kind":"ConfigMap","metadata":{"creationTimestamp":"2024-05-01T12:00:00Z","managedFields":[{"apiVersion":"v1","fieldsType":"FieldsV1","fieldsV1":{"f:data":{".":{},"f:a":{}}},"manager":"kubectl-create","operation":"Update","time":"2024-05-01T12:00:00Z"}],"name":"a","namespace":"default","resourceVersion":"5","uid":"0d3f"}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := proto.Clone(tc.msg)
			warnings, err := UnmarshalJSON([]byte(tc.body), got, JSONOptions{FieldValidation: FieldValidationStrict})
			if err != nil || len(warnings) > 0 {
				t.Fatalf("%v, warnings %q", err, warnings)
			}
			decodeBoth(t, []byte(tc.body), tc.msg)
		})
	}
	cm := &corev1.ConfigMap{}
	body := `{"metadata":{"managedFields":[{"fieldsV1":{ "f:data" : { ".":{}, "f:a":{} } }}]}}`
	if _, err := UnmarshalJSON([]byte(body), cm, JSONOptions{}); err != nil {
		t.Fatal(err)
	}
	if raw := string(cm.GetMetadata().GetManagedFields()[0].GetFieldsV1().GetRaw()); raw != `{"f:data":{".":{},"f:a":{}}}` {
		t.Errorf("fieldsV1 raw %s, want the object compact", raw)
	}
}
