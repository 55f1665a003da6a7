package admission

import (
	"context"

	"google.golang.org/protobuf/proto"

	corev1 "skiff.dev/proto/core/v1"
)

// DefaultTolerationSecondsName is the plugin's flag name.
const DefaultTolerationSecondsName = "DefaultTolerationSeconds"

// The taints the node lifecycle controller puts on a node that stops
// reporting (services/controller-manager/nodelifecycle uses the same keys).
const (
	TaintNodeNotReady    = "node.kubernetes.io/not-ready"
	TaintNodeUnreachable = "node.kubernetes.io/unreachable"
)

// defaultTolerationSeconds gives every pod that does not tolerate them a
// NoExecute toleration of the not-ready and unreachable taints for a
// bounded time (300 s by default): a pod stays that long on a node that
// stopped answering before the node lifecycle controller evicts it.
type defaultTolerationSeconds struct {
	notReady, unreachable int64
}

func newDefaultTolerationSeconds(d *Deps) (any, error) {
	p := &defaultTolerationSeconds{notReady: d.Options.DefaultNotReadyTolerationSeconds, unreachable: d.Options.DefaultUnreachableTolerationSeconds}
	if p.notReady == 0 {
		p.notReady = DefaultTolerationSeconds
	}
	if p.unreachable == 0 {
		p.unreachable = DefaultTolerationSeconds
	}
	return p, nil
}

func (p *defaultTolerationSeconds) Admit(_ context.Context, a *Attributes) error {
	if (a.Operation != Create && a.Operation != Update) || !a.resourceIs("", "pods") {
		return nil
	}
	pod, ok := a.Object.(*corev1.Pod)
	if !ok {
		return nil
	}
	notReady, unreachable := false, false
	for _, t := range pod.GetSpec().GetTolerations() {
		anyEffect := t.GetEffect() == "" || t.GetEffect() == "NoExecute"
		if anyEffect && (t.GetKey() == TaintNodeNotReady || t.GetKey() == "") {
			notReady = true
		}
		if anyEffect && (t.GetKey() == TaintNodeUnreachable || t.GetKey() == "") {
			unreachable = true
		}
	}
	if notReady && unreachable {
		return nil
	}
	if pod.Spec == nil {
		pod.Spec = &corev1.PodSpec{}
	}
	if !notReady {
		pod.Spec.Tolerations = append(pod.Spec.Tolerations, &corev1.Toleration{
			Key: TaintNodeNotReady, Operator: "Exists", Effect: "NoExecute", TolerationSeconds: proto.Int64(p.notReady)})
	}
	if !unreachable {
		pod.Spec.Tolerations = append(pod.Spec.Tolerations, &corev1.Toleration{
			Key: TaintNodeUnreachable, Operator: "Exists", Effect: "NoExecute", TolerationSeconds: proto.Int64(p.unreachable)})
	}
	return nil
}
