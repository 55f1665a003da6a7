package podgc

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.uber.org/zap"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"skiff.dev/internal/apierrors"
	"skiff.dev/internal/client"
	"skiff.dev/internal/controller"
	"skiff.dev/internal/informer"
	"skiff.dev/internal/quota"
	"skiff.dev/internal/workqueue"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/controller-manager/manager"
)

// Name is the controller's name in --controllers.
const Name = "podgc"

const (
	// DefaultTerminatedPodThreshold is how many terminated pods may stay
	// (Kubernetes' --terminated-pod-gc-threshold).
	DefaultTerminatedPodThreshold = 12500
	// CheckPeriod is the time between passes (Kubernetes' gcCheckPeriod).
	CheckPeriod = 20 * time.Second
	// QuarantineTime is how long a node must be missing from the cache
	// before a GET decides whether its pods are orphaned (Kubernetes'
	// quarantineTime).
	QuarantineTime = 40 * time.Second
)

// deleteParallelism bounds the pods one pass deletes at once: enough for
// the hundreds of pods of a deleted node in a second, few enough to stay
// well within what the apiserver admits of one user.
const deleteParallelism = 16

// The condition written on an orphaned pod before it is deleted, as
// Kubernetes writes it.
const (
	ConditionDisruptionTarget = "DisruptionTarget"
	ReasonDeletionByPodGC     = "DeletionByPodGC"
	MessageNodeGone           = "PodGC: node no longer exists"
)

// nodeGoneCondition is written on the pods of a deleted node (setCondition
// copies it; it is never changed).
var nodeGoneCondition = &corev1.PodCondition{
	Type: ConditionDisruptionTarget, Status: "True",
	Reason: ReasonDeletionByPodGC, Message: MessageNodeGone,
}

// passKey is the controller's one key: every pass looks at every pod.
const passKey = "pods"

// Options configure the controller. Zero values pick the defaults.
type Options struct {
	// TerminatedPodThreshold is how many terminated pods (phase Succeeded
	// or Failed) may stay; the oldest beyond it are deleted (default
	// DefaultTerminatedPodThreshold; negative: no limit).
	TerminatedPodThreshold int
}

// Controller deletes the pods nobody else will; see the package
// documentation.
type Controller struct {
	threshold  int
	pods       *informer.Informer[*corev1.Pod]
	nodes      *informer.Informer[*corev1.Node]
	podClient  *client.Resource[*corev1.Pod, *corev1.PodList]
	nodeClient *client.Resource[*corev1.Node, *corev1.NodeList]
	log        *zap.Logger
	clock      workqueue.Clock
	m          *metrics
	runner     *controller.Controller
	quarantine *quarantine // the pass's own (one worker)

	// nodeCached looks a node up in the cache; tests replace it to play a
	// cache that lags.
	nodeCached func(name string) bool
}

// New builds the controller on mc's shared informers (pods, nodes). Call
// Run.
func New(mc *manager.Context, o Options) *Controller {
	switch {
	case o.TerminatedPodThreshold == 0:
		o.TerminatedPodThreshold = DefaultTerminatedPodThreshold
	case o.TerminatedPodThreshold < 0:
		o.TerminatedPodThreshold = 0
	}
	parts := mc.For(Name)
	c := &Controller{
		threshold:  o.TerminatedPodThreshold,
		pods:       informer.For(mc.Informers, client.Pods(mc.Conn)),
		nodes:      informer.For(mc.Informers, client.Nodes(mc.Conn)),
		podClient:  client.Pods(mc.Conn),
		nodeClient: client.Nodes(mc.Conn),
		log:        parts.Logger,
		clock:      parts.Clock,
		m:          newMetrics(mc.Registerer),
		quarantine: newQuarantine(QuarantineTime),
	}
	c.nodeCached = func(name string) bool {
		_, ok := c.nodes.Store().Get(name)
		return ok
	}
	c.runner = parts.Runner(Name, 1, c)
	// A deleted node's pods start their quarantine now, not at the next
	// pass.
	c.nodes.AddHandler(informer.Handler[*corev1.Node]{
		OnDelete: func(*corev1.Node) { c.runner.Enqueue(passKey) },
	})
	return c
}

// Run waits for the informers to sync, then makes a pass every
// CheckPeriod until ctx ends, and returns nil.
func (c *Controller) Run(ctx context.Context) error {
	if !informer.WaitForSync(ctx, c.pods, c.nodes) {
		return nil
	}
	c.runner.Enqueue(passKey)
	return c.runner.Run(ctx)
}

// Reconcile makes one pass: it deletes what Decide found, the orphaned pods
// of the nodes whose quarantine is over and that the API does not have
// either. Failures are logged and counted; the next pass, in CheckPeriod or
// when the next quarantine ends, finds what is left.
func (c *Controller) Reconcile(ctx context.Context, _ string) (controller.Result, error) {
	now := c.clock.Now()
	plan := Decide(c.pods.Store().List(), c.nodeCached, c.threshold)
	due, next := c.quarantine.update(plan.Orphaned, now)

	if len(plan.Terminated) > 0 {
		c.log.Info("deleting terminated pods beyond the threshold", zap.Int("pods", len(plan.Terminated)), zap.Int("threshold", c.threshold))
	}
	c.deleteAll(ctx, plan.Terminated, ReasonTerminated, nil, now)
	for _, node := range due {
		_, err := c.nodeClient.Get(ctx, "", node)
		switch {
		case err == nil:
			// The cache lags behind the node's creation.
			if end := c.quarantine.again(node, now); next.IsZero() || end.Before(next) {
				next = end
			}
			continue
		case !apierrors.IsNotFound(err):
			c.log.Warn("cannot tell whether a node is gone; its pods wait", zap.String("node", node), zap.Error(err))
			continue
		}
		c.log.Info("deleting the pods of a node that no longer exists", zap.String("node", node), zap.Int("pods", len(plan.Orphaned[node])))
		c.deleteAll(ctx, plan.Orphaned[node], ReasonOrphaned, nodeGoneCondition, now)
	}
	c.deleteAll(ctx, plan.Unscheduled, ReasonUnscheduled, nil, now)

	after := CheckPeriod
	if !next.IsZero() && next.Sub(now) < after {
		// At least a millisecond: a zero RequeueAfter would mean "done".
		after = max(next.Sub(now), time.Millisecond)
	}
	return controller.Result{RequeueAfter: after}, nil
}

// deleteAll force-deletes pods, deleteParallelism at a time, setting each
// Failed (with cond, if not nil) first.
func (c *Controller) deleteAll(ctx context.Context, pods []*corev1.Pod, reason string, cond *corev1.PodCondition, now time.Time) {
	sem := make(chan struct{}, deleteParallelism)
	var wg sync.WaitGroup
	for _, pod := range pods {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			c.forceDelete(ctx, pod, reason, cond, now)
		}()
	}
	wg.Wait()
}

// errGone says the pod went (or was replaced by another of its name)
// before the controller could delete it.
var errGone = errors.New("pod gone")

// forceDelete sets the pod Failed (with cond) unless it is finished, then
// deletes it with grace period 0, and counts it.
func (c *Controller) forceDelete(ctx context.Context, pod *corev1.Pod, reason string, cond *corev1.PodCondition, now time.Time) {
	m := pod.GetMetadata()
	err := c.markFailed(ctx, pod, cond, now)
	if err == nil {
		_, err = c.podClient.Delete(ctx, &metav1.DeleteRequest{
			Namespace:          m.GetNamespace(),
			Name:               m.GetName(),
			Preconditions:      &metav1.Preconditions{Uid: m.GetUid()},
			GracePeriodSeconds: proto.Int64(0),
		})
		if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			err = errGone // only the uid can conflict: another pod of that name
		}
	}
	if errors.Is(err, errGone) {
		return
	}
	c.m.deletes.WithLabelValues(m.GetNamespace(), reason).Inc()
	if err != nil {
		c.m.errors.WithLabelValues(m.GetNamespace(), reason).Inc()
		c.log.Warn("cannot force-delete pod", zap.String("pod", informer.Key(pod)), zap.String("reason", reason), zap.Error(err))
		return
	}
	c.log.Info("force-deleted pod", zap.String("pod", informer.Key(pod)), zap.String("node", pod.GetSpec().GetNodeName()), zap.String("reason", reason))
}

// markFailed sets a pod that is not Succeeded or Failed to Failed, with
// cond (its lastTransitionTime now) if not nil, as Kubernetes' pod GC does
// before deleting, so that a pod a finalizer keeps is seen finished. On a
// conflict it reads the pod again. errGone: the pod (of that uid) is gone.
func (c *Controller) markFailed(ctx context.Context, pod *corev1.Pod, cond *corev1.PodCondition, now time.Time) error {
	first := true
	return client.RetryOnConflict(ctx, client.DefaultRetry, func() error {
		if !first {
			fresh, err := c.podClient.Get(ctx, pod.GetMetadata().GetNamespace(), pod.GetMetadata().GetName())
			if err != nil {
				if apierrors.IsNotFound(err) {
					return errGone
				}
				return err
			}
			if fresh.GetMetadata().GetUid() != pod.GetMetadata().GetUid() {
				return errGone
			}
			pod = fresh
		}
		first = false
		if quota.Terminal(pod) {
			return nil
		}
		next := proto.Clone(pod).(*corev1.Pod)
		if next.Status == nil {
			next.Status = &corev1.PodStatus{}
		}
		next.Status.Phase = "Failed"
		if cond != nil {
			setCondition(next.Status, cond, now)
		}
		_, err := c.podClient.UpdateStatus(ctx, next)
		switch {
		case apierrors.IsNotFound(err):
			return errGone
		case err != nil && !apierrors.IsConflict(err):
			return fmt.Errorf("set phase Failed: %w", err)
		}
		return err
	})
}

// setCondition puts a copy of cond into st, replacing the condition of its
// type; lastTransitionTime is now unless that condition had cond's status.
func setCondition(st *corev1.PodStatus, cond *corev1.PodCondition, now time.Time) {
	cond = proto.Clone(cond).(*corev1.PodCondition)
	cond.LastTransitionTime = timestamppb.New(now)
	for i, c := range st.Conditions {
		if c.GetType() == cond.GetType() {
			if c.GetStatus() == cond.GetStatus() && c.GetLastTransitionTime() != nil {
				cond.LastTransitionTime = c.GetLastTransitionTime()
			}
			st.Conditions[i] = cond
			return
		}
	}
	st.Conditions = append(st.Conditions, cond)
}
