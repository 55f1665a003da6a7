package nodelifecycle

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"
	"google.golang.org/protobuf/proto"

	"skiff.dev/internal/apierrors"
	"skiff.dev/internal/client"
	"skiff.dev/internal/controller"
	"skiff.dev/internal/events"
	"skiff.dev/internal/informer"
	"skiff.dev/internal/workqueue"
	coordinationv1 "skiff.dev/proto/coordination/v1"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/controller-manager/manager"
)

// Name is the controller's name in --controllers.
const Name = "nodelifecycle"

// DefaultGracePeriod is how long a node's Lease may go unrenewed before the
// node is unreachable (Kubernetes' --node-monitor-grace-period).
const DefaultGracePeriod = 40 * time.Second

// Options configure the controller. Zero values pick the defaults.
type Options struct {
	// Workers reconcile nodes in parallel (default 1).
	Workers int
	// GracePeriod: a node whose Lease was not seen renewed for this long is
	// unreachable (default DefaultGracePeriod).
	GracePeriod time.Duration
	// DefaultTolerationSeconds is how long pods without their own
	// toleration for the unreachable or not-ready taint stay on such a
	// node (default DefaultTolerationSeconds; negative: not at all).
	DefaultTolerationSeconds int64
}

// Controller watches nodes, their Leases and their pods; see the package
// documentation.
type Controller struct {
	opts   Options
	nodes  *informer.Informer[*corev1.Node]
	leases *informer.Informer[*coordinationv1.Lease]
	pods   *informer.Informer[*corev1.Pod]

	nodeClient *client.Resource[*corev1.Node, *corev1.NodeList]
	podClient  *client.Resource[*corev1.Pod, *corev1.PodList]
	recorder   events.Recorder
	log        *zap.Logger
	clock      workqueue.Clock
	beats      *heartbeats
	seen       *podsSeen
	m          *metrics
	runner     *controller.Controller
}

// New builds the controller on mc's shared informers (nodes, leases, pods
// with the node-name index) and registers its handlers. Call Run.
func New(mc *manager.Context, o Options) *Controller {
	if o.GracePeriod <= 0 {
		o.GracePeriod = DefaultGracePeriod
	}
	switch {
	case o.DefaultTolerationSeconds == 0:
		o.DefaultTolerationSeconds = DefaultTolerationSeconds
	case o.DefaultTolerationSeconds < 0:
		o.DefaultTolerationSeconds = 0
	}
	parts := mc.For(Name)
	c := &Controller{
		opts:       o,
		nodes:      informer.For(mc.Informers, client.Nodes(mc.Conn)),
		leases:     informer.For(mc.Informers, client.Leases(mc.Conn)),
		pods:       informer.For(mc.Informers, client.Pods(mc.Conn)),
		nodeClient: client.Nodes(mc.Conn),
		podClient:  client.Pods(mc.Conn),
		recorder:   parts.Recorder,
		log:        parts.Logger,
		clock:      parts.Clock,
		beats:      newHeartbeats(),
		seen:       newPodsSeen(),
		m:          newMetrics(mc.Registerer),
	}
	c.runner = parts.Runner(Name, o.Workers, c)
	c.pods.AddIndex(informer.IndexNodeName, informer.PodNodeName)

	c.nodes.AddHandler(informer.Handler[*corev1.Node]{
		OnAdd:    func(n *corev1.Node) { c.runner.Enqueue(n.GetMetadata().GetName()) },
		OnUpdate: func(_, n *corev1.Node) { c.runner.Enqueue(n.GetMetadata().GetName()) },
		OnDelete: func(n *corev1.Node) { c.runner.Enqueue(n.GetMetadata().GetName()) },
	})
	onLease := func(l *coordinationv1.Lease) {
		if l.GetMetadata().GetNamespace() != NodeLeaseNamespace {
			return // another Lease (leader election, say)
		}
		name := l.GetMetadata().GetName()
		c.beats.observe(name, l, c.clock.Now())
		c.runner.Enqueue(name)
	}
	c.leases.AddHandler(informer.Handler[*coordinationv1.Lease]{
		OnAdd:    onLease,
		OnUpdate: func(_, l *coordinationv1.Lease) { onLease(l) },
		OnDelete: func(l *coordinationv1.Lease) {
			if l.GetMetadata().GetNamespace() == NodeLeaseNamespace {
				c.runner.Enqueue(l.GetMetadata().GetName())
			}
		},
	})
	onPod := func(p *corev1.Pod) {
		if n := p.GetSpec().GetNodeName(); n != "" {
			c.runner.Enqueue(n)
		}
	}
	c.pods.AddHandler(informer.Handler[*corev1.Pod]{
		OnAdd: onPod,
		OnUpdate: func(old, cur *corev1.Pod) {
			onPod(cur)
			if old.GetSpec().GetNodeName() != cur.GetSpec().GetNodeName() {
				onPod(old)
			}
		},
		OnDelete: onPod,
	})
	return c
}

// Run waits for the informers to sync, then reconciles nodes until ctx
// ends, and returns nil.
func (c *Controller) Run(ctx context.Context) error {
	if !informer.WaitForSync(ctx, c.nodes, c.leases, c.pods) {
		return nil
	}
	return c.runner.Run(ctx)
}

// Reconcile brings one node (key: its name) and its pods in line with the
// node's heartbeat.
func (c *Controller) Reconcile(ctx context.Context, key string) (controller.Result, error) {
	now := c.clock.Now()
	node, ok := c.nodes.Store().Get(key)
	if !ok {
		c.beats.forget(key)
		c.seen.forget(key)
		c.m.zones.forget(key)
		return controller.Result{}, nil
	}
	lease, _ := c.leases.Store().GetByName(NodeLeaseNamespace, key)
	heartbeat := c.beats.heartbeat(node, lease, now)
	a := Assess(node, heartbeat, now, c.opts.GracePeriod)
	c.m.zones.observe(key, zoneKey(node), a.State != StateReady)
	log := c.log.With(zap.String("node", key))

	if err := c.syncNode(ctx, node, a, log); err != nil {
		if apierrors.IsConflict(err) {
			// The cache is behind our own last write (or another writer's):
			// the newer version is on its way and enqueues the node too.
			log.Debug("node changed meanwhile; looking again", zap.Error(err))
			return controller.Result{Requeue: true}, nil
		}
		return controller.Result{}, err
	}

	var next time.Time
	if a.StaleIn > 0 {
		next = now.Add(a.StaleIn)
	}
	noExecute := make([]*corev1.Taint, 0, len(a.Taints))
	for _, t := range a.Taints {
		if t.GetEffect() == EffectNoExecute {
			noExecute = append(noExecute, t)
		}
	}
	agentGone := a.State == StateUnreachable || (a.State == StateNotReady && hasTaintKey(a.Taints, TaintNodeOutOfService))
	if a.State == StateReady && len(noExecute) == 0 {
		c.seen.forget(key)
		return requeueAt(next, now), nil // nothing to do for the pods
	}

	var errs []error
	pods := c.pods.Store().ByIndex(informer.IndexNodeName, key)
	seen := c.seen.observe(key, pods, now)
	for _, pod := range pods {
		if a.State != StateReady {
			written, err := c.markNotReady(ctx, pod, now)
			if err != nil {
				errs = append(errs, err)
			}
			pod = written
		}
		d := DecidePod(pod, seen[pod.GetMetadata().GetUid()], noExecute, agentGone, now, c.opts.DefaultTolerationSeconds)
		switch d.Action {
		case Evict:
			if err := c.evict(ctx, pod, log); err != nil {
				errs = append(errs, err)
			}
		case ForceDelete:
			if err := c.forceDelete(ctx, pod, log); err != nil {
				errs = append(errs, err)
			}
		}
		if !d.RecheckAt.IsZero() && (next.IsZero() || d.RecheckAt.Before(next)) {
			next = d.RecheckAt
		}
	}
	if err := errors.Join(errs...); err != nil {
		return controller.Result{}, err
	}
	return requeueAt(next, now), nil
}

// requeueAt is the Result that looks again at next (zero: no need).
func requeueAt(next, now time.Time) controller.Result {
	if next.IsZero() {
		return controller.Result{}
	}
	// At least a millisecond: a zero RequeueAfter would mean "done".
	return controller.Result{RequeueAfter: max(next.Sub(now), time.Millisecond)}
}

// syncNode writes the assessment's conditions (UpdateStatus), then its
// taints (Update, on the node UpdateStatus returned).
func (c *Controller) syncNode(ctx context.Context, node *corev1.Node, a Assessment, log *zap.Logger) error {
	if a.Conditions != nil {
		next := proto.Clone(node).(*corev1.Node)
		if next.Status == nil {
			next.Status = &corev1.NodeStatus{}
		}
		next.Status.Conditions = a.Conditions
		written, err := c.nodeClient.UpdateStatus(ctx, next)
		if err != nil {
			return fmt.Errorf("node %q: mark Ready Unknown: %w", node.GetMetadata().GetName(), err)
		}
		log.Info("node stopped renewing its Lease: Ready Unknown")
		node = written
	}
	if a.TaintsChanged {
		was := controllerTaintKey(node.GetSpec().GetTaints())
		next := proto.Clone(node).(*corev1.Node)
		if next.Spec == nil {
			next.Spec = &corev1.NodeSpec{}
		}
		next.Spec.Taints = a.Taints
		written, err := c.nodeClient.Update(ctx, next)
		if err != nil {
			return fmt.Errorf("node %q: set taints: %w", node.GetMetadata().GetName(), err)
		}
		is := a.State.taintKey()
		if was == is {
			return nil // only a missing timeAdded or a duplicate fixed
		}
		log.Info("node tainted", zap.Stringer("state", a.State), zap.String("taint", is), zap.String("was", was))
		c.m.transitions.WithLabelValues(a.State.String()).Inc()
		switch {
		case was == "":
			c.recorder.Eventf(written, events.EventTypeNormal, "NodeNotReady", "Node %s status is now: NodeNotReady", nameOf(written))
		case is == "":
			c.recorder.Eventf(written, events.EventTypeNormal, "NodeReady", "Node %s status is now: NodeReady", nameOf(written))
		}
	}
	return nil
}

func nameOf(node *corev1.Node) string { return node.GetMetadata().GetName() }

// markNotReady sets the pod's Ready condition to False, if it is True, and
// returns the pod as last known.
func (c *Controller) markNotReady(ctx context.Context, pod *corev1.Pod, now time.Time) (*corev1.Pod, error) {
	next := PodNotReady(pod, now)
	if next == nil {
		return pod, nil
	}
	written, err := c.podClient.UpdateStatus(ctx, next)
	switch {
	case apierrors.IsNotFound(err) || apierrors.IsConflict(err):
		return pod, nil // gone, or changed: its next version brings the node back
	case err != nil:
		return pod, fmt.Errorf("pod %q: mark not ready: %w", informer.Key(pod), err)
	}
	c.recorder.Event(written, events.EventTypeWarning, "NodeNotReady", "Node is not ready")
	return written, nil
}

// evict deletes a pod whose toleration of the node's taints ran out. The
// preconditions (uid and resourceVersion) make sure the decision was taken
// on the pod as it is: not on another pod of that name, nor on a cached
// version older than our own eviction (evicting twice), nor on a version
// whose tolerations have since changed.
func (c *Controller) evict(ctx context.Context, pod *corev1.Pod, log *zap.Logger) error {
	m := pod.GetMetadata()
	_, err := c.podClient.Delete(ctx, &metav1.DeleteRequest{
		Namespace:     m.GetNamespace(),
		Name:          m.GetName(),
		Preconditions: &metav1.Preconditions{Uid: m.GetUid(), ResourceVersion: m.GetResourceVersion()},
	})
	switch {
	case apierrors.IsNotFound(err) || apierrors.IsConflict(err):
		// Gone, or changed: the newer version enqueues the node again.
		return nil
	case err != nil:
		return fmt.Errorf("pod %q: evict: %w", informer.Key(pod), err)
	}
	c.recorder.Eventf(pod, events.EventTypeNormal, "TaintManagerEviction", "Marking for deletion Pod %s", informer.Key(pod))
	c.m.evictions.WithLabelValues("taint").Inc()
	log.Info("evicted pod", zap.String("pod", informer.Key(pod)))
	return nil
}

// forceDelete removes a pod whose graceful delete nobody will finish.
func (c *Controller) forceDelete(ctx context.Context, pod *corev1.Pod, log *zap.Logger) error {
	m := pod.GetMetadata()
	_, err := c.podClient.Delete(ctx, &metav1.DeleteRequest{
		Namespace:          m.GetNamespace(),
		Name:               m.GetName(),
		Preconditions:      &metav1.Preconditions{Uid: m.GetUid()},
		GracePeriodSeconds: proto.Int64(0),
	})
	switch {
	case apierrors.IsNotFound(err) || apierrors.IsConflict(err):
		return nil
	case err != nil:
		return fmt.Errorf("pod %q: force delete: %w", informer.Key(pod), err)
	}
	c.m.evictions.WithLabelValues("force").Inc()
	log.Info("force-deleted pod terminating on an unreachable node", zap.String("pod", informer.Key(pod)))
	return nil
}

func hasTaintKey(taints []*corev1.Taint, key string) bool {
	for _, t := range taints {
		if t.GetKey() == key {
			return true
		}
	}
	return false
}
