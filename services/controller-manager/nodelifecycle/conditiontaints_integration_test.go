package nodelifecycle_test

import (
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"skiff.dev/internal/client"
	corev1 "skiff.dev/proto/core/v1"
	"skiff.dev/services/controller-manager/manager/managertest"
	"skiff.dev/services/controller-manager/nodelifecycle"
)

// setMemoryPressure posts Ready=True and MemoryPressure=status, as the
// node agent's eviction manager does.
func setMemoryPressure(t *testing.T, env *managertest.Env, name, status string) {
	t.Helper()
	nodes := client.Nodes(env.Conn)
	err := client.RetryOnConflict(env.Ctx, client.DefaultRetry, func() error {
		n, err := nodes.Get(env.Ctx, "", name)
		if err != nil {
			return err
		}
		now := timestamppb.Now()
		n.Status = &corev1.NodeStatus{Conditions: []*corev1.NodeCondition{
			{Type: "MemoryPressure", Status: status, Reason: "AgentSays" + status, LastHeartbeatTime: now, LastTransitionTime: now},
			{Type: "Ready", Status: "True", Reason: "KubeletReady", LastHeartbeatTime: now, LastTransitionTime: now},
		}}
		_, err = nodes.UpdateStatus(env.Ctx, n)
		return err
	})
	if err != nil {
		t.Fatalf("node %s: post MemoryPressure=%s: %v", name, status, err)
	}
}

// TestMemoryPressureTaint: a node whose agent reports MemoryPressure=True
// gets node.kubernetes.io/memory-pressure:NoSchedule, and loses it when
// the pressure ends; its other taints stay.
func TestMemoryPressureTaint(t *testing.T) {
	env := start(t, nodelifecycle.Options{GracePeriod: 5 * time.Second})
	startAgent(t, env, "node-a")
	hasTaint := func(n *corev1.Node) bool {
		for _, t := range n.GetSpec().GetTaints() {
			if t.GetKey() == nodelifecycle.TaintNodeMemoryPressure && t.GetEffect() == "NoSchedule" {
				return true
			}
		}
		return false
	}
	setMemoryPressure(t, env, "node-a", "True")
	env.Await(patience, "node-a tainted memory-pressure", func() (bool, string) {
		n := getNode(env, "node-a")
		return hasTaint(n), managertest.Explain("taints %v", n.GetSpec().GetTaints())
	})
	setMemoryPressure(t, env, "node-a", "False")
	env.Await(patience, "node-a's memory-pressure taint removed", func() (bool, string) {
		n := getNode(env, "node-a")
		return !hasTaint(n) && len(n.GetSpec().GetTaints()) == 0, managertest.Explain("taints %v", n.GetSpec().GetTaints())
	})
}
