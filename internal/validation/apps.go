package validation

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"google.golang.org/protobuf/proto"
	"skiff.dev/internal/field"
	"skiff.dev/internal/labels"
	appsv1 "skiff.dev/proto/apps/v1"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
)

var deploymentStrategies = []string{"Recreate", "RollingUpdate"}

// Deployment validates an apps/v1 Deployment being created: metadata, a
// non-empty selector that matches the pod template's labels, the template
// (restartPolicy Always), the strategy and its rolling-update bounds, and
// the counters (replicas, minReadySeconds, revisionHistoryLimit,
// progressDeadlineSeconds > minReadySeconds).
func Deployment(d *appsv1.Deployment) field.ErrorList {
	if d == nil {
		d = &appsv1.Deployment{}
	}
	errs := ObjectMeta(d.Metadata, true, NameIsDNSSubdomain, field.NewPath("metadata"))
	s := d.Spec
	if s == nil {
		s = &appsv1.DeploymentSpec{}
	}
	p := field.NewPath("spec")
	if s.Replicas != nil {
		errs = append(errs, nonNegative(int64(*s.Replicas), p.Child("replicas"))...)
	}
	errs = append(errs, workloadSelectorAndTemplate(s.Selector, s.Template, p, "deployment")...)
	errs = append(errs, deploymentStrategy(s.Strategy, p.Child("strategy"))...)
	errs = append(errs, nonNegative(int64(s.MinReadySeconds), p.Child("minReadySeconds"))...)
	if v := s.RevisionHistoryLimit; v != nil {
		errs = append(errs, nonNegative(int64(*v), p.Child("revisionHistoryLimit"))...)
	}
	if v := s.ProgressDeadlineSeconds; v != nil {
		pp := p.Child("progressDeadlineSeconds")
		errs = append(errs, nonNegative(int64(*v), pp)...)
		if *v <= s.MinReadySeconds {
			errs = append(errs, field.Invalid(pp, *v, "must be greater than minReadySeconds"))
		}
	}
	return errs
}

// DeploymentUpdate validates an update of a Deployment: the new object as
// on create, immutable metadata, and an unchanged spec.selector.
func DeploymentUpdate(newD, oldD *appsv1.Deployment) field.ErrorList {
	errs := ObjectMetaUpdate(newD.GetMetadata(), oldD.GetMetadata(), field.NewPath("metadata"))
	errs = append(errs, Deployment(newD)...)
	return append(errs, immutableSelector(newD.GetSpec().GetSelector(), oldD.GetSpec().GetSelector())...)
}

// ReplicaSet validates an apps/v1 ReplicaSet being created: metadata, a
// non-empty selector that matches the pod template's labels, the template
// (restartPolicy Always), replicas and minReadySeconds.
func ReplicaSet(rs *appsv1.ReplicaSet) field.ErrorList {
	if rs == nil {
		rs = &appsv1.ReplicaSet{}
	}
	errs := ObjectMeta(rs.Metadata, true, NameIsDNSSubdomain, field.NewPath("metadata"))
	s := rs.Spec
	if s == nil {
		s = &appsv1.ReplicaSetSpec{}
	}
	p := field.NewPath("spec")
	if s.Replicas != nil {
		errs = append(errs, nonNegative(int64(*s.Replicas), p.Child("replicas"))...)
	}
	errs = append(errs, nonNegative(int64(s.MinReadySeconds), p.Child("minReadySeconds"))...)
	return append(errs, workloadSelectorAndTemplate(s.Selector, s.Template, p, "replicaset")...)
}

// ReplicaSetUpdate validates an update of a ReplicaSet: the new object as
// on create, immutable metadata, and an unchanged spec.selector.
func ReplicaSetUpdate(newRS, oldRS *appsv1.ReplicaSet) field.ErrorList {
	errs := ObjectMetaUpdate(newRS.GetMetadata(), oldRS.GetMetadata(), field.NewPath("metadata"))
	errs = append(errs, ReplicaSet(newRS)...)
	return append(errs, immutableSelector(newRS.GetSpec().GetSelector(), oldRS.GetSpec().GetSelector())...)
}

func immutableSelector(newSel, oldSel *metav1.LabelSelector) field.ErrorList {
	if !proto.Equal(newSel, oldSel) {
		return field.ErrorList{field.Invalid(field.NewPath("spec", "selector"), selectorString(newSel), fieldImmutableErrorMsg)}
	}
	return nil
}

// workloadSelectorAndTemplate validates the selector and pod template of a
// workload at spec: the selector is required, valid and non-empty, and the
// template's labels must match it (else the workload would create pods it
// does not count and create more, forever).
func workloadSelectorAndTemplate(sel *metav1.LabelSelector, t *corev1.PodTemplateSpec, spec *field.Path, kind string) field.ErrorList {
	var errs field.ErrorList
	sp := spec.Child("selector")
	var selector labels.Selector
	selectorOK := false
	if sel == nil {
		errs = append(errs, field.Required(sp, ""))
	} else if selErrs := LabelSelector(sel, sp); len(selErrs) > 0 {
		errs = append(errs, selErrs...)
	} else if s, err := labels.FromProto(sel); err != nil {
		// LabelSelector checks all FromProto does; should they ever
		// disagree, the selector is still rejected.
		errs = append(errs, field.Invalid(sp, selectorString(sel), err.Error()))
	} else if s.Empty() {
		errs = append(errs, field.Invalid(sp, selectorString(sel), "empty selector is invalid for "+kind))
	} else {
		selector, selectorOK = s, true
	}
	tp := spec.Child("template")
	if t == nil {
		return append(errs, field.Required(tp, ""))
	}
	templateLabels := t.Metadata.GetLabels()
	if selectorOK && !selector.Matches(templateLabels) {
		errs = append(errs, field.Invalid(tp.Child("metadata", "labels"), labelsString(templateLabels), "`selector` does not match template `labels`"))
	}
	errs = append(errs, podTemplateSpec(t, tp)...)
	if rp := t.Spec.GetRestartPolicy(); rp != "" && rp != "Always" {
		errs = append(errs, field.NotSupported(tp.Child("spec", "restartPolicy"), rp, []string{"Always"}))
	}
	if t.Spec != nil && t.Spec.ActiveDeadlineSeconds != nil {
		errs = append(errs, field.Forbidden(tp.Child("spec", "activeDeadlineSeconds"), "activeDeadlineSeconds in "+kind+" is not Supported"))
	}
	return errs
}

// podTemplateSpec validates a pod template: its metadata's labels and
// annotations (a template has no name or namespace of its own) and its
// pod spec.
func podTemplateSpec(t *corev1.PodTemplateSpec, p *field.Path) field.ErrorList {
	mp := p.Child("metadata")
	errs := Labels(t.Metadata.GetLabels(), mp.Child("labels"))
	errs = append(errs, annotations(t.Metadata.GetAnnotations(), mp.Child("annotations"))...)
	if len(t.GetSpec().GetEphemeralContainers()) > 0 {
		errs = append(errs, field.Forbidden(p.Child("spec", "ephemeralContainers"), "ephemeral containers not allowed in pod template"))
	}
	return append(errs, PodSpec(t.Spec, p.Child("spec"))...)
}

func deploymentStrategy(st *appsv1.DeploymentStrategy, p *field.Path) field.ErrorList {
	if st == nil {
		st = &appsv1.DeploymentStrategy{}
	}
	switch st.Type {
	case "Recreate":
		if st.RollingUpdate != nil {
			return field.ErrorList{field.Forbidden(p.Child("rollingUpdate"), "may not be specified when strategy `type` is 'Recreate'")}
		}
	case "RollingUpdate":
		if st.RollingUpdate == nil {
			return field.ErrorList{field.Required(p.Child("rollingUpdate"), "this should be defaulted and never be nil")}
		}
		return rollingUpdate(st.RollingUpdate, p.Child("rollingUpdate"))
	default:
		return supported(st.Type, deploymentStrategies, p.Child("type"))
	}
	return nil
}

// rollingUpdate validates maxUnavailable and maxSurge: each a non-negative
// integer or a percentage, not both zero (the rollout could not make
// progress), and maxUnavailable at most 100%.
func rollingUpdate(ru *appsv1.RollingUpdateDeployment, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	up, sp := p.Child("maxUnavailable"), p.Child("maxSurge")
	errs = append(errs, intOrPercent(ru.MaxUnavailable, up)...)
	errs = append(errs, intOrPercent(ru.MaxSurge, sp)...)
	u, uPct := intOrPercentValue(ru.MaxUnavailable)
	s, _ := intOrPercentValue(ru.MaxSurge)
	if u == 0 && s == 0 {
		errs = append(errs, field.Invalid(up, intOrStringValue(ru.MaxUnavailable), "may not be 0 when `maxSurge` is 0"))
	}
	if uPct && u > 100 {
		errs = append(errs, field.Invalid(up, intOrStringValue(ru.MaxUnavailable), "must not be greater than 100%"))
	}
	return errs
}

func intOrPercent(v *metav1.IntOrString, p *field.Path) field.ErrorList {
	switch x := v.GetValue().(type) {
	case *metav1.IntOrString_IntVal:
		return nonNegative(int64(x.IntVal), p)
	case *metav1.IntOrString_StrVal:
		return invalidEach(p, x.StrVal, isValidPercent(x.StrVal))
	}
	return nil
}

// intOrPercentValue is the number an IntOrString holds and whether it is a
// percentage. Unset and malformed values count as 0; a percentage too big
// for an int64 saturates.
func intOrPercentValue(v *metav1.IntOrString) (int64, bool) {
	switch x := v.GetValue().(type) {
	case *metav1.IntOrString_IntVal:
		return int64(x.IntVal), false
	case *metav1.IntOrString_StrVal:
		if len(isValidPercent(x.StrVal)) > 0 {
			return 0, false
		}
		n, err := strconv.ParseInt(strings.TrimSuffix(x.StrVal, "%"), 10, 64)
		if err != nil {
			return math.MaxInt64, true
		}
		return n, true
	}
	return 0, false
}

func intOrStringValue(v *metav1.IntOrString) any {
	switch x := v.GetValue().(type) {
	case *metav1.IntOrString_IntVal:
		return x.IntVal
	case *metav1.IntOrString_StrVal:
		return x.StrVal
	}
	return "null"
}

// selectorString renders a selector the way kubectl prints one.
func selectorString(sel *metav1.LabelSelector) string {
	if sel == nil {
		return "null"
	}
	var parts []string
	for _, k := range sortedKeys(sel.MatchLabels) {
		parts = append(parts, k+"="+sel.MatchLabels[k])
	}
	for _, r := range sel.MatchExpressions {
		parts = append(parts, fmt.Sprintf("%s %s (%s)", r.GetKey(), r.GetOperator(), strings.Join(r.GetValues(), ",")))
	}
	return "{" + strings.Join(parts, ",") + "}"
}

func labelsString(labels map[string]string) string {
	parts := make([]string, 0, len(labels))
	for _, k := range sortedKeys(labels) {
		parts = append(parts, k+"="+labels[k])
	}
	return "{" + strings.Join(parts, ",") + "}"
}
