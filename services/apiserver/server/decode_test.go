package server

import (
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"skiff.dev/internal/apierrors"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
)

// unknown gives m the fields nums, which its type does not have.
func unknown[M proto.Message](m M, nums ...protowire.Number) M {
	var b []byte
	for _, n := range nums {
		b = protowire.AppendTag(b, n, protowire.VarintType)
		b = protowire.AppendVarint(b, 1)
	}
	m.ProtoReflect().SetUnknown(b)
	return m
}

func TestStrictFields(t *testing.T) {
	many := make([]protowire.Number, 12)
	for i := range many {
		many[i] = protowire.Number(100 + i)
	}
	for _, tc := range []struct {
		name string
		msg  any
		want string // "": accepted
	}{
		{"known fields only", &corev1.Pod{Metadata: &metav1.ObjectMeta{Name: "web", Labels: map[string]string{"a": "b"}}, Spec: &corev1.PodSpec{Containers: []*corev1.Container{{Name: "web"}}}}, ""},
		{"not a message", "text", ""},
		{"the object's own", unknown(&corev1.ConfigMap{}, 99), "strict decoding error: unknown field number 99 in skiff.core.v1.ConfigMap"},
		{"metadata's", &corev1.ConfigMap{Metadata: unknown(&metav1.ObjectMeta{Name: "a"}, 42)}, "strict decoding error: unknown field number 42 in skiff.meta.v1.ObjectMeta (at metadata)"},
		{"a list element's", &corev1.Pod{Spec: &corev1.PodSpec{Containers: []*corev1.Container{{Name: "a"}, unknown(&corev1.Container{Name: "b"}, 7)}}},
			"strict decoding error: unknown field number 7 in skiff.core.v1.Container (at spec.containers[1])"},
		{"deeper", &corev1.Pod{Spec: &corev1.PodSpec{Containers: []*corev1.Container{{Name: "a", Resources: unknown(&corev1.ResourceRequirements{}, 9)}}}},
			"strict decoding error: unknown field number 9 in skiff.core.v1.ResourceRequirements (at spec.containers[0].resources)"},
		{"a map value's", &structpb.Struct{Fields: map[string]*structpb.Value{"k": unknown(structpb.NewBoolValue(true), 5)}},
			"strict decoding error: unknown field number 5 in google.protobuf.Value (at fields[k])"},
		{"several, in order", unknown(&corev1.ConfigMap{Metadata: unknown(&metav1.ObjectMeta{}, 8)}, 98, 99),
			"strict decoding error: unknown field number 98 in skiff.core.v1.ConfigMap, unknown field number 99 in skiff.core.v1.ConfigMap, unknown field number 8 in skiff.meta.v1.ObjectMeta (at metadata)"},
		{"too many to list", unknown(&corev1.ConfigMap{}, many...), "unknown field number 109 in skiff.core.v1.ConfigMap and 2 more"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := strictFields(tc.msg)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want == "":
			case err == nil:
				t.Fatalf("accepted, want %q", tc.want)
			case !apierrors.IsBadRequest(err):
				t.Errorf("want a BadRequest, got %v", err)
			case !strings.Contains(err.Error(), tc.want):
				t.Errorf("error %q, want it to contain %q", err, tc.want)
			}
		})
	}
}

// The check of a request without unknown fields reads it in place: no
// allocation but protoreflect's view of each list of messages it visits.
func TestStrictFieldsAllocationsWhenClean(t *testing.T) {
	for _, tc := range []struct {
		name string
		msg  proto.Message
		max  float64
	}{
		{"a config map", &corev1.ConfigMap{Metadata: &metav1.ObjectMeta{Name: "web", Labels: map[string]string{"app": "web"}}, Data: map[string]string{"a": "b"}}, 0},
		{"a pod with four lists of messages", &corev1.Pod{
			Metadata: &metav1.ObjectMeta{Name: "web", Labels: map[string]string{"app": "web"}, OwnerReferences: []*metav1.OwnerReference{{Name: "rs"}}},
			Spec: &corev1.PodSpec{Containers: []*corev1.Container{
				{Name: "web", Image: "nginx", Ports: []*corev1.ContainerPort{{ContainerPort: 80}}, Resources: &corev1.ResourceRequirements{Limits: map[string]string{"cpu": "1"}}},
				{Name: "side", Image: "busybox"},
			}},
			Status: &corev1.PodStatus{Conditions: []*corev1.PodCondition{{Type: "Ready"}}},
		}, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if n := testing.AllocsPerRun(100, func() {
				if err := strictFields(tc.msg); err != nil {
					t.Fatal(err)
				}
			}); n > tc.max {
				t.Errorf("%v allocations, want at most %v", n, tc.max)
			}
		})
	}
}
