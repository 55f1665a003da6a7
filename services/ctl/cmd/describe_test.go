package cmd

import (
	"context"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"skiff.dev/internal/client"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
)

func at(d time.Duration) *timestamppb.Timestamp { return timestamppb.New(epoch.Add(d)) }

// startPod writes what a node agent would for a pod that starts: status
// with conditions and container states, and the events of each step.
func startPod(t *testing.T, ns, name, node string) {
	t.Helper()
	ctx := context.Background()
	pods := client.Pods(shared.Conn)
	if _, err := corev1.NewPodsClient(shared.Conn).Bind(ctx, &corev1.Binding{
		Metadata: &metav1.ObjectMeta{Namespace: ns, Name: name}, Target: &corev1.ObjectReference{Name: node},
	}); err != nil {
		t.Fatal(err)
	}
	p, err := pods.Get(ctx, ns, name)
	if err != nil {
		t.Fatal(err)
	}
	p.Status = &corev1.PodStatus{
		Phase: "Running", HostIp: "192.168.1.10", PodIp: "10.0.0.7", PodIps: []*corev1.PodIP{{Ip: "10.0.0.7"}},
		StartTime: at(2 * time.Second), QosClass: "Burstable",
		Conditions: []*corev1.PodCondition{
			{Type: "PodReadyToStartContainers", Status: "True", LastTransitionTime: at(3 * time.Second)},
			{Type: "Initialized", Status: "True", LastTransitionTime: at(2 * time.Second)},
			{Type: "Ready", Status: "True", LastTransitionTime: at(9 * time.Second)},
			{Type: "ContainersReady", Status: "True", LastTransitionTime: at(9 * time.Second)},
			{Type: "PodScheduled", Status: "True", LastTransitionTime: at(time.Second)},
		},
	}
	for i, c := range p.GetSpec().GetContainers() {
		p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, &corev1.ContainerStatus{
			Name: c.GetName(), Image: c.GetImage(), ImageId: "sha256:0123", ContainerId: "containerd://abc" + c.GetName(),
			Ready: true, Started: new(bool),
			State: &corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: at(time.Duration(7+i) * time.Second)}},
		})
	}
	if _, err := pods.UpdateStatus(ctx, p); err != nil {
		t.Fatal(err)
	}
	events := client.Events(shared.Conn)
	for i, e := range []struct {
		reason, msg, from string
		after             time.Duration
	}{
		{"Scheduled", "Successfully assigned " + ns + "/" + name + " to " + node, "default-scheduler", time.Second},
		{"Pulled", "Successfully pulled image in 2.1s", "kubelet", 6 * time.Second},
		{"Started", "Started container", "kubelet", 7 * time.Second},
	} {
		_, err := events.Create(ctx, &corev1.Event{
			Metadata:       &metav1.ObjectMeta{Namespace: ns, Name: name + "." + string(rune('a'+i))},
			InvolvedObject: &corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: name, Uid: p.GetMetadata().GetUid(), ApiVersion: "v1"},
			Reason:         e.reason, Message: e.msg, Type: "Normal", Count: 1,
			Source:         &corev1.EventSource{Component: e.from},
			FirstTimestamp: at(e.after), LastTimestamp: at(e.after),
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

func TestDescribe(t *testing.T) {
	c := newCLI(t)
	c.ok("apply", "-f", manifestPath("docs"))
	startPod(t, c.ns, "frontend", "node-1")
	var b strings.Builder
	for _, args := range [][]string{
		{"describe", "pod", "frontend"},
		{"describe", "pods", "dapi"}, // a prefix
		{"describe", "deploy/web"},
		{"describe", "configmap", "special-config"},
	} {
		b.WriteString("$ skiffctl " + strings.Join(args, " ") + "\n" + scrub(c, c.ok(args...)) + "\n")
	}
	golden(t, "describe", b.String())
}
