package apiserver

import (
	"context"
	"fmt"
	"slices"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"skiff.dev/internal/apierrors"
	"skiff.dev/internal/field"
	"skiff.dev/internal/kinds"
	"skiff.dev/internal/labels"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	policyv1 "skiff.dev/proto/policy/v1"
	"skiff.dev/services/apiserver/admission"
	"skiff.dev/services/apiserver/registry"
)

// The eviction subresource (Pods.Evict), as Kubernetes' EvictionREST
// (pkg/registry/core/pod/storage/eviction.go): a pod that has already
// been disrupted (terminal, pending, or being deleted) is deleted at
// once; else the one PodDisruptionBudget that selects it must allow a
// disruption, which the eviction takes (status.disruptionsAllowed - 1,
// the pod in status.disruptedPods) before deleting the pod with the
// Eviction's deleteOptions. The request is authorized as create on
// pods/eviction (server.Routes).

const (
	// evictionRetries bounds the conflict retries of the pod's deletion
	// and of the budget's status write (Kubernetes' EvictionsRetry steps).
	evictionRetries = 20
	// maxDisruptedPods is Kubernetes' MaxDisruptedPodSize: past it the
	// disruption controller is not keeping up, and evictions are refused.
	maxDisruptedPods = 2000
	// disruptionBudgetCause is the cause type of a refusal (policy/v1
	// DisruptionBudgetCause).
	disruptionBudgetCause = "DisruptionBudget"
	// evictionRefused is the message of every 429 of an eviction.
	evictionRefused = "Cannot evict pod as it would violate the pod's disruption budget."
)

// Evict implements corev1.PodsServer: the pods/eviction subresource.
func (p *podsServer) Evict(ctx context.Context, ev *corev1.Eviction) (*metav1.Status, error) {
	ns, name := ev.GetMetadata().GetNamespace(), ev.GetMetadata().GetName()
	if ns == "" {
		ns = "default"
	}
	if name == "" {
		return nil, apierrors.NewBadRequest("the pod to evict (metadata.name) is required")
	}
	e := &eviction{p: p, ns: ns, name: name, opts: ev.GetDeleteOptions()}
	if e.opts == nil {
		e.opts = &corev1.DeleteOptions{}
	}
	for _, d := range e.opts.GetDryRun() {
		if d != "All" {
			return nil, apierrors.NewInvalid("Eviction", name, field.ErrorList{field.NotSupported(field.NewPath("deleteOptions", "dryRun"), d, []string{"All"})})
		}
	}
	e.dryRun = len(e.opts.GetDryRun()) > 0
	if err := e.run(ctx); err != nil {
		return nil, err
	}
	return &metav1.Status{Status: "Success", Code: 201}, nil
}

type eviction struct {
	p        *podsServer
	ns, name string
	opts     *corev1.DeleteOptions
	dryRun   bool
}

func (e *eviction) run(ctx context.Context) error {
	// A pod that has already been disrupted goes without a budget's leave.
	// With no resourceVersion precondition of the caller's, the pod's
	// current one is enforced, so that a pod that became Running and Ready
	// since is not deleted without the budget; a conflict is retried.
	userRV := e.opts.GetPreconditions().GetResourceVersion() != ""
	var pod *corev1.Pod
	for attempt := 0; ; attempt++ {
		var err error
		if pod, err = e.p.reg.Get(ctx, e.ns, e.name); err != nil {
			return err
		}
		if !canIgnorePDB(pod) {
			break
		}
		opts := e.opts
		if shouldEnforceResourceVersion(pod) && !userRV {
			opts = withResourceVersion(opts, pod.GetMetadata().GetResourceVersion())
		}
		err = e.deletePod(ctx, opts)
		if err == nil || !apierrors.IsConflict(err) || userRV || attempt+1 >= evictionRetries {
			return err
		}
	}

	pdbs, err := e.budgets(ctx, pod)
	if err != nil {
		return err
	}
	if len(pdbs) > 1 {
		return &apierrors.StatusError{Status: &metav1.Status{
			Status:  "Failure",
			Message: "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.",
			Reason:  string(apierrors.ReasonInternalError),
			Code:    500,
		}}
	}
	// Guarded: the pod's deletion must not race with its becoming Ready.
	enforceRV := false
	if len(pdbs) == 1 {
		pdb := pdbs[0]
		guarded := true
		if !podReady(pod) {
			st := pdb.GetStatus()
			switch {
			case pdb.GetSpec().GetUnhealthyPodEvictionPolicy() == "AlwaysAllow":
				guarded = false
			case st.GetCurrentHealthy() >= st.GetDesiredHealthy() && st.GetDesiredHealthy() > 0:
				// The application is not disrupted now: deleting an
				// unready pod does not disrupt it.
				guarded = false
			}
		}
		if guarded {
			if err := e.takeDisruption(ctx, pdb, pod.GetMetadata().GetName()); err != nil {
				return err
			}
		} else {
			enforceRV = true
		}
	}
	opts := e.opts
	if enforceRV && !userRV {
		opts = withResourceVersion(opts, pod.GetMetadata().GetResourceVersion())
	}
	err = e.deletePod(ctx, opts)
	if err != nil && apierrors.IsConflict(err) && enforceRV && !userRV {
		// The pod changed (it may be Ready now): the client tries again.
		return tooManyRequests(10, fmt.Sprintf("The disruption budget %s is still being processed by the server.", pdbs[0].GetMetadata().GetName()))
	}
	return err
}

// takeDisruption checks the budget and takes one disruption from it
// (Kubernetes' checkAndDecrement), reading it again on a conflict.
func (e *eviction) takeDisruption(ctx context.Context, pdb *policyv1.PodDisruptionBudget, podName string) error {
	reg := e.p.budgetRegistry()
	pdbName := pdb.GetMetadata().GetName()
	for attempt := 0; ; attempt++ {
		if attempt > 0 {
			var err error
			if pdb, err = reg.Get(ctx, e.ns, pdbName); err != nil {
				return err
			}
		}
		st := pdb.GetStatus()
		if st.GetObservedGeneration() < pdb.GetMetadata().GetGeneration() {
			return tooManyRequests(10, fmt.Sprintf("The disruption budget %s is still being processed by the server.", pdbName))
		}
		if st.GetDisruptionsAllowed() < 0 {
			return apierrors.NewForbidden("poddisruptionbudget.policy", pdbName, fmt.Sprintf("poddisruptionbudget.policy %q is forbidden: pdb disruptions allowed is negative", pdbName))
		}
		if len(st.GetDisruptedPods()) > maxDisruptedPods {
			return apierrors.NewForbidden("poddisruptionbudget.policy", pdbName, fmt.Sprintf("poddisruptionbudget.policy %q is forbidden: DisruptedPods map too big - too many evictions not confirmed by PDB controller", pdbName))
		}
		if st.GetDisruptionsAllowed() == 0 {
			return tooManyRequests(0, fmt.Sprintf("The disruption budget %s needs %d healthy pods and has %d currently", pdbName, st.GetDesiredHealthy(), st.GetCurrentHealthy()))
		}
		if e.dryRun {
			return nil
		}
		next := proto.Clone(pdb).(*policyv1.PodDisruptionBudget)
		nst := next.Status
		nst.DisruptionsAllowed--
		now := timestamppb.New(e.p.now())
		if nst.DisruptionsAllowed == 0 {
			setDisruptionAllowedCondition(nst, now)
		}
		if nst.DisruptedPods == nil {
			nst.DisruptedPods = map[string]*timestamppb.Timestamp{}
		}
		nst.DisruptedPods[podName] = now
		_, err := reg.UpdateStatus(ctx, next)
		if err == nil || !apierrors.IsConflict(err) {
			return err
		}
		if attempt+1 >= evictionRetries {
			return apierrors.NewTimeout(fmt.Sprintf("couldn't update PodDisruptionBudget %q due to conflicts", pdbName))
		}
	}
}

// setDisruptionAllowedCondition sets the DisruptionAllowed condition from
// st.disruptionsAllowed (Kubernetes' UpdateDisruptionAllowedCondition, as
// the disruption controller sets it):
// True SufficientPods when a disruption is allowed, else False
// InsufficientPods; the transition time changes with the status.
func setDisruptionAllowedCondition(st *policyv1.PodDisruptionBudgetStatus, now *timestamppb.Timestamp) {
	c := &metav1.Condition{Type: "DisruptionAllowed", Status: "False", Reason: "InsufficientPods", LastTransitionTime: now, ObservedGeneration: st.GetObservedGeneration()}
	if st.GetDisruptionsAllowed() > 0 {
		c.Status, c.Reason = "True", "SufficientPods"
	}
	for i, old := range st.Conditions {
		if old.GetType() == c.Type {
			if old.GetStatus() == c.Status {
				c.LastTransitionTime = old.GetLastTransitionTime()
			}
			st.Conditions[i] = c
			return
		}
	}
	st.Conditions = append(st.Conditions, c)
}

// budgets are the PodDisruptionBudgets of pod's namespace whose selector
// matches it (an empty selector matches every pod, as in policy/v1; a
// budget with an unparsable one is skipped).
func (e *eviction) budgets(ctx context.Context, pod *corev1.Pod) ([]*policyv1.PodDisruptionBudget, error) {
	res, err := e.p.budgetRegistry().List(ctx, &metav1.ListOptions{Namespace: e.ns})
	if err != nil {
		return nil, err
	}
	all, err := res.Objects()
	if err != nil {
		return nil, err
	}
	var out []*policyv1.PodDisruptionBudget
	for _, pdb := range all {
		sel, err := labels.FromProto(pdb.GetSpec().GetSelector())
		if err != nil || !sel.Matches(pod.GetMetadata().GetLabels()) {
			continue
		}
		out = append(out, pdb)
	}
	return out, nil
}

// deletePod marks the pod DisruptionTarget (reason EvictionByEvictionAPI)
// and deletes it with opts; a resourceVersion precondition follows the
// condition's own write.
func (e *eviction) deletePod(ctx context.Context, opts *corev1.DeleteOptions) error {
	pre := opts.GetPreconditions()
	if e.dryRun {
		pod, err := e.p.reg.Get(ctx, e.ns, e.name)
		if err != nil {
			return err
		}
		return checkPodPreconditions(e.name, pod, pre)
	}
	updated, err := e.p.reg.GuaranteedUpdate(ctx, registry.Subresource{Name: "eviction", Operation: admission.Create}, e.ns, e.name, pre, func(cur *corev1.Pod) (*corev1.Pod, error) {
		next := proto.Clone(cur).(*corev1.Pod)
		if next.Status == nil {
			next.Status = &corev1.PodStatus{}
		}
		setPodCondition(next.Status, &corev1.PodCondition{Type: "DisruptionTarget", Status: "True", Reason: "EvictionByEvictionAPI", Message: "Eviction API: evicting", LastTransitionTime: timestamppb.New(e.p.now())})
		if proto.Equal(next, cur) {
			return cur, nil
		}
		return next, nil
	})
	if err != nil {
		return err
	}
	if pre.GetResourceVersion() != "" {
		pre = &metav1.Preconditions{Uid: pre.GetUid(), ResourceVersion: updated.GetMetadata().GetResourceVersion()}
	}
	_, err = e.p.reg.Delete(ctx, &metav1.DeleteRequest{
		Namespace:          e.ns,
		Name:               e.name,
		Preconditions:      pre,
		PropagationPolicy:  opts.GetPropagationPolicy(),
		GracePeriodSeconds: opts.GracePeriodSeconds,
	})
	return err
}

func checkPodPreconditions(name string, pod *corev1.Pod, pre *metav1.Preconditions) error {
	m := pod.GetMetadata()
	if uid := pre.GetUid(); uid != "" && uid != m.GetUid() {
		return apierrors.NewConflict("pods", name, fmt.Sprintf("Precondition failed: UID in precondition: %s, UID in object meta: %s", uid, m.GetUid()))
	}
	if rv := pre.GetResourceVersion(); rv != "" && rv != m.GetResourceVersion() {
		return apierrors.NewConflict("pods", name, fmt.Sprintf("Precondition failed: ResourceVersion in precondition: %s, ResourceVersion in object meta: %s", rv, m.GetResourceVersion()))
	}
	return nil
}

// budgetRegistry is the PodDisruptionBudgets' registry (looked up on use:
// they are installed after the Pods).
func (p *podsServer) budgetRegistry() *registry.Registry[*policyv1.PodDisruptionBudget] {
	return registryOf[*policyv1.PodDisruptionBudget](p.server, kinds.MustGet("policy", "v1", "PodDisruptionBudget"))
}

// canIgnorePDB: a pod that is terminal, pending or already being deleted
// has caused its disruption already.
func canIgnorePDB(pod *corev1.Pod) bool {
	switch pod.GetStatus().GetPhase() {
	case "Succeeded", "Failed", "Pending", "":
		return true
	}
	return pod.GetMetadata().GetDeletionTimestamp() != nil
}

// shouldEnforceResourceVersion: but for terminal pods and pods being
// deleted, the deletion must not race with the pod becoming Ready.
func shouldEnforceResourceVersion(pod *corev1.Pod) bool {
	switch pod.GetStatus().GetPhase() {
	case "Succeeded", "Failed":
		return false
	}
	return pod.GetMetadata().GetDeletionTimestamp() == nil
}

func withResourceVersion(o *corev1.DeleteOptions, rv string) *corev1.DeleteOptions {
	c := proto.Clone(o).(*corev1.DeleteOptions)
	if c.Preconditions == nil {
		c.Preconditions = &metav1.Preconditions{}
	}
	c.Preconditions.ResourceVersion = rv
	return c
}

func podReady(pod *corev1.Pod) bool {
	i := slices.IndexFunc(pod.GetStatus().GetConditions(), func(c *corev1.PodCondition) bool { return c.GetType() == "Ready" })
	return i >= 0 && pod.GetStatus().GetConditions()[i].GetStatus() == "True"
}

// tooManyRequests is an eviction's refusal: 429 with the budget's cause.
func tooManyRequests(retryAfter int32, cause string) error {
	err := apierrors.NewTooManyRequests(evictionRefused, retryAfter)
	err.Status.Details.Causes = append(err.Status.Details.Causes, &metav1.StatusCause{Reason: disruptionBudgetCause, Message: cause})
	return err
}
