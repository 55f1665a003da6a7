package printers

import (
	"fmt"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	corev1 "skiff.dev/proto/core/v1"
)

// TestPodStatusWithSidecars: kubectl's READY, STATUS and RESTARTS for pods
// with sidecars (init containers with restartPolicy Always): a started
// sidecar counts as a container, and its restarts count once the pod is
// initialized.
func TestPodStatusWithSidecars(t *testing.T) {
	sidecarPod := func(fn func(p *corev1.Pod)) *corev1.Pod {
		p := pod("p", time.Minute, nil)
		p.Spec.InitContainers = []*corev1.Container{{Name: "proxy", RestartPolicy: proto.String("Always")}, {Name: "migrate"}}
		fn(p)
		return p
	}
	started := func(cs *corev1.ContainerStatus) *corev1.ContainerStatus {
		cs.Started = proto.Bool(true)
		return cs
	}
	completed := &corev1.ContainerStatus{Name: "migrate", State: &corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed"}}}
	initialized := []*corev1.PodCondition{{Type: "Initialized", Status: "True"}, {Type: "Ready", Status: "True"}}
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
		want string // ready/total reason restarts
	}{
		{"the sidecar started, the next init container runs", sidecarPod(func(p *corev1.Pod) {
			p.Status.InitContainerStatuses = []*corev1.ContainerStatus{started(running("proxy", true, 0)),
				{Name: "migrate", State: &corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}
		}), "1/2 Init:1/2 0"},
		{"all running", sidecarPod(func(p *corev1.Pod) {
			p.Status = &corev1.PodStatus{Phase: "Running", Conditions: initialized,
				InitContainerStatuses: []*corev1.ContainerStatus{started(running("proxy", true, 0)), completed},
				ContainerStatuses:     []*corev1.ContainerStatus{running("web", true, 0)}}
		}), "2/2 Running 0"},
		{"a sidecar restarted after initialization: its restarts count", sidecarPod(func(p *corev1.Pod) {
			p.Status = &corev1.PodStatus{Phase: "Running", Conditions: initialized,
				InitContainerStatuses: []*corev1.ContainerStatus{started(running("proxy", true, 2)), completed},
				ContainerStatuses:     []*corev1.ContainerStatus{running("web", true, 1)}}
		}), "2/2 Running 3"},
		{"a sidecar crashing after initialization", sidecarPod(func(p *corev1.Pod) {
			p.Status = &corev1.PodStatus{Phase: "Running", Conditions: initialized,
				InitContainerStatuses: []*corev1.ContainerStatus{{Name: "proxy", RestartCount: 4, Started: proto.Bool(false),
					State:     &corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}},
					LastState: &corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, FinishedAt: ago(time.Minute)}}}, completed},
				ContainerStatuses: []*corev1.ContainerStatus{running("web", true, 0)}}
		}), "1/2 Init:CrashLoopBackOff 4"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reason, ready, total, restarts, _ := PodStatus(tc.pod)
			if got := fmt.Sprintf("%d/%d %s %d", ready, total, reason, restarts); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}
