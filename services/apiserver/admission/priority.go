package admission

import (
	"context"
	"fmt"

	"skiff.dev/internal/apierrors"
	"skiff.dev/internal/client"
	"skiff.dev/internal/defaults"
	"skiff.dev/internal/informer"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	schedulingv1 "skiff.dev/proto/scheduling/v1"
)

// PriorityName is the plugin's flag name.
const PriorityName = "Priority"

// priority is Kubernetes' Priority plugin. A pod being created gets
// spec.priority and spec.preemptionPolicy from the PriorityClass its
// spec.priorityClassName names, or, naming none, from the global default
// class (whose name it also gets), or priority 0 when there is none; an
// unknown class is refused, and so is a priority or preemption policy the
// pod gives that differs from its class's. An update keeps the pod's
// priority and policy. At most one PriorityClass is the global default.
//
// One difference from Kubernetes: the pod defaults run before admission
// and set spec.priority 0 when it is unset, so a pod that says priority 0
// is taken as saying nothing (Kubernetes refuses it when its class gives
// another value).
type priority struct {
	informer *informer.Informer[*schedulingv1.PriorityClass]
	client   *client.Resource[*schedulingv1.PriorityClass, *schedulingv1.PriorityClassList]
}

func newPriority(d *Deps) (any, error) {
	c := client.PriorityClasses(d.Loopback)
	return &priority{informer: informer.For(d.Informers, c), client: c}, nil
}

func (p *priority) Admit(ctx context.Context, a *Attributes) error {
	if !a.resourceIs("", "pods") {
		return nil
	}
	pod, ok := a.Object.(*corev1.Pod)
	if !ok {
		return nil
	}
	if pod.Spec == nil {
		pod.Spec = &corev1.PodSpec{}
	}
	switch a.Operation {
	case Update:
		// The plugin set them at create; they stay (validation refuses
		// other changes of the spec anyway).
		if old, ok := a.OldObject.(*corev1.Pod); ok {
			pod.Spec.Priority = old.GetSpec().Priority
			pod.Spec.PreemptionPolicy = old.GetSpec().PreemptionPolicy
		}
		return nil
	case Create:
	default:
		return nil
	}
	var value int32
	var policy *string
	if name := pod.Spec.PriorityClassName; name == "" {
		def, err := p.defaultClass(ctx)
		if err != nil {
			return err
		}
		if def != nil {
			pod.Spec.PriorityClassName = def.GetMetadata().GetName()
			value, policy = def.GetValue(), def.PreemptionPolicy
		} else {
			lower := defaults.PreemptLowerPriority
			policy = &lower
		}
	} else {
		pc, err := p.get(ctx, name)
		if apierrors.IsNotFound(err) {
			return a.Forbidden("no PriorityClass with name %v was found", name)
		}
		if err != nil {
			return err
		}
		value, policy = pc.GetValue(), pc.PreemptionPolicy
	}
	if given := pod.Spec.Priority; given != nil && *given != 0 && *given != value {
		return a.Forbidden("the integer value of priority (%d) must not be provided in pod spec; priority admission controller computed %d from the given PriorityClass name", *given, value)
	}
	pod.Spec.Priority = &value
	if policy != nil {
		if given := pod.Spec.PreemptionPolicy; given != nil && *given != *policy {
			return a.Forbidden("the string value of PreemptionPolicy (%s) must not be provided in pod spec; priority admission controller computed %s from the given PriorityClass name", *given, *policy)
		}
		v := *policy
		pod.Spec.PreemptionPolicy = &v
	}
	return nil
}

// Validate refuses a second global default PriorityClass: a class made the
// default (created so, or changed to be) while another one is.
func (p *priority) Validate(ctx context.Context, a *Attributes) error {
	if (a.Operation != Create && a.Operation != Update) || !a.resourceIs("scheduling.k8s.io", "priorityclasses") {
		return nil
	}
	pc, ok := a.Object.(*schedulingv1.PriorityClass)
	if !ok || !pc.GetGlobalDefault() {
		return nil
	}
	// Read from the API: two defaults made a moment apart must not both
	// pass because the informer had not seen the first yet.
	list, err := p.client.List(ctx, &metav1.ListOptions{})
	if err != nil {
		return apierrors.NewInternal(fmt.Errorf("%s: listing priorityclasses: %w", PriorityName, err))
	}
	def := globalDefault(list.GetItems())
	if def != nil && (a.Operation == Create || def.GetMetadata().GetName() != pc.GetMetadata().GetName()) {
		return a.Forbidden("PriorityClass %v is already marked as default. Only one default can exist", def.GetMetadata().GetName())
	}
	return nil
}

// globalDefault is the default among classes: of those marked
// globalDefault (more than one may be after a race), the one with the
// lowest value, as Kubernetes picks; nil when none is.
func globalDefault(classes []*schedulingv1.PriorityClass) *schedulingv1.PriorityClass {
	var best *schedulingv1.PriorityClass
	for _, pc := range classes {
		if pc.GetGlobalDefault() && (best == nil || pc.GetValue() < best.GetValue()) {
			best = pc
		}
	}
	return best
}

func (p *priority) defaultClass(ctx context.Context) (*schedulingv1.PriorityClass, error) {
	if err := waitSynced(ctx, PriorityName, p.informer); err != nil {
		return nil, err
	}
	return globalDefault(p.informer.Store().List()), nil
}

// get reads a class from the informer, or from the API when the informer
// has not seen it (a class applied together with its pods).
func (p *priority) get(ctx context.Context, name string) (*schedulingv1.PriorityClass, error) {
	if err := waitSynced(ctx, PriorityName, p.informer); err != nil {
		return nil, err
	}
	if pc, ok := p.informer.Store().GetByName("", name); ok {
		return pc, nil
	}
	pc, err := p.client.Get(ctx, "", name)
	if apierrors.IsNotFound(err) {
		return nil, err
	}
	if err != nil {
		return nil, apierrors.NewInternal(fmt.Errorf("%s: reading PriorityClass %q: %w", PriorityName, name, err))
	}
	return pc, nil
}
