package chaos

import (
	"fmt"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	appsv1 "skiff.dev/proto/apps/v1"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
)

func pod(name string, ready bool, opts ...func(*corev1.Pod)) *corev1.Pod {
	st := "False"
	if ready {
		st = "True"
	}
	p := &corev1.Pod{
		Metadata: &metav1.ObjectMeta{Name: name, Namespace: "chaos", Uid: "uid-" + name, Labels: map[string]string{"app": "web"}},
		Status:   &corev1.PodStatus{Phase: "Running", Conditions: []*corev1.PodCondition{{Type: "Ready", Status: st}}},
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

// pods returns n pods named p<from>, p<from+1>...
func pods(from, n int, ready bool, opts ...func(*corev1.Pod)) []*corev1.Pod {
	var out []*corev1.Pod
	for i := from; i < from+n; i++ {
		out = append(out, pod(fmt.Sprintf("p%d", i), ready, opts...))
	}
	return out
}

func inApp(app string) func(*corev1.Pod) {
	return func(p *corev1.Pod) { p.Metadata.Labels["app"] = app }
}
func terminating(p *corev1.Pod) { p.Metadata.DeletionTimestamp = timestamppb.Now() }
func twoControllers(p *corev1.Pod) {
	p.Metadata.OwnerReferences = []*metav1.OwnerReference{{Uid: "a", Controller: proto.Bool(true)}, {Uid: "b", Controller: proto.Bool(true)}}
}

func TestCheck(t *testing.T) {
	l := limits{app: "web", replicas: 10, maxSurge: 2, maxUnavailable: 3, readyFloor: true}
	for _, tc := range []struct {
		name string
		s    sample
		l    limits
		want []string // substrings, one per violation
	}{
		{"at the surge limit, at the ready floor", sample{pods: append(pods(0, 7, true), pods(7, 5, false)...)}, l, nil},
		{"terminating pods do not count", sample{pods: append(pods(0, 12, true), pod("zz", true, terminating))}, l, nil},
		{"one pod over the surge limit", sample{pods: pods(0, 13, true)}, l, []string{"13 pods of web, more than replicas + maxSurge = 12"}},
		{"below the ready floor", sample{pods: append(pods(0, 6, true), pod("zz", false))}, l, []string{"6 pods of web Ready, fewer than replicas - maxUnavailable = 7"}},
		{"below the floor while a node is away", sample{pods: pods(0, 10, false)}, limits{app: "web", replicas: 10, maxSurge: 2, maxUnavailable: 3}, nil},
		{"other apps are not counted", sample{pods: append(pods(0, 10, true), pods(10, 3, true, inApp("db"))...)}, l, nil},
		{"a duplicate name", sample{pods: append(pods(0, 10, true), pod("p0", true))}, l, []string{"2 pods named chaos/p0"}},
		{"two controllers", sample{pods: append(pods(0, 9, true), pod("zz", true, twoControllers))}, l, []string{"pod chaos/zz has 2 controller owners"}},
		{"a pod running on two nodes", sample{pods: pods(0, 10, true), running: map[string][]string{"uid-p0": {"n2", "n1"}, "uid-p1": {"n1"}}}, l, []string{"pod uid uid-p0 runs 2 times, on [n1 n2]"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := check(tc.s, tc.l)
			if len(got) != len(tc.want) {
				t.Fatalf("violations %q, want %q", got, tc.want)
			}
			for i := range got {
				if !strings.Contains(got[i], tc.want[i]) {
					t.Errorf("violation %q, want %q", got[i], tc.want[i])
				}
			}
		})
	}
}

func TestConverged(t *testing.T) {
	d := &appsv1.Deployment{
		Metadata: &metav1.ObjectMeta{Generation: 4},
		Spec:     &appsv1.DeploymentSpec{Replicas: proto.Int32(3)},
		Status:   &appsv1.DeploymentStatus{ObservedGeneration: 4, Replicas: 3, UpdatedReplicas: 3, ReadyReplicas: 3, AvailableReplicas: 3},
	}
	if ok, why := converged(d, pods(0, 3, true), "web"); !ok {
		t.Errorf("not converged: %s", why)
	}
	if ok, _ := converged(d, append(pods(0, 3, true), pod("zz", false)), "web"); ok {
		t.Error("converged with an extra pod not ready")
	}
	old := proto.Clone(d).(*appsv1.Deployment)
	old.Status.ObservedGeneration = 3
	if ok, _ := converged(old, pods(0, 3, true), "web"); ok {
		t.Error("converged before the generation was observed")
	}
	if ok, _ := converged(d, pods(0, 3, true, terminating), "web"); ok {
		t.Error("converged with every pod terminating")
	}
}
