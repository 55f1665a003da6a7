package validation

import (
	"slices"

	"skiff.dev/internal/field"
	metav1 "skiff.dev/proto/meta/v1"
)

// LabelSelector validates a label selector: matchLabels as labels, and
// each matchExpressions requirement's key, operator (In and NotIn need
// values, Exists and DoesNotExist take none) and values. A nil selector is
// valid here; kinds that need one say so.
func LabelSelector(sel *metav1.LabelSelector, path *field.Path) field.ErrorList {
	if sel == nil {
		return nil
	}
	errs := Labels(sel.MatchLabels, path.Child("matchLabels"))
	for i, r := range sel.MatchExpressions {
		errs = append(errs, labelSelectorRequirement(r, path.Child("matchExpressions").Index(i))...)
	}
	return errs
}

func labelSelectorRequirement(r *metav1.LabelSelectorRequirement, p *field.Path) field.ErrorList {
	if r == nil {
		return field.ErrorList{field.Required(p, "")}
	}
	var errs field.ErrorList
	switch r.Operator {
	case "In", "NotIn":
		if len(r.Values) == 0 {
			errs = append(errs, field.Required(p.Child("values"), "must be specified when `operator` is 'In' or 'NotIn'"))
		}
	case "Exists", "DoesNotExist":
		if len(r.Values) > 0 {
			errs = append(errs, field.Forbidden(p.Child("values"), "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"))
		}
	default:
		errs = append(errs, field.Invalid(p.Child("operator"), r.Operator, "not a valid selector operator"))
	}
	errs = append(errs, invalidEach(p.Child("key"), r.Key, isQualifiedName(r.Key))...)
	for i, v := range r.Values {
		errs = append(errs, invalidEach(p.Child("values").Index(i), v, isValidLabelValue(v))...)
	}
	return errs
}

// selectorMatches reports whether a valid, non-nil selector selects a set
// of labels. An empty selector selects everything.
func selectorMatches(sel *metav1.LabelSelector, labels map[string]string) bool {
	for k, v := range sel.GetMatchLabels() {
		if got, ok := labels[k]; !ok || got != v {
			return false
		}
	}
	for _, r := range sel.GetMatchExpressions() {
		v, has := labels[r.GetKey()]
		var ok bool
		switch r.GetOperator() {
		case "In":
			ok = has && slices.Contains(r.GetValues(), v)
		case "NotIn":
			ok = !has || !slices.Contains(r.GetValues(), v)
		case "Exists":
			ok = has
		case "DoesNotExist":
			ok = !has
		}
		if !ok {
			return false
		}
	}
	return true
}

func selectorEmpty(sel *metav1.LabelSelector) bool {
	return len(sel.GetMatchLabels())+len(sel.GetMatchExpressions()) == 0
}
