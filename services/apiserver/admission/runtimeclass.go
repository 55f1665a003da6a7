package admission

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"google.golang.org/protobuf/proto"

	"skiff.dev/internal/apierrors"
	"skiff.dev/internal/client"
	"skiff.dev/internal/quantity"
	corev1 "skiff.dev/proto/core/v1"
	nodev1 "skiff.dev/proto/node/v1"
)

// RuntimeClassName is the plugin's flag name.
const RuntimeClassName = "RuntimeClass"

// runtimeClass is Kubernetes' RuntimeClass plugin. A pod created with
// spec.runtimeClassName gets its class's overhead.podFixed as
// spec.overhead (refused when the pod gives another), the class's
// scheduling.nodeSelector merged into its own (refused on a conflicting
// value) and the class's tolerations added; a class that does not exist is
// refused. Validate then refuses an overhead that is not the class's, or
// one set without a class that defines it. The node agent runs the pod
// with the class's handler; the scheduler and ResourceQuota count the
// overhead in its requests.
//
// The class is read from the API on each such create (not an informer):
// pods naming a class are few, and a class made a moment before its pods
// must count.
type runtimeClass struct {
	client *client.Resource[*nodev1.RuntimeClass, *nodev1.RuntimeClassList]
}

func newRuntimeClass(d *Deps) (any, error) {
	return &runtimeClass{client: client.RuntimeClasses(d.Loopback)}, nil
}

// pod is the pod being created and its RuntimeClass (nil without one); ok
// is false for any other request.
func (p *runtimeClass) pod(ctx context.Context, a *Attributes) (pod *corev1.Pod, rc *nodev1.RuntimeClass, ok bool, err error) {
	if a.Operation != Create || !a.resourceIs("", "pods") {
		return nil, nil, false, nil
	}
	if pod, ok = a.Object.(*corev1.Pod); !ok {
		return nil, nil, false, nil
	}
	if pod.Spec == nil {
		pod.Spec = &corev1.PodSpec{}
	}
	name := pod.Spec.GetRuntimeClassName()
	if name == "" { // unset; "" is validation's to refuse
		return pod, nil, true, nil
	}
	rc, err = p.client.Get(ctx, "", name)
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil, false, a.Forbidden("pod rejected: RuntimeClass %q not found", name)
	case err != nil:
		return nil, nil, false, apierrors.NewInternal(fmt.Errorf("%s: reading runtimeclass %q: %w", RuntimeClassName, name, err))
	}
	return pod, rc, true, nil
}

func (p *runtimeClass) Admit(ctx context.Context, a *Attributes) error {
	pod, rc, ok, err := p.pod(ctx, a)
	if err != nil || !ok || rc == nil {
		return err
	}
	if fixed := rc.GetOverhead().GetPodFixed(); rc.GetOverhead() != nil {
		if pod.Spec.Overhead != nil && !sameQuantities(fixed, pod.Spec.Overhead) {
			return a.Forbidden("pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead")
		}
		pod.Spec.Overhead = maps.Clone(fixed)
	}
	if s := rc.GetScheduling(); s != nil {
		for _, key := range slices.Sorted(maps.Keys(s.GetNodeSelector())) {
			want := s.GetNodeSelector()[key]
			if got, ok := pod.Spec.NodeSelector[key]; ok && got != want {
				return a.Forbidden("conflict: runtimeClass.scheduling.nodeSelector[%s] = %s; pod.spec.nodeSelector[%s] = %s", key, want, key, got)
			}
		}
		if len(s.GetNodeSelector()) > 0 {
			if pod.Spec.NodeSelector == nil {
				pod.Spec.NodeSelector = map[string]string{}
			}
			maps.Copy(pod.Spec.NodeSelector, s.GetNodeSelector())
		}
		pod.Spec.Tolerations = mergeTolerations(pod.Spec.Tolerations, s.GetTolerations())
	}
	return nil
}

func (p *runtimeClass) Validate(ctx context.Context, a *Attributes) error {
	pod, rc, ok, err := p.pod(ctx, a)
	if err != nil || !ok {
		return err
	}
	if rc != nil && rc.GetOverhead() != nil {
		if !sameQuantities(rc.GetOverhead().GetPodFixed(), pod.Spec.GetOverhead()) {
			return a.Forbidden("pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead")
		}
	} else if pod.Spec.Overhead != nil {
		return a.Forbidden("pod rejected: Pod Overhead set without corresponding RuntimeClass defined Overhead")
	}
	return nil
}

// sameQuantities says whether two resource lists are equal as quantities
// ("0.25" is "250m"), as Kubernetes' semantic equality has it.
func sameQuantities(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, av := range a {
		bv, ok := b[k]
		if !ok {
			return false
		}
		if av == bv {
			continue
		}
		aq, err1 := quantity.Parse(av)
		bq, err2 := quantity.Parse(bv)
		if err1 != nil || err2 != nil || aq.Cmp(bq) != 0 {
			return false
		}
	}
	return true
}

// mergeTolerations adds to the pod's tolerations those of add that none of
// them already covers, as Kubernetes' MergeTolerations keeps the superset.
func mergeTolerations(pod, add []*corev1.Toleration) []*corev1.Toleration {
	out := pod
	for _, t := range add {
		covered := false
		for _, have := range out {
			if proto.Equal(have, t) || tolerationCovers(have, t) {
				covered = true
				break
			}
		}
		if !covered {
			out = append(out, proto.Clone(t).(*corev1.Toleration))
		}
	}
	return out
}

// tolerationCovers says whether ss tolerates every taint t does
// (Kubernetes' isSuperset).
func tolerationCovers(ss, t *corev1.Toleration) bool {
	if ss.GetKey() != t.GetKey() && ss.GetKey() != "" {
		return false
	}
	if ss.GetKey() == "" && ss.GetOperator() != "Exists" {
		return false
	}
	if ss.GetEffect() != "" && ss.GetEffect() != t.GetEffect() {
		return false
	}
	if ss.GetEffect() == "NoExecute" || ss.GetEffect() == "" {
		switch {
		case ss.TolerationSeconds == nil:
		case t.TolerationSeconds == nil || ss.GetTolerationSeconds() < t.GetTolerationSeconds():
			return false
		}
	}
	switch ss.GetOperator() {
	case "Exists":
		return true
	case "Equal", "":
		return (t.GetOperator() == "Equal" || t.GetOperator() == "") && ss.GetValue() == t.GetValue()
	}
	return false
}
