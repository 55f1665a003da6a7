// Package disruption is the disruption controller of
// skiff-controller-manager, as Kubernetes' pkg/controller/disruption: it
// keeps each PodDisruptionBudget's status — the pods it expects
// (expectedPods), those Ready and not being disrupted (currentHealthy),
// those it must keep (desiredHealthy), the disruptions the eviction
// subresource may take (disruptionsAllowed) and the DisruptionAllowed
// condition — from the pods its selector matches and the scale of their
// controllers. It forgets the pods the eviction subresource disrupted
// (status.disruptedPods) once they are deleted or DeletionTimeout passed.
package disruption

import (
	"context"
	"fmt"
	"strings"

	"go.uber.org/zap"
	"google.golang.org/protobuf/proto"

	"skiff.dev/internal/apierrors"
	"skiff.dev/internal/client"
	"skiff.dev/internal/controller"
	"skiff.dev/internal/events"
	"skiff.dev/internal/informer"
	"skiff.dev/internal/labels"
	"skiff.dev/internal/workqueue"
	appsv1 "skiff.dev/proto/apps/v1"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	policyv1 "skiff.dev/proto/policy/v1"
	"skiff.dev/services/controller-manager/manager"
)

// Name is the controller's name in --controllers.
const Name = "disruption"

// Options configure the controller.
type Options struct {
	// Workers is the number of budgets synced in parallel (default 1, as
	// Kubernetes' one worker).
	Workers int
}

// Controller keeps PodDisruptionBudgets' status.
type Controller struct {
	log          *zap.Logger
	clock        workqueue.Clock
	recorder     events.Recorder
	pdbs         *informer.Informer[*policyv1.PodDisruptionBudget]
	pods         *informer.Informer[*corev1.Pod]
	replicaSets  *informer.Informer[*appsv1.ReplicaSet]
	deployments  *informer.Informer[*appsv1.Deployment]
	statefulSets *informer.Informer[*appsv1.StatefulSet]
	client       *client.Resource[*policyv1.PodDisruptionBudget, *policyv1.PodDisruptionBudgetList]
	queue        *controller.Controller
}

// New builds the controller on the shared informers.
func New(mc *manager.Context, o Options) *Controller {
	if o.Workers <= 0 {
		o.Workers = 1
	}
	parts := mc.For(Name)
	c := &Controller{
		log:          parts.Logger,
		clock:        parts.Clock,
		recorder:     parts.Recorder,
		pdbs:         informer.For(mc.Informers, client.PodDisruptionBudgets(mc.Conn)),
		pods:         informer.For(mc.Informers, client.Pods(mc.Conn)),
		replicaSets:  informer.For(mc.Informers, client.ReplicaSets(mc.Conn)),
		deployments:  informer.For(mc.Informers, client.Deployments(mc.Conn)),
		statefulSets: informer.For(mc.Informers, client.StatefulSets(mc.Conn)),
		client:       client.PodDisruptionBudgets(mc.Conn),
	}
	c.queue = parts.Runner(Name, o.Workers, controller.ReconcileFunc(c.Reconcile))
	enqueue := func(b *policyv1.PodDisruptionBudget) { c.queue.Enqueue(informer.Key(b)) }
	c.pdbs.AddHandler(informer.Handler[*policyv1.PodDisruptionBudget]{
		OnAdd: enqueue, OnUpdate: func(_, b *policyv1.PodDisruptionBudget) { enqueue(b) },
	})
	podChanged := func(p *corev1.Pod) {
		for _, b := range c.budgetsOf(p) {
			enqueue(b)
		}
	}
	c.pods.AddHandler(informer.Handler[*corev1.Pod]{
		OnAdd: podChanged,
		OnUpdate: func(old, cur *corev1.Pod) {
			podChanged(cur)
			if !labelsEqual(old, cur) {
				podChanged(old)
			}
		},
		OnDelete: podChanged,
	})
	// A controller's scale changes what a percentage or maxUnavailable
	// budget expects.
	scaleChanged := func(ns string, replicas func() int32, oldReplicas func() int32) {
		if replicas() == oldReplicas() {
			return
		}
		for _, b := range c.pdbs.Store().ByNamespace(ns) {
			enqueue(b)
		}
	}
	c.replicaSets.AddHandler(informer.Handler[*appsv1.ReplicaSet]{OnUpdate: func(old, cur *appsv1.ReplicaSet) {
		scaleChanged(cur.GetMetadata().GetNamespace(), cur.GetSpec().GetReplicas, old.GetSpec().GetReplicas)
	}})
	c.deployments.AddHandler(informer.Handler[*appsv1.Deployment]{OnUpdate: func(old, cur *appsv1.Deployment) {
		scaleChanged(cur.GetMetadata().GetNamespace(), cur.GetSpec().GetReplicas, old.GetSpec().GetReplicas)
	}})
	c.statefulSets.AddHandler(informer.Handler[*appsv1.StatefulSet]{OnUpdate: func(old, cur *appsv1.StatefulSet) {
		scaleChanged(cur.GetMetadata().GetNamespace(), cur.GetSpec().GetReplicas, old.GetSpec().GetReplicas)
	}})
	return c
}

func labelsEqual(a, b *corev1.Pod) bool {
	x, y := a.GetMetadata().GetLabels(), b.GetMetadata().GetLabels()
	if len(x) != len(y) {
		return false
	}
	for k, v := range x {
		if w, ok := y[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// Run waits for the informers, then works until ctx ends.
func (c *Controller) Run(ctx context.Context) error {
	if !informer.WaitForSync(ctx, c.pdbs, c.pods, c.replicaSets, c.deployments, c.statefulSets) {
		return nil
	}
	return c.queue.Run(ctx)
}

// budgetsOf are the budgets of p's namespace whose selector matches it.
func (c *Controller) budgetsOf(p *corev1.Pod) []*policyv1.PodDisruptionBudget {
	var out []*policyv1.PodDisruptionBudget
	for _, b := range c.pdbs.Store().ByNamespace(p.GetMetadata().GetNamespace()) {
		sel, err := labels.FromProto(b.GetSpec().GetSelector())
		if err == nil && sel.Matches(p.GetMetadata().GetLabels()) {
			out = append(out, b)
		}
	}
	return out
}

// podsOf are the pods pdb's selector matches (an empty selector: all of
// its namespace's; none: no pod).
func (c *Controller) podsOf(pdb *policyv1.PodDisruptionBudget) ([]*corev1.Pod, error) {
	sel, err := labels.FromProto(pdb.GetSpec().GetSelector())
	if err != nil {
		return nil, err
	}
	var out []*corev1.Pod
	for _, p := range c.pods.Store().ByNamespace(pdb.GetMetadata().GetNamespace()) {
		if sel.Matches(p.GetMetadata().GetLabels()) {
			out = append(out, p)
		}
	}
	return out, nil
}

// scaleOf finds a pod's controller among the kinds with a scale:
// ReplicaSets (a Deployment's count as the Deployment), Deployments and
// StatefulSets (Kubernetes' finders).
func (c *Controller) scaleOf(p *corev1.Pod, ref *metav1.OwnerReference) (string, int32, bool) {
	ns := p.GetMetadata().GetNamespace()
	group, _, _ := strings.Cut(ref.GetApiVersion(), "/")
	if group != "apps" {
		return "", 0, false
	}
	switch ref.GetKind() {
	case "ReplicaSet":
		rs, ok := c.replicaSets.Store().GetByName(ns, ref.GetName())
		if !ok || rs.GetMetadata().GetUid() != ref.GetUid() {
			return "", 0, false
		}
		for _, o := range rs.GetMetadata().GetOwnerReferences() {
			if o.GetController() && o.GetKind() == "Deployment" {
				d, ok := c.deployments.Store().GetByName(ns, o.GetName())
				if !ok || d.GetMetadata().GetUid() != o.GetUid() {
					return "", 0, false
				}
				return d.GetMetadata().GetUid(), d.GetSpec().GetReplicas(), true
			}
		}
		return rs.GetMetadata().GetUid(), rs.GetSpec().GetReplicas(), true
	case "StatefulSet":
		ss, ok := c.statefulSets.Store().GetByName(ns, ref.GetName())
		if !ok || ss.GetMetadata().GetUid() != ref.GetUid() {
			return "", 0, false
		}
		return ss.GetMetadata().GetUid(), ss.GetSpec().GetReplicas(), true
	case "Deployment":
		d, ok := c.deployments.Store().GetByName(ns, ref.GetName())
		if !ok || d.GetMetadata().GetUid() != ref.GetUid() {
			return "", 0, false
		}
		return d.GetMetadata().GetUid(), d.GetSpec().GetReplicas(), true
	}
	return "", 0, false
}

// Reconcile writes one budget's status, and looks again when an entry of
// its disruptedPods expires.
func (c *Controller) Reconcile(ctx context.Context, key string) (controller.Result, error) {
	ns, name, err := controller.SplitKey(key)
	if err != nil {
		return controller.Result{}, controller.Terminal(err)
	}
	pdb, ok := c.pdbs.Store().GetByName(ns, name)
	if !ok || pdb.GetMetadata().GetDeletionTimestamp() != nil {
		return controller.Result{}, nil
	}
	now := c.clock.Now()
	var res controller.Result
	st, err := c.compute(pdb, &res)
	if err != nil {
		c.recorder.Eventf(pdb, "Warning", "CalculateExpectedPodCountFailed", "Failed to calculate the number of expected pods: %v", err)
		st = FailSafe(pdb, err, now)
	}
	if proto.Equal(st, pdb.GetStatus()) {
		return res, nil
	}
	next := proto.Clone(pdb).(*policyv1.PodDisruptionBudget)
	next.Status = st
	if _, uerr := c.client.UpdateStatus(ctx, next); uerr != nil {
		if apierrors.IsNotFound(uerr) {
			return controller.Result{}, nil
		}
		return controller.Result{}, fmt.Errorf("update status of poddisruptionbudget %s: %w", key, uerr)
	}
	return res, err
}

func (c *Controller) compute(pdb *policyv1.PodDisruptionBudget, res *controller.Result) (*policyv1.PodDisruptionBudgetStatus, error) {
	now := c.clock.Now()
	pods, err := c.podsOf(pdb)
	if err != nil {
		return nil, err
	}
	if len(pods) == 0 {
		c.recorder.Event(pdb, "Normal", "NoPods", "No matching pods found")
	}
	expected, desired, unmanaged, err := Expected(pdb, pods, c.scaleOf)
	if len(unmanaged) > 0 {
		c.recorder.Eventf(pdb, "Warning", "UnmanagedPods", "Pods selected by this PodDisruptionBudget (selector: %v) were found to be unmanaged. As a result, the status of the PDB cannot be calculated correctly, which may result in undefined behavior. To account for these pods please set \".spec.minAvailable\" field of the PDB to an integer value.", pdb.GetSpec().GetSelector())
	}
	if err != nil {
		return nil, err
	}
	disrupted, expired, recheck := DisruptedPods(pdb, pods, now)
	for _, name := range expired {
		c.log.Info("a pod the eviction subresource disrupted was not deleted in time", zap.String("pod", ns(pdb)+"/"+name), zap.String("pdb", informer.Key(pdb)))
		if p, ok := c.pods.Store().GetByName(ns(pdb), name); ok {
			c.recorder.Eventf(p, "Warning", "NotDeleted", "Pod was expected by PDB %s to be deleted but it wasn't", informer.Key(pdb))
		}
	}
	if !recheck.IsZero() {
		res.RequeueAfter = recheck.Sub(now)
	}
	current := CurrentHealthy(pods, disrupted, now)
	return Status(pdb, current, desired, expected, disrupted, now), nil
}

func ns(pdb *policyv1.PodDisruptionBudget) string { return pdb.GetMetadata().GetNamespace() }
