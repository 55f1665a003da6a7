package describe

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
)

// TestDescribePodRuntimeClassAndReadinessGates: kubectl describe's
// "Runtime Class Name" and "Readiness Gates" (each gate's condition status,
// <none> while it has none), before the Conditions.
func TestDescribePodRuntimeClassAndReadinessGates(t *testing.T) {
	pod := &corev1.Pod{
		Metadata: &metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: &corev1.PodSpec{RuntimeClassName: proto.String("gvisor"), Containers: []*corev1.Container{{Name: "app", Image: "nginx"}},
			ReadinessGates: []*corev1.PodReadinessGate{{ConditionType: "example.com/lb"}, {ConditionType: "example.com/dns"}}},
		Status: &corev1.PodStatus{Phase: "Running", Conditions: []*corev1.PodCondition{
			{Type: "Ready", Status: "False"}, {Type: "example.com/lb", Status: "True"}}},
	}
	var b bytes.Buffer
	if err := Describe(&b, pod, Related{}, time.Now()); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"Runtime Class Name: gvisor\n", "Readiness Gates:\n  Type Status\n  example.com/lb True \n  example.com/dns <none> \nConditions:\n"} {
		if !containsSpaced(out, want) {
			t.Errorf("missing %q in:\n%s", want, out)
		}
	}
	if strings.Index(out, "Runtime Class Name") > strings.Index(out, "Service Account") {
		t.Errorf("Runtime Class Name after Service Account:\n%s", out)
	}
}
