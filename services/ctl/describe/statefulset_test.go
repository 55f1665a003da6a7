package describe

import (
	"bytes"
	"strings"
	"testing"
	"text/tabwriter"
	"time"

	"google.golang.org/protobuf/proto"

	appsv1 "skiff.dev/proto/apps/v1"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
)

func TestDescribeStatefulSet(t *testing.T) {
	ss := &appsv1.StatefulSet{
		Metadata: &metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: &appsv1.StatefulSetSpec{
			Replicas: proto.Int32(3),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "nginx"}},
			Template: &corev1.PodTemplateSpec{
				Metadata: &metav1.ObjectMeta{Labels: map[string]string{"app": "nginx"}},
				Spec:     &corev1.PodSpec{Containers: []*corev1.Container{{Name: "nginx", Image: "nginx:1.27"}}},
			},
			UpdateStrategy: &appsv1.StatefulSetUpdateStrategy{Type: "RollingUpdate", RollingUpdate: &appsv1.RollingUpdateStatefulSetStrategy{
				Partition: proto.Int32(2), MaxUnavailable: &metav1.IntOrString{Value: &metav1.IntOrString_StrVal{StrVal: "50%"}}}},
			VolumeClaimTemplates: []*corev1.PersistentVolumeClaim{{
				Metadata: &metav1.ObjectMeta{Name: "www"},
				Spec: &corev1.PersistentVolumeClaimSpec{
					AccessModes:      []string{"ReadWriteOnce"},
					StorageClassName: proto.String("local-path"),
					Resources:        &corev1.VolumeResourceRequirements{Requests: map[string]string{"storage": "1Gi"}},
				},
			}},
		},
		Status: &appsv1.StatefulSetStatus{Replicas: 3},
	}
	pods := []*corev1.Pod{
		{Status: &corev1.PodStatus{Phase: "Running"}},
		{Status: &corev1.PodStatus{Phase: "Running"}},
		{Status: &corev1.PodStatus{Phase: "Pending"}},
	}
	var buf bytes.Buffer
	tw := tabwriter.NewWriter(&buf, 0, 8, 2, ' ', 0)
	p := &out{w: tw, now: time.Now()}
	p.statefulSet(ss, Related{Pods: pods})
	tw.Flush()
	got := buf.String()
	for _, want := range []string{
		"Name:               web",
		"Selector:           app=nginx",
		"Replicas:           3 desired | 3 total",
		"Update Strategy:    RollingUpdate",
		"  Partition:        2",
		"  MaxUnavailable:   50%",
		"Pods Status:        2 Running / 1 Waiting / 0 Succeeded / 0 Failed",
		"Pod Template:",
		"Volume Claims:",
		"  Name:          www",
		"  StorageClass:  local-path",
		"  Capacity:      1Gi",
		"  Access Modes:  [ReadWriteOnce]",
	} {
		if !strings.Contains(got, want+"\n") {
			t.Errorf("missing %q in:\n%s", want, got)
		}
	}
}
