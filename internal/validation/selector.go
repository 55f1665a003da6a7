package validation

import (
	"skiff.dev/internal/field"
	"skiff.dev/internal/labels"
	metav1 "skiff.dev/proto/meta/v1"
)

// LabelSelector validates a label selector: matchLabels as labels, and
// each matchExpressions requirement's key, operator and values. The rules
// are package labels' (the operators of labels.OperatorFromProto and the
// number of values each takes); this reports every problem at its field.
// A nil selector is valid here; kinds that need one say so.
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
	errs := selectorOperator(r.Operator, len(r.Values), p)
	errs = append(errs, invalidEach(p.Child("key"), r.Key, isQualifiedName(r.Key))...)
	for i, v := range r.Values {
		errs = append(errs, invalidEach(p.Child("values").Index(i), v, isValidLabelValue(v))...)
	}
	return errs
}

// selectorOperator checks a matchExpressions operator of a label or node
// selector ("In", "NotIn", "Exists" or "DoesNotExist") and that it has as
// many values as it takes: In and NotIn at least one, Exists and
// DoesNotExist none.
func selectorOperator(operator string, values int, p *field.Path) field.ErrorList {
	op, ok := labels.OperatorFromProto(operator)
	if !ok {
		return field.ErrorList{field.Invalid(p.Child("operator"), operator, "not a valid selector operator")}
	}
	switch lo, hi, _ := op.ValueCount(); {
	case values < lo:
		return field.ErrorList{field.Required(p.Child("values"), "must be specified when `operator` is 'In' or 'NotIn'")}
	case hi >= 0 && values > hi:
		return field.ErrorList{field.Forbidden(p.Child("values"), "may not be specified when `operator` is 'Exists' or 'DoesNotExist'")}
	}
	return nil
}
