package printers

import (
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"skiff.dev/internal/object"
	batchv1 "skiff.dev/proto/batch/v1"
	corev1 "skiff.dev/proto/core/v1"
	discoveryv1 "skiff.dev/proto/discovery/v1"
	metav1 "skiff.dev/proto/meta/v1"
)

// TestCellsAsKubernetesPrintsThem: cells where kube-apiserver's printer
// (k8s.io/kubernetes pkg/printers/internalversion) decides otherwise than
// a first guess would; kubectl get against Kubernetes prints these.
func TestCellsAsKubernetesPrintsThem(t *testing.T) {
	meta := func(name string) *metav1.ObjectMeta {
		return &metav1.ObjectMeta{Name: name, CreationTimestamp: ago(time.Hour)}
	}
	node := func(ready string) *corev1.Node {
		n := &corev1.Node{Metadata: meta("n"), Status: &corev1.NodeStatus{NodeInfo: &corev1.NodeSystemInfo{}}}
		if ready != "" {
			n.Status.Conditions = []*corev1.NodeCondition{{Type: "Ready", Status: ready}}
		}
		return n
	}
	cronJob := func(suspend *bool) *batchv1.CronJob {
		return &batchv1.CronJob{Metadata: meta("cj"), Spec: &batchv1.CronJobSpec{Schedule: "@hourly", Suspend: suspend}}
	}
	deleted := func(phase string) *corev1.Pod {
		p := pod("p", time.Hour, nil)
		p.Metadata.DeletionTimestamp = ago(0)
		p.Status = &corev1.PodStatus{Phase: phase}
		return p
	}
	gated := pod("p", time.Hour, nil)
	gated.Status.Conditions = []*corev1.PodCondition{{Type: "PodScheduled", Status: "False", Reason: "SchedulingGated"}}
	slice := func(ports ...*discoveryv1.EndpointPort) *discoveryv1.EndpointSlice {
		return &discoveryv1.EndpointSlice{Metadata: meta("s"), AddressType: "IPv4", Ports: ports}
	}
	event := &corev1.Event{Metadata: meta("e"), InvolvedObject: &corev1.ObjectReference{Kind: "Node"}, Type: "Normal", Reason: "Starting",
		FirstTimestamp: ago(3 * time.Minute), EventTime: ago(2 * time.Minute)}
	pv := &corev1.PersistentVolume{Metadata: meta("pv"), Spec: &corev1.PersistentVolumeSpec{}, Status: &corev1.PersistentVolumeStatus{Phase: "Bound"}}
	pv.Metadata.DeletionTimestamp = ago(0)

	for _, tc := range []struct {
		name   string
		obj    object.Object
		column string
		want   string
	}{
		{"a node whose Ready condition is Unknown is NotReady", node("Unknown"), "STATUS", "NotReady"},
		{"a node whose Ready condition is False is NotReady", node("False"), "STATUS", "NotReady"},
		{"a node without a Ready condition is Unknown", node(""), "STATUS", "Unknown"},
		{"a node's VERSION is empty until its kubelet reports one", node("True"), "VERSION", ""},
		{"a suspended cron job", cronJob(proto.Bool(true)), "SUSPEND", "True"},
		{"a cron job not suspended", cronJob(proto.Bool(false)), "SUSPEND", "False"},
		{"a cron job whose suspend is unset", cronJob(nil), "SUSPEND", "<unset>"},
		{"a deleted pod that still runs is Terminating", deleted("Running"), "STATUS", "Terminating"},
		{"a deleted pod that failed stays Failed", deleted("Failed"), "STATUS", "Failed"},
		{"a deleted pod that succeeded stays Succeeded", deleted("Succeeded"), "STATUS", "Succeeded"},
		{"a pod held by scheduling gates", gated, "STATUS", "SchedulingGated"},
		{"a slice port without a number shows its name", slice(&discoveryv1.EndpointPort{Name: proto.String("http")}), "PORTS", "http"},
		{"a slice port without a number or a name", slice(&discoveryv1.EndpointPort{}), "PORTS", "*"},
		{"a slice's ports past three", slice(&discoveryv1.EndpointPort{Port: proto.Int32(1)}, &discoveryv1.EndpointPort{Port: proto.Int32(2)},
			&discoveryv1.EndpointPort{Port: proto.Int32(3)}, &discoveryv1.EndpointPort{Port: proto.Int32(4)}), "PORTS", "1,2,3 + 1 more..."},
		{"an event about a kind, not a named object", event, "OBJECT", "node"},
		{"an event without lastTimestamp was last seen at its firstTimestamp", event, "LAST SEEN", "3m"},
		{"a deleted persistent volume is Terminating", pv, "STATUS", "Terminating"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := Options{Wide: true, Now: now}
			header, row := Header(tc.obj, o), Row(tc.obj, o)
			for i, h := range header {
				if h == tc.column {
					if row[i] != tc.want {
						t.Errorf("%s %q, want %q (row %s)", tc.column, row[i], tc.want, strings.Join(row, " | "))
					}
					return
				}
			}
			t.Fatalf("no column %s in %v", tc.column, header)
		})
	}
}
