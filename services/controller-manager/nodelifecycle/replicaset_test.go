package nodelifecycle_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"skiff.dev/internal/apierrors"
	"skiff.dev/internal/client"
	"skiff.dev/internal/informer"
	appsv1 "skiff.dev/proto/apps/v1"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/controller-manager/manager/managertest"
	"skiff.dev/services/controller-manager/nodelifecycle"
	"skiff.dev/services/controller-manager/replicaset"
)

// scheduler plays the scheduler's part: it binds each unbound pod to the
// first of its nodes, in order, that is Ready and not tainted by the node
// lifecycle controller.
type scheduler struct {
	env   *managertest.Env
	nodes []string
	queue chan string
}

func newScheduler(env *managertest.Env, nodeNames ...string) *scheduler {
	s := &scheduler{env: env, nodes: nodeNames, queue: make(chan string, 1024)}
	enqueue := func(p *corev1.Pod) {
		if p.GetSpec().GetNodeName() == "" && p.GetMetadata().GetDeletionTimestamp() == nil {
			s.queue <- informer.Key(p)
		}
	}
	env.Pods().AddHandler(informer.Handler[*corev1.Pod]{OnAdd: enqueue, OnUpdate: func(_, p *corev1.Pod) { enqueue(p) }})
	return s
}

func (s *scheduler) run(ctx context.Context) {
	binder := corev1.NewPodsClient(s.env.Conn)
	for {
		var key string
		select {
		case <-ctx.Done():
			return
		case key = <-s.queue:
		}
		p, ok := s.env.Pods().Store().Get(key)
		if !ok || p.GetSpec().GetNodeName() != "" {
			continue
		}
		node := s.pick()
		if node == "" {
			s.env.T.Errorf("no healthy node for pod %s", key)
			continue
		}
		m := p.GetMetadata()
		_, err := binder.Bind(ctx, &corev1.Binding{
			Metadata: &metav1.ObjectMeta{Namespace: m.GetNamespace(), Name: m.GetName(), Uid: m.GetUid()},
			Target:   &corev1.ObjectReference{Kind: "Node", Name: node},
		})
		if err != nil && !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) && ctx.Err() == nil {
			s.env.T.Errorf("bind %s to %s: %v", key, node, err)
		}
	}
}

func (s *scheduler) pick() string {
	for _, name := range s.nodes {
		n := getNode(s.env, name)
		if n == nil || nodeCondition(n, "Ready").GetStatus() != "True" ||
			noExecuteTaint(n, nodelifecycle.TaintNodeUnreachable) != nil || noExecuteTaint(n, nodelifecycle.TaintNodeNotReady) != nil {
			continue
		}
		return name
	}
	return ""
}

// TestReplicaSetMovesOffUnreachableNode: a ReplicaSet's pods run on node-a;
// node-a's agent stops, so its pods are evicted (and force-deleted, nobody
// being there to finish them); the ReplicaSet replaces them and the
// replacements land on node-b.
func TestReplicaSetMovesOffUnreachableNode(t *testing.T) {
	env := managertest.Start(t)
	nlc := nodelifecycle.New(env.Manager, nodelifecycle.Options{GracePeriod: time.Second, DefaultTolerationSeconds: 1})
	rsc := replicaset.New(env.Manager, replicaset.Options{})
	sched := newScheduler(env, "node-a", "node-b")
	env.StartInformers()
	env.GoErr(nlc.Run)
	env.GoErr(rsc.Run)
	env.Go(sched.run)

	a := startAgent(t, env, "node-a")
	startAgent(t, env, "node-b")
	env.Await(patience, "both nodes in the cache", func() (bool, string) {
		return sched.pick() == "node-a" && getNode(env, "node-b") != nil, "nodes not cached yet"
	})

	rs, err := client.ReplicaSets(env.Conn).Create(env.Ctx, &appsv1.ReplicaSet{
		Metadata: &metav1.ObjectMeta{Namespace: "default", Name: "web"},
		Spec: &appsv1.ReplicaSetSpec{
			Replicas: proto.Int32(3),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: &corev1.PodTemplateSpec{
				Metadata: &metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec: &corev1.PodSpec{
					Containers:                    []*corev1.Container{{Name: "web", Image: "nginx"}},
					TerminationGracePeriodSeconds: proto.Int64(1),
				},
			},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	uid := rs.GetMetadata().GetUid()
	placement := func() (onA, onB []string, other int) {
		for _, p := range env.Pods().Store().ByOwner(uid) {
			switch p.GetSpec().GetNodeName() {
			case "node-a":
				onA = append(onA, p.GetMetadata().GetUid())
			case "node-b":
				if p.GetMetadata().GetDeletionTimestamp() == nil {
					onB = append(onB, p.GetMetadata().GetUid())
				}
			default:
				other++
			}
		}
		return onA, onB, other
	}

	env.Await(patience, "3 pods on node-a", func() (bool, string) {
		onA, onB, other := placement()
		return len(onA) == 3 && len(onB) == 0 && other == 0,
			managertest.Explain("%d on node-a, %d on node-b, %d unbound", len(onA), len(onB), other)
	})
	first, _, _ := placement()

	a.stop()
	env.Await(patience, "the pods replaced on node-b, none left on node-a", func() (bool, string) {
		onA, onB, other := placement()
		return len(onA) == 0 && len(onB) == 3 && other == 0,
			managertest.Explain("%d on node-a, %d on node-b, %d unbound", len(onA), len(onB), other)
	})
	_, now, _ := placement()
	for _, u := range first {
		if slices.Contains(now, u) {
			t.Errorf("pod %s of node-a is still there", u)
		}
	}
	if n := getNode(env, "node-b"); len(n.GetSpec().GetTaints()) != 0 {
		t.Errorf("node-b, whose agent renews, was tainted: %v", n.GetSpec().GetTaints())
	}
}
