package nodelifecycle_test

import (
	"context"
	"maps"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"skiff.dev/internal/client"
	"skiff.dev/internal/informer"
	coordinationv1 "skiff.dev/proto/coordination/v1"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/controller-manager/manager/managertest"
	"skiff.dev/services/controller-manager/nodelifecycle"
	"skiff.dev/services/controller-manager/simnode"
)

// patience bounds each wait; the slowest expected step (a toleration plus a
// grace period plus a deletion deadline) takes a few seconds.
const patience = 15 * time.Second

// renewEvery is how often a test's node agent renews its Lease.
const renewEvery = 100 * time.Millisecond

// agent plays a node agent's heartbeat: it renews the node's Lease every
// renewEvery while renewing is on, and counts its renewals.
type agent struct {
	env      *managertest.Env
	node     string
	renewing atomic.Bool
	renewals atomic.Int64
}

// startAgent creates the node (Ready=True, as its agent would post it) and
// its Lease, and renews the Lease until the test ends or stop is called.
func startAgent(t *testing.T, env *managertest.Env, name string) *agent {
	t.Helper()
	createNode(t, env, name)
	a := &agent{env: env, node: name}
	_, err := client.Leases(env.Conn).Create(env.Ctx, &coordinationv1.Lease{
		Metadata: &metav1.ObjectMeta{Namespace: nodelifecycle.NodeLeaseNamespace, Name: name},
		Spec: &coordinationv1.LeaseSpec{
			HolderIdentity:       name,
			LeaseDurationSeconds: proto.Int32(40),
			RenewTime:            timestamppb.Now(),
		},
	})
	if err != nil {
		t.Fatalf("create lease %s: %v", name, err)
	}
	a.renewing.Store(true)
	env.Go(a.run)
	return a
}

func (a *agent) stop()   { a.renewing.Store(false) }
func (a *agent) resume() { a.renewing.Store(true) }

func (a *agent) run(ctx context.Context) {
	leases := client.Leases(a.env.Conn)
	tick := time.NewTicker(renewEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if !a.renewing.Load() {
			continue
		}
		l, err := leases.Get(ctx, nodelifecycle.NodeLeaseNamespace, a.node)
		if err != nil {
			continue
		}
		l.Spec.RenewTime = timestamppb.Now()
		if _, err := leases.Update(ctx, l); err == nil {
			a.renewals.Add(1)
		}
	}
}

// createNode creates a node whose agent posted Ready=True.
func createNode(t *testing.T, env *managertest.Env, name string) {
	t.Helper()
	nodes := client.Nodes(env.Conn)
	n, err := nodes.Create(env.Ctx, &corev1.Node{Metadata: &metav1.ObjectMeta{Name: name}})
	if err != nil {
		t.Fatalf("create node %s: %v", name, err)
	}
	setNodeReady(t, env, n.GetMetadata().GetName(), "True")
}

// setNodeReady posts the node's Ready condition, as its agent does.
func setNodeReady(t *testing.T, env *managertest.Env, name, status string) {
	t.Helper()
	nodes := client.Nodes(env.Conn)
	err := client.RetryOnConflict(env.Ctx, client.DefaultRetry, func() error {
		n, err := nodes.Get(env.Ctx, "", name)
		if err != nil {
			return err
		}
		now := timestamppb.Now()
		n.Status = &corev1.NodeStatus{Conditions: []*corev1.NodeCondition{{
			Type: "Ready", Status: status, Reason: "AgentSays" + status, LastHeartbeatTime: now, LastTransitionTime: now,
		}}}
		_, err = nodes.UpdateStatus(env.Ctx, n)
		return err
	})
	if err != nil {
		t.Fatalf("node %s: post Ready=%s: %v", name, status, err)
	}
}

// podSpec is a pod for node (unbound if ""), with a one-second grace period.
func podSpec(name, node string, tols ...*corev1.Toleration) *corev1.Pod {
	return &corev1.Pod{
		Metadata: &metav1.ObjectMeta{Namespace: "default", Name: name, Labels: map[string]string{"app": name}},
		Spec: &corev1.PodSpec{
			NodeName:                      node,
			Containers:                    []*corev1.Container{{Name: "c", Image: "busybox"}},
			TerminationGracePeriodSeconds: proto.Int64(1),
			Tolerations:                   tols,
		},
	}
}

// createReadyPod creates a pod bound to node and marks it Running and Ready,
// as the node's agent would.
func createReadyPod(t *testing.T, env *managertest.Env, p *corev1.Pod) *corev1.Pod {
	t.Helper()
	created, err := client.Pods(env.Conn).Create(env.Ctx, p)
	if err != nil {
		t.Fatalf("create pod %s: %v", p.GetMetadata().GetName(), err)
	}
	if err := simnode.MarkReady(env.Ctx, env.Conn, created); err != nil {
		t.Fatalf("mark pod %s ready: %v", p.GetMetadata().GetName(), err)
	}
	return created
}

func unreachableToleration(seconds *int64) *corev1.Toleration {
	return &corev1.Toleration{Key: nodelifecycle.TaintNodeUnreachable, Operator: "Exists", Effect: "NoExecute", TolerationSeconds: seconds}
}

func nodes(env *managertest.Env) *informer.Informer[*corev1.Node] {
	return informer.For(env.Manager.Informers, client.Nodes(env.Conn))
}

func getNode(env *managertest.Env, name string) *corev1.Node {
	n, _ := nodes(env).Store().Get(name)
	return n
}

func getPod(env *managertest.Env, name string) (*corev1.Pod, bool) {
	return env.Pods().Store().GetByName("default", name)
}

// noExecuteTaint returns the node's NoExecute taint with key, or nil.
func noExecuteTaint(n *corev1.Node, key string) *corev1.Taint {
	for _, t := range n.GetSpec().GetTaints() {
		if t.GetKey() == key && t.GetEffect() == "NoExecute" {
			return t
		}
	}
	return nil
}

func nodeCondition(n *corev1.Node, typ string) *corev1.NodeCondition {
	for _, c := range n.GetStatus().GetConditions() {
		if c.GetType() == typ {
			return c
		}
	}
	return nil
}

func podReady(p *corev1.Pod) *corev1.PodCondition {
	for _, c := range p.GetStatus().GetConditions() {
		if c.GetType() == "Ready" {
			return c
		}
	}
	return nil
}

// eventReasons lists the reasons of the events recorded about the object
// kind/namespace/name.
func eventReasons(env *managertest.Env, kind, namespace, name string) map[string]string {
	return env.EventReasons(kind, namespace, name)
}

// counter returns the value of a counter of env's registry with the given
// label value.
func counter(t *testing.T, env *managertest.Env, name, label, value string) float64 {
	t.Helper()
	return env.Metric(name, label, value)
}

// labelNode adds labels to the node's.
func labelNode(t *testing.T, env *managertest.Env, name string, labels map[string]string) {
	t.Helper()
	nodes := client.Nodes(env.Conn)
	err := client.RetryOnConflict(env.Ctx, client.DefaultRetry, func() error {
		n, err := nodes.Get(env.Ctx, "", name)
		if err != nil {
			return err
		}
		if n.Metadata.Labels == nil {
			n.Metadata.Labels = map[string]string{}
		}
		maps.Copy(n.Metadata.Labels, labels)
		_, err = nodes.Update(env.Ctx, n)
		return err
	})
	if err != nil {
		t.Fatalf("label node %s: %v", name, err)
	}
}

// unhealthyByZone returns node_collector_unhealthy_nodes_in_zone of env's
// registry, by its zone label.
func unhealthyByZone(t *testing.T, env *managertest.Env) map[string]float64 {
	t.Helper()
	mfs, err := env.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != "node_collector_unhealthy_nodes_in_zone" {
			continue
		}
		for _, m := range mf.GetMetric() {
			zone := ""
			for _, l := range m.GetLabel() {
				if l.GetName() == "zone" {
					zone = l.GetValue()
				}
			}
			out[zone] = m.GetGauge().GetValue()
		}
	}
	return out
}
