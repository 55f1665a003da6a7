package validation

import (
	"skiff.dev/internal/field"
	appsv1 "skiff.dev/proto/apps/v1"
	metav1 "skiff.dev/proto/meta/v1"
)

var daemonSetStrategies = []string{"RollingUpdate", "OnDelete"}

// DaemonSet validates an apps/v1 DaemonSet being created, as Kubernetes'
// ValidateDaemonSet: metadata (a DNS subdomain name), a non-empty selector
// matching the template's labels, the template (restartPolicy Always, no
// activeDeadlineSeconds), minReadySeconds, revisionHistoryLimit and the
// update strategy.
func DaemonSet(ds *appsv1.DaemonSet) field.ErrorList {
	if ds == nil {
		ds = &appsv1.DaemonSet{}
	}
	errs := ObjectMeta(ds.Metadata, true, NameIsDNSSubdomain, field.NewPath("metadata"))
	return append(errs, daemonSetSpec(ds.Spec, field.NewPath("spec"))...)
}

// DaemonSetUpdate validates an update of a DaemonSet: immutable metadata,
// the new spec as on create and an unchanged spec.selector.
func DaemonSetUpdate(newDS, oldDS *appsv1.DaemonSet) field.ErrorList {
	errs := ObjectMetaUpdate(newDS.GetMetadata(), oldDS.GetMetadata(), field.NewPath("metadata"))
	errs = append(errs, DaemonSet(newDS)...)
	return append(errs, immutableSelector(newDS.GetSpec().GetSelector(), oldDS.GetSpec().GetSelector())...)
}

func daemonSetSpec(s *appsv1.DaemonSetSpec, p *field.Path) field.ErrorList {
	if s == nil {
		s = &appsv1.DaemonSetSpec{}
	}
	errs := workloadSelectorAndTemplate(s.Selector, s.Template, p, "daemonset")
	errs = append(errs, nonNegative(int64(s.MinReadySeconds), p.Child("minReadySeconds"))...)
	if v := s.RevisionHistoryLimit; v != nil {
		errs = append(errs, nonNegative(int64(*v), p.Child("revisionHistoryLimit"))...)
	}
	return append(errs, daemonSetUpdateStrategy(s.UpdateStrategy, p.Child("updateStrategy"))...)
}

// daemonSetUpdateStrategy is Kubernetes' ValidateDaemonSetUpdateStrategy:
// OnDelete, or RollingUpdate whose bounds are each a non-negative integer
// or a percentage of at most 100%, exactly one of them non-zero.
func daemonSetUpdateStrategy(st *appsv1.DaemonSetUpdateStrategy, p *field.Path) field.ErrorList {
	if st == nil {
		st = &appsv1.DaemonSetUpdateStrategy{}
	}
	switch st.Type {
	case "OnDelete":
		return nil
	case "RollingUpdate":
		if st.RollingUpdate == nil {
			return field.ErrorList{field.Required(p.Child("rollingUpdate"), "")}
		}
		return rollingUpdateDaemonSet(st.RollingUpdate, p.Child("rollingUpdate"))
	default:
		return field.ErrorList{field.NotSupported(p, st.Type, daemonSetStrategies)}
	}
}

func rollingUpdateDaemonSet(ru *appsv1.RollingUpdateDaemonSet, p *field.Path) field.ErrorList {
	up, sp := p.Child("maxUnavailable"), p.Child("maxSurge")
	errs := intOrPercent(ru.MaxUnavailable, up)
	errs = append(errs, intOrPercent(ru.MaxSurge, sp)...)
	errs = append(errs, notMoreThan100Percent(ru.MaxUnavailable, up)...)
	errs = append(errs, notMoreThan100Percent(ru.MaxSurge, sp)...)
	u, _ := intOrPercentValue(ru.MaxUnavailable)
	s, _ := intOrPercentValue(ru.MaxSurge)
	switch {
	case u != 0 && s != 0:
		errs = append(errs, field.Invalid(sp, intOrStringValue(ru.MaxSurge), "may not be set when maxUnavailable is non-zero"))
	case u == 0 && s == 0:
		errs = append(errs, field.Required(up, "cannot be 0 when maxSurge is 0"))
	}
	return errs
}

func notMoreThan100Percent(v *metav1.IntOrString, p *field.Path) field.ErrorList {
	if n, pct := intOrPercentValue(v); pct && n > 100 {
		return field.ErrorList{field.Invalid(p, intOrStringValue(v), "must not be greater than 100%")}
	}
	return nil
}
