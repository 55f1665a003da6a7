package nodelifecycle

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
)

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// at is epoch plus s seconds.
func at(s int) time.Time { return epoch.Add(time.Duration(s) * time.Second) }

func ts(s int) *timestamppb.Timestamp { return timestamppb.New(at(s)) }

// cond builds a node condition from "Type=Status".
func cond(s string) *corev1.NodeCondition {
	typ, status, _ := strings.Cut(s, "=")
	return &corev1.NodeCondition{Type: typ, Status: status, Reason: "Agent", LastTransitionTime: ts(-100)}
}

// taint builds a taint from "key:Effect" or "key:Effect@seconds" (timeAdded).
func taint(s string) *corev1.Taint {
	s, added, timed := strings.Cut(s, "@")
	key, effect, _ := strings.Cut(s, ":")
	t := &corev1.Taint{Key: key, Effect: effect}
	if timed {
		var sec int
		fmt.Sscan(added, &sec)
		t.TimeAdded = ts(sec)
	}
	return t
}

func taints(ss ...string) []*corev1.Taint {
	out := make([]*corev1.Taint, len(ss))
	for i, s := range ss {
		out[i] = taint(s)
	}
	return out
}

func node(conds []string, ts ...string) *corev1.Node {
	n := &corev1.Node{
		Metadata: &metav1.ObjectMeta{Name: "n1", CreationTimestamp: timestamppb.New(at(-1000))},
		Spec:     &corev1.NodeSpec{Taints: taints(ts...)},
		Status:   &corev1.NodeStatus{},
	}
	for _, c := range conds {
		n.Status.Conditions = append(n.Status.Conditions, cond(c))
	}
	return n
}

// showTaints renders taints as "key:Effect" or "key:Effect@seconds".
func showTaints(tt []*corev1.Taint) []string {
	out := []string{}
	for _, t := range tt {
		s := t.GetKey() + ":" + t.GetEffect()
		if t.GetTimeAdded() != nil {
			s += fmt.Sprintf("@%d", int(t.GetTimeAdded().AsTime().Sub(epoch)/time.Second))
		}
		out = append(out, s)
	}
	return out
}

// showConds renders conditions as "Type=Status/Reason", or nil for nil.
func showConds(cc []*corev1.NodeCondition) []string {
	if cc == nil {
		return nil
	}
	out := []string{}
	for _, c := range cc {
		out = append(out, c.GetType()+"="+c.GetStatus()+"/"+c.GetReason())
	}
	return out
}

const (
	unreachNS = TaintNodeUnreachable + ":NoSchedule"
	unreachNE = TaintNodeUnreachable + ":NoExecute"
	notRdyNS  = TaintNodeNotReady + ":NoSchedule"
	notRdyNE  = TaintNodeNotReady + ":NoExecute"
)

func TestAssess(t *testing.T) {
	const grace = 40 * time.Second
	now := at(0)
	tests := []struct {
		name      string
		node      *corev1.Node
		heartbeat time.Time
		state     State
		conds     []string // nil: status left alone
		taints    []string
		changed   bool
		staleIn   time.Duration
	}{
		{
			name: "fresh heartbeat, Ready: nothing to do, look again when it goes stale",
			node: node([]string{"Ready=True"}), heartbeat: at(-10),
			state: StateReady, taints: []string{}, staleIn: 30 * time.Second,
		},
		{
			name: "heartbeat one nanosecond short of the grace period is still fresh",
			node: node([]string{"Ready=True"}), heartbeat: now.Add(-grace + time.Nanosecond),
			state: StateReady, taints: []string{}, staleIn: time.Nanosecond,
		},
		{
			name: "heartbeat exactly the grace period old: unreachable, Ready Unknown, tainted",
			node: node([]string{"Ready=True"}), heartbeat: now.Add(-grace),
			state: StateUnreachable, conds: []string{"Ready=Unknown/NodeStatusUnknown"},
			taints: []string{unreachNS, unreachNE + "@0"}, changed: true,
		},
		{
			name:      "unreachable node keeps other taints and its conditions' order; pressure conditions become Unknown",
			node:      node([]string{"MemoryPressure=False", "Ready=True", "NetworkUnavailable=False", "PIDPressure=False"}, "dedicated:NoSchedule"),
			heartbeat: at(-60),
			state:     StateUnreachable,
			conds:     []string{"MemoryPressure=Unknown/NodeStatusUnknown", "Ready=Unknown/NodeStatusUnknown", "NetworkUnavailable=False/Agent", "PIDPressure=Unknown/NodeStatusUnknown"},
			taints:    []string{"dedicated:NoSchedule", unreachNS, unreachNE + "@0"}, changed: true,
		},
		{
			name: "already marked: no writes, the taint keeps its timeAdded",
			node: node([]string{"Ready=Unknown"}, unreachNS, unreachNE+"@-20"), heartbeat: at(-60),
			state: StateUnreachable, taints: []string{unreachNS, unreachNE + "@-20"},
		},
		{
			name: "never posted status: Ready Unknown, never updated",
			node: node(nil), heartbeat: at(-60),
			state: StateUnreachable, conds: []string{"Ready=Unknown/NodeStatusNeverUpdated"},
			taints: []string{unreachNS, unreachNE + "@0"}, changed: true,
		},
		{
			name: "unreachable taint without timeAdded gets one",
			node: node([]string{"Ready=Unknown"}, unreachNS, unreachNE), heartbeat: at(-60),
			state: StateUnreachable, taints: []string{unreachNS, unreachNE + "@0"}, changed: true,
		},
		{
			name: "the agent posts Ready=False: not-ready taints",
			node: node([]string{"Ready=False"}), heartbeat: at(-1),
			state: StateNotReady, taints: []string{notRdyNS, notRdyNE + "@0"}, changed: true, staleIn: 39 * time.Second,
		},
		{
			name: "unreachable node back with Ready=False: the taints swap",
			node: node([]string{"Ready=False"}, unreachNS, unreachNE+"@-30"), heartbeat: at(-1),
			state: StateNotReady, taints: []string{notRdyNS, notRdyNE + "@0"}, changed: true, staleIn: 39 * time.Second,
		},
		{
			name: "heartbeat back, Ready still our Unknown: taints go, the condition is the agent's",
			node: node([]string{"Ready=Unknown"}, "dedicated:NoSchedule", unreachNS, unreachNE+"@-30"), heartbeat: at(0),
			state: StateReady, taints: []string{"dedicated:NoSchedule"}, changed: true, staleIn: grace,
		},
		{
			name: "not-ready node stopped heartbeating: unreachable wins",
			node: node([]string{"Ready=False"}, notRdyNS, notRdyNE+"@-30"), heartbeat: at(-41),
			state: StateUnreachable, conds: []string{"Ready=Unknown/NodeStatusUnknown"},
			taints: []string{unreachNS, unreachNE + "@0"}, changed: true,
		},
		{
			name:      "taints of ours with other effects are not ours; duplicates of ours go",
			node:      node([]string{"Ready=True"}, TaintNodeUnreachable+":PreferNoSchedule", unreachNE+"@-5", unreachNE+"@-3"),
			heartbeat: at(-50),
			state:     StateUnreachable, conds: []string{"Ready=Unknown/NodeStatusUnknown"},
			taints: []string{TaintNodeUnreachable + ":PreferNoSchedule", unreachNE + "@-5", unreachNS}, changed: true,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := showTaints(tc.node.GetSpec().GetTaints())
			a := Assess(tc.node, tc.heartbeat, now, grace)
			if a.State != tc.state {
				t.Errorf("state = %v, want %v", a.State, tc.state)
			}
			if got := showConds(a.Conditions); !slices.Equal(got, tc.conds) || (got == nil) != (tc.conds == nil) {
				t.Errorf("conditions = %q, want %q", got, tc.conds)
			}
			if got := showTaints(a.Taints); !slices.Equal(got, tc.taints) {
				t.Errorf("taints = %q, want %q", got, tc.taints)
			}
			if a.TaintsChanged != tc.changed {
				t.Errorf("taints changed = %v, want %v", a.TaintsChanged, tc.changed)
			}
			if a.StaleIn != tc.staleIn {
				t.Errorf("stale in = %v, want %v", a.StaleIn, tc.staleIn)
			}
			if after := showTaints(tc.node.GetSpec().GetTaints()); !slices.Equal(before, after) {
				t.Errorf("Assess changed the node's taints: %q -> %q", before, after)
			}
		})
	}
}

func TestAssessConditionDetails(t *testing.T) {
	n := node([]string{"Ready=True"})
	n.Status.Conditions[0].LastHeartbeatTime = ts(-50)
	a := Assess(n, at(-50), at(0), 40*time.Second)
	c := readyCondition(a.Conditions)
	if c.GetMessage() != "Kubelet stopped posting node status." || !c.GetLastTransitionTime().AsTime().Equal(at(0)) ||
		!c.GetLastHeartbeatTime().AsTime().Equal(at(-50)) {
		t.Errorf("Ready condition = %v", c)
	}
	if readyCondition(n.Status.Conditions).GetStatus() != "True" {
		t.Error("Assess changed the node's conditions")
	}

	never := Assess(node(nil), at(-50), at(0), 40*time.Second)
	c = readyCondition(never.Conditions)
	if c.GetMessage() != "Kubelet never posted node status." || !c.GetLastHeartbeatTime().AsTime().Equal(at(-1000)) {
		t.Errorf("Ready condition of a node that never posted = %v", c)
	}
}
