package nodelifecycle

import (
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
)

// tol builds a toleration; seconds < 0 means no tolerationSeconds.
func tol(key, op, value, effect string, seconds int64) *corev1.Toleration {
	t := &corev1.Toleration{Key: key, Operator: op, Value: value, Effect: effect}
	if seconds >= 0 {
		t.TolerationSeconds = proto.Int64(seconds)
	}
	return t
}

const forever = -1

func TestTolerates(t *testing.T) {
	gpu := &corev1.Taint{Key: "gpu", Value: "a100", Effect: "NoExecute"}
	tests := []struct {
		name string
		tol  *corev1.Toleration
		want bool
	}{
		{"same key, value and effect", tol("gpu", "Equal", "a100", "NoExecute", forever), true},
		{"operator defaults to Equal", tol("gpu", "", "a100", "NoExecute", forever), true},
		{"other value", tol("gpu", "Equal", "t4", "NoExecute", forever), false},
		{"Exists ignores the value", tol("gpu", "Exists", "", "NoExecute", forever), true},
		{"empty effect matches every effect", tol("gpu", "Exists", "", "", forever), true},
		{"other effect", tol("gpu", "Exists", "", "NoSchedule", forever), false},
		{"other key", tol("disk", "Exists", "", "NoExecute", forever), false},
		{"empty key with Exists matches every key", tol("", "Exists", "", "", forever), true},
		{"empty key with Equal matches nothing", tol("", "Equal", "a100", "NoExecute", forever), false},
		{"unknown operator", tol("gpu", "Lt", "a100", "NoExecute", forever), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Tolerates(tc.tol, gpu); got != tc.want {
				t.Errorf("Tolerates = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestEvictionTime(t *testing.T) {
	now := at(100)
	const def = 300
	unreachable := []*corev1.Taint{taint(unreachNS), taint(unreachNE + "@90")}
	tests := []struct {
		name   string
		tols   []*corev1.Toleration
		taints []*corev1.Taint
		seen   int // when the pod was first seen on the node (at(seen)): by default before every taint
		evict  bool
		at     time.Time
	}{
		{name: "no taints: never", taints: nil},
		{name: "NoSchedule taints do not evict", taints: taints(unreachNS, "dedicated:NoSchedule")},
		{
			name: "no toleration: the default, from timeAdded", taints: unreachable,
			evict: true, at: at(90 + def),
		},
		{
			name: "own toleration with seconds", taints: unreachable,
			tols:  []*corev1.Toleration{tol(TaintNodeUnreachable, "Exists", "", "NoExecute", 5)},
			evict: true, at: at(95),
		},
		{
			name: "toleration already run out: a time in the past", taints: unreachable,
			tols:  []*corev1.Toleration{tol(TaintNodeUnreachable, "Exists", "", "NoExecute", 2)},
			evict: true, at: at(92),
		},
		{
			name: "tolerationSeconds 0 or negative: at timeAdded", taints: unreachable,
			tols:  []*corev1.Toleration{tol(TaintNodeUnreachable, "Exists", "", "NoExecute", 0)},
			evict: true, at: at(90),
		},
		{
			name: "toleration without seconds: for ever", taints: unreachable,
			tols: []*corev1.Toleration{tol(TaintNodeUnreachable, "Exists", "", "NoExecute", forever)},
		},
		{
			name: "tolerate-everything toleration: for ever", taints: unreachable,
			tols: []*corev1.Toleration{tol("", "Exists", "", "", forever)},
		},
		{
			name: "the first matching toleration decides", taints: unreachable,
			tols: []*corev1.Toleration{
				tol(TaintNodeUnreachable, "Exists", "", "NoExecute", 10),
				tol(TaintNodeUnreachable, "Exists", "", "NoExecute", forever),
			},
			evict: true, at: at(100),
		},
		{
			name: "a toleration for another taint leaves the default", taints: unreachable,
			tols:  []*corev1.Toleration{tol(TaintNodeNotReady, "Exists", "", "NoExecute", forever)},
			evict: true, at: at(90 + def),
		},
		{
			name: "not-ready gets the default too", taints: taints(notRdyNE + "@50"),
			evict: true, at: at(50 + def),
		},
		{
			name: "another NoExecute taint not tolerated: at once", taints: append(taints("gpu:NoExecute@99"), unreachable...),
			tols:  []*corev1.Toleration{tol(TaintNodeUnreachable, "Exists", "", "NoExecute", forever)},
			evict: true, at: now,
		},
		{
			name:   "the earliest of several taints",
			taints: taints(unreachNE+"@90", "gpu:NoExecute@80"),
			tols: []*corev1.Toleration{
				tol(TaintNodeUnreachable, "Exists", "", "NoExecute", 60),
				tol("gpu", "Exists", "", "NoExecute", 30),
			},
			evict: true, at: at(110),
		},
		{
			name: "a taint without timeAdded counts from when the pod was seen", taints: taints(unreachNE), seen: 90,
			tols:  []*corev1.Toleration{tol(TaintNodeUnreachable, "Exists", "", "NoExecute", 5)},
			evict: true, at: at(95),
		},
		{
			name: "a pod seen after the taint was added: its toleration counts from when it was seen", taints: unreachable, seen: 100,
			tols:  []*corev1.Toleration{tol(TaintNodeUnreachable, "Exists", "", "NoExecute", 300)},
			evict: true, at: at(400),
		},
		{
			name: "a pod seen after the taint, without toleration: the default from when it was seen", taints: unreachable, seen: 100,
			evict: true, at: at(100 + def),
		},
		{
			name: "a pod seen before the taint was added: from the taint's timeAdded", taints: taints(unreachNE + "@95"), seen: 50,
			tols:  []*corev1.Toleration{tol(TaintNodeUnreachable, "Exists", "", "NoExecute", 10)},
			evict: true, at: at(105),
		},
		{
			name: "a pod seen after the taint, tolerating 0 s: at once", taints: unreachable, seen: 100,
			tols:  []*corev1.Toleration{tol(TaintNodeUnreachable, "Exists", "", "NoExecute", 0)},
			evict: true, at: now,
		},
		{
			name: "a pod seen after the taint, not tolerating it: at once", taints: taints("gpu:NoExecute@10"), seen: 100,
			evict: true, at: now,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			gotAt, evict := EvictionTime(tc.tols, tc.taints, at(tc.seen), now, def)
			if evict != tc.evict || (evict && !gotAt.Equal(tc.at)) {
				t.Errorf("EvictionTime = %v, %v; want %v, %v", gotAt, evict, tc.at, tc.evict)
			}
		})
	}
}

func pod(tols []*corev1.Toleration, deleting *int) *corev1.Pod {
	p := &corev1.Pod{
		Metadata: &metav1.ObjectMeta{Namespace: "ns", Name: "p", Uid: "u1"},
		Spec:     &corev1.PodSpec{NodeName: "n1", Tolerations: tols},
	}
	if deleting != nil {
		p.Metadata.DeletionTimestamp = ts(*deleting)
	}
	return p
}

func TestDecidePod(t *testing.T) {
	now := at(100)
	deadlinePassed, deadlineAhead := 99, 130
	unreachable := taints(unreachNS, unreachNE+"@90")
	tests := []struct {
		name      string
		pod       *corev1.Pod
		taints    []*corev1.Taint
		seen      int // when the pod was first seen on the node (at(seen)): by default before every taint
		agentGone bool
		want      PodDecision
	}{
		{name: "untainted node: keep", pod: pod(nil, nil), want: PodDecision{Action: Keep}},
		{
			name: "default toleration running: keep, look again when it ends",
			pod:  pod(nil, nil), taints: taints(unreachNS, unreachNE+"@97"), agentGone: true,
			want: PodDecision{Action: Keep, RecheckAt: at(102)},
		},
		{
			name: "default toleration over: evict",
			pod:  pod(nil, nil), taints: taints(unreachNE + "@95"), agentGone: true,
			want: PodDecision{Action: Evict},
		},
		{
			name: "taint older than the toleration, pod seen after it: keep until its own toleration ends",
			pod:  pod(nil, nil), taints: taints(unreachNE + "@0"), seen: 98, agentGone: true,
			want: PodDecision{Action: Keep, RecheckAt: at(103)},
		},
		{
			name: "due exactly now: evict",
			pod:  pod(nil, nil), taints: taints(unreachNE + "@90"), agentGone: true,
			want: PodDecision{Action: Evict},
		},
		{
			name: "tolerates for ever: keep, nothing to look at",
			pod:  pod([]*corev1.Toleration{tol(TaintNodeUnreachable, "Exists", "", "NoExecute", forever)}, nil), taints: unreachable, agentGone: true,
			want: PodDecision{Action: Keep},
		},
		{
			name: "terminating on an unreachable node, deadline passed: force delete",
			pod:  pod(nil, &deadlinePassed), taints: unreachable, agentGone: true,
			want: PodDecision{Action: ForceDelete},
		},
		{
			name: "terminating on an unreachable node, deadline ahead: keep until the deadline",
			pod:  pod(nil, &deadlineAhead), taints: unreachable, agentGone: true,
			want: PodDecision{Action: Keep, RecheckAt: at(130)},
		},
		{
			name: "terminating on a not-ready node whose agent is alive: the agent finishes it",
			pod:  pod(nil, &deadlinePassed), taints: taints(notRdyNE + "@0"), agentGone: false,
			want: PodDecision{Action: Keep},
		},
		{
			name: "terminating pods are not evicted again",
			pod:  pod(nil, &deadlineAhead), taints: taints("gpu:NoExecute@0"), agentGone: false,
			want: PodDecision{Action: Keep},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// The pure function's default of 5 s keeps the times readable.
			if got := DecidePod(tc.pod, at(tc.seen), tc.taints, tc.agentGone, now, 5); got != tc.want {
				t.Errorf("DecidePod = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestPodNotReady(t *testing.T) {
	withReady := func(status string) *corev1.Pod {
		p := pod(nil, nil)
		p.Status = &corev1.PodStatus{Conditions: []*corev1.PodCondition{
			{Type: "PodScheduled", Status: "True"},
			{Type: "Ready", Status: status, LastTransitionTime: ts(0)},
		}}
		return p
	}
	tests := []struct {
		name string
		pod  *corev1.Pod
		want bool // a change
	}{
		{"Ready=True becomes False", withReady("True"), true},
		{"already False", withReady("False"), false},
		{"no Ready condition: left to the agent", pod(nil, nil), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := PodNotReady(tc.pod, at(100))
			if (got != nil) != tc.want {
				t.Fatalf("PodNotReady = %v, want a change: %v", got, tc.want)
			}
			if got == nil {
				return
			}
			c := got.GetStatus().GetConditions()[1]
			if c.GetStatus() != "False" || c.GetReason() != ReasonNodeNotReady || !c.GetLastTransitionTime().AsTime().Equal(at(100)) {
				t.Errorf("Ready condition = %v", c)
			}
			if tc.pod.GetStatus().GetConditions()[1].GetStatus() != "True" {
				t.Error("PodNotReady changed its argument")
			}
		})
	}
}
