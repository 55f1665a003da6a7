package agent

import (
	"time"

	corev1 "skiff.dev/proto/core/v1"
)

// podNetworkProblem is why the pod network the agent manages is not ready,
// or "" (also when it manages none).
func (a *Agent) podNetworkProblem() string {
	if a.net == nil {
		return ""
	}
	if p := a.net.Problem(); p != "" {
		return "pod network not ready: " + p
	}
	return ""
}

// nodeReady is the node's Ready condition: the runtime's (readyCondition),
// and the pod network's when the agent manages it.
func (a *Agent) nodeReady(runtimeReady *corev1.NodeCondition) *corev1.NodeCondition {
	return withPodNetwork(runtimeReady, a.podNetworkProblem())
}

// withPodNetwork is ready made False with reason NetworkNotReady while the
// pod network has a problem, the runtime's own complaint (if any) after it.
func withPodNetwork(ready *corev1.NodeCondition, problem string) *corev1.NodeCondition {
	if problem == "" {
		return ready
	}
	msg := problem
	if ready.GetStatus() != "True" && ready.GetMessage() != "" {
		msg += "; " + ready.GetMessage()
	}
	return &corev1.NodeCondition{Type: "Ready", Status: "False", Reason: "NetworkNotReady", Message: msg}
}

// podNetworkReady runs when the agent's pod network becomes ready: the
// node's status is checked at once, and again a second later in case the
// runtime had not yet read the new CNI configuration (containerd watches
// the directory), rather than at the next NodeStatusUpdatePeriod.
func (a *Agent) podNetworkReady() {
	a.kickStatus()
	time.AfterFunc(time.Second, a.kickStatus)
}

func (a *Agent) kickStatus() {
	select {
	case a.statusKick <- struct{}{}:
	default:
	}
}

// networkChecked follows the network's readiness (the runtime's and the
// agent's) at each node status check: when it becomes ready, the pods
// that waited for it are synced at once rather than after their backoff.
func (a *Agent) networkChecked() {
	ready := a.networkProblem() == ""
	a.mu.Lock()
	was := a.networkWasReady
	a.networkWasReady = ready
	a.mu.Unlock()
	if ready && !was {
		for _, p := range a.pods.Store().List() {
			a.ctrl.Enqueue(keyOf(p))
		}
	}
}
