package agent

import (
	"fmt"
	"strings"

	corev1 "skiff.dev/proto/core/v1"
)

// readinessGatesNotReady is the Ready condition's reason when the
// containers are ready but a readiness gate is not.
const readinessGatesNotReady = "ReadinessGatesNotReady"

// withReadinessGates is the pod's Ready condition given its readiness
// gates, as the kubelet's GeneratePodReadyCondition: ready (computed from
// the containers alone) unless it is True and some gate's condition, in
// conditions (the pod's, written by whoever owns the gate), is missing or
// not True; then False, with a message naming each such gate.
func withReadinessGates(ready *corev1.PodCondition, gates []*corev1.PodReadinessGate, conditions []*corev1.PodCondition) *corev1.PodCondition {
	if ready.GetStatus() != "True" || len(gates) == 0 {
		return ready
	}
	var unready []string
	for _, g := range gates {
		typ := g.GetConditionType()
		var c *corev1.PodCondition
		for _, x := range conditions {
			if x.GetType() == typ {
				c = x
				break
			}
		}
		switch {
		case c == nil:
			unready = append(unready, fmt.Sprintf("corresponding condition of pod readiness gate %q does not exist.", typ))
		case c.GetStatus() != "True":
			unready = append(unready, fmt.Sprintf("the status of pod readiness gate %q is not \"True\", but %s", typ, c.GetStatus()))
		}
	}
	if len(unready) == 0 {
		return ready
	}
	return &corev1.PodCondition{Type: ready.GetType(), Status: "False", Reason: readinessGatesNotReady, Message: strings.Join(unready, ", ")}
}
