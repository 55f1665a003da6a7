// Package simnode is a simulated node agent for tests and benchmarks of the
// control plane: it plays the kubelet's part in the API (pods it accepts
// become Running and Ready; pods being deleted on it are finished) without
// running anything. It owns no containers, no probes and no Lease: tests
// that need a heartbeat renew one themselves.
package simnode

import (
	"context"
	"sync"
	"time"

	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"skiff.dev/internal/apierrors"
	"skiff.dev/internal/client"
	"skiff.dev/internal/informer"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
)

// Options configure a simulated node.
type Options struct {
	// Accept says whether a pod may become Ready now (nil: every pod).
	// Pods refused stay Pending until Recheck is called and Accept says yes.
	Accept func(*corev1.Pod) bool
	// NodeName, when set, limits the node to the pods bound to it (like a
	// real agent); empty: every pod, bound or not.
	NodeName string
	// Workers is the number of concurrent status writers (default 4).
	Workers int
	Logger  *zap.Logger
	// Finish, when set, ends pods as their containers would exit: for a
	// pod not finished yet it returns the containers' exit code and
	// whether they exit now (0: the pod Succeeds, else it Fails); a pod
	// that does not exit now becomes Running and Ready as usual. Recheck
	// looks at every pod again after Finish's answer may have changed.
	Finish func(*corev1.Pod) (exitCode int32, exits bool)
}

// Node marks pods Running and Ready through the API.
type Node struct {
	conn  grpc.ClientConnInterface
	pods  *client.Resource[*corev1.Pod, *corev1.PodList]
	inf   *informer.Informer[*corev1.Pod]
	opts  Options
	queue chan string

	mu     sync.Mutex
	accept func(*corev1.Pod) bool
}

// New returns a simulated node fed by a pods informer (a shared one is
// fine). Call Run.
func New(conn grpc.ClientConnInterface, pods *informer.Informer[*corev1.Pod], o Options) *Node {
	if o.Workers <= 0 {
		o.Workers = 4
	}
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
	n := &Node{conn: conn, pods: client.Pods(conn), inf: pods, opts: o, queue: make(chan string, 1<<16), accept: o.Accept}
	enqueue := func(p *corev1.Pod) { n.queue <- informer.Key(p) }
	pods.AddHandler(informer.Handler[*corev1.Pod]{
		OnAdd:    enqueue,
		OnUpdate: func(_, p *corev1.Pod) { enqueue(p) },
	})
	return n
}

// SetAccept replaces the Accept function and looks at every pod again.
func (n *Node) SetAccept(accept func(*corev1.Pod) bool) {
	n.mu.Lock()
	n.accept = accept
	n.mu.Unlock()
	n.Recheck()
}

// Recheck looks at every pod again (after Accept's answer may have changed).
func (n *Node) Recheck() {
	for _, p := range n.inf.Store().List() {
		n.queue <- informer.Key(p)
	}
}

// Run works until ctx ends.
func (n *Node) Run(ctx context.Context) {
	var wg sync.WaitGroup
	for range n.opts.Workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-ctx.Done():
					return
				case key := <-n.queue:
					if err := n.sync(ctx, key); err != nil && ctx.Err() == nil {
						n.opts.Logger.Debug("simnode: sync failed", zap.String("pod", key), zap.Error(err))
					}
				}
			}
		}()
	}
	wg.Wait()
}

func (n *Node) sync(ctx context.Context, key string) error {
	p, ok := n.inf.Store().Get(key)
	if !ok {
		return nil
	}
	if n.opts.NodeName != "" && p.GetSpec().GetNodeName() != n.opts.NodeName {
		return nil
	}
	m := p.GetMetadata()
	if m.GetDeletionTimestamp() != nil {
		// The kubelet's part of a graceful delete: containers are stopped, finish it.
		_, err := n.pods.Delete(ctx, &metav1.DeleteRequest{
			Namespace: m.GetNamespace(), Name: m.GetName(),
			Preconditions:      &metav1.Preconditions{Uid: m.GetUid()},
			GracePeriodSeconds: proto.Int64(0),
		})
		if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			return nil
		}
		return err
	}
	if ph := p.GetStatus().GetPhase(); ph == "Succeeded" || ph == "Failed" {
		return nil
	}
	if n.opts.Finish != nil {
		if code, exits := n.opts.Finish(p); exits {
			return MarkFinished(ctx, n.conn, p, code)
		}
	}
	if IsReady(p) {
		return nil
	}
	n.mu.Lock()
	accept := n.accept
	n.mu.Unlock()
	if accept != nil && !accept(p) {
		return nil
	}
	return MarkReady(ctx, n.conn, p)
}

// IsReady reports whether p is Running with Ready=True.
func IsReady(p *corev1.Pod) bool {
	if p.GetStatus().GetPhase() != "Running" {
		return false
	}
	for _, c := range p.GetStatus().GetConditions() {
		if c.GetType() == "Ready" {
			return c.GetStatus() == "True"
		}
	}
	return false
}

// MarkReady writes p's status as a kubelet would for a pod whose containers
// all started and passed their readiness probes.
func MarkReady(ctx context.Context, conn grpc.ClientConnInterface, p *corev1.Pod) error {
	next := proto.Clone(p).(*corev1.Pod)
	now := timestamppb.New(time.Now())
	st := next.GetStatus()
	if st == nil {
		st = &corev1.PodStatus{}
		next.Status = st
	}
	st.Phase = "Running"
	if st.StartTime == nil {
		st.StartTime = now
	}
	if st.PodIp == "" {
		st.PodIp = "10.244.0.1"
	}
	for _, typ := range []string{"Initialized", "ContainersReady", "Ready"} {
		setCondition(st, &corev1.PodCondition{Type: typ, Status: "True", LastTransitionTime: now})
	}
	_, err := client.Pods(conn).UpdateStatus(ctx, next)
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil // gone, or changed: the informer brings the new version back
	}
	return err
}

// MarkFinished writes p's status as a kubelet would once every container
// exited with exitCode: phase Succeeded (exit code 0) or Failed, each
// container terminated, Ready False.
func MarkFinished(ctx context.Context, conn grpc.ClientConnInterface, p *corev1.Pod, exitCode int32) error {
	next := proto.Clone(p).(*corev1.Pod)
	now := timestamppb.New(time.Now())
	st := next.GetStatus()
	if st == nil {
		st = &corev1.PodStatus{}
		next.Status = st
	}
	reason := "Completed"
	st.Phase = "Succeeded"
	if exitCode != 0 {
		st.Phase, reason = "Failed", "Error"
	}
	if st.StartTime == nil {
		st.StartTime = now
	}
	st.ContainerStatuses = nil
	for _, c := range next.GetSpec().GetContainers() {
		st.ContainerStatuses = append(st.ContainerStatuses, &corev1.ContainerStatus{
			Name: c.GetName(), Image: c.GetImage(),
			State: &corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
				ExitCode: exitCode, Reason: reason, StartedAt: st.StartTime, FinishedAt: now}},
		})
	}
	for _, typ := range []string{"ContainersReady", "Ready"} {
		setCondition(st, &corev1.PodCondition{Type: typ, Status: "False", Reason: "PodCompleted", LastTransitionTime: now})
	}
	_, err := client.Pods(conn).UpdateStatus(ctx, next)
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil
	}
	return err
}

// MarkNotReady sets p's Ready condition to False, as a failing readiness probe would.
func MarkNotReady(ctx context.Context, conn grpc.ClientConnInterface, p *corev1.Pod) error {
	next := proto.Clone(p).(*corev1.Pod)
	if next.Status == nil {
		next.Status = &corev1.PodStatus{}
	}
	setCondition(next.Status, &corev1.PodCondition{Type: "Ready", Status: "False", LastTransitionTime: timestamppb.Now(), Reason: "ReadinessProbeFailed"})
	_, err := client.Pods(conn).UpdateStatus(ctx, next)
	return err
}

func setCondition(st *corev1.PodStatus, c *corev1.PodCondition) {
	for i, old := range st.Conditions {
		if old.GetType() == c.GetType() {
			if old.GetStatus() == c.GetStatus() {
				return
			}
			st.Conditions[i] = c
			return
		}
	}
	st.Conditions = append(st.Conditions, c)
}
