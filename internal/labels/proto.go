package labels

import (
	"fmt"
	"maps"
	"slices"

	metav1 "skiff.dev/proto/meta/v1"
)

// protoOperators maps the API's matchExpressions operators to Operators.
var protoOperators = map[string]Operator{
	"In":           In,
	"NotIn":        NotIn,
	"Exists":       Exists,
	"DoesNotExist": DoesNotExist,
}

// OperatorFromProto returns the Operator that an API matchExpressions
// operator ("In", "NotIn", "Exists", "DoesNotExist") stands for; ok is
// false for any other spelling. Operator.ValueCount says how many values
// it takes.
func OperatorFromProto(name string) (op Operator, ok bool) {
	op, ok = protoOperators[name]
	return op, ok
}

// FromProto converts an API label selector.
//
// A nil selector is Nothing: it matches no objects, as Kubernetes'
// LabelSelectorAsSelector does, so that an object whose selector was left
// out (a Deployment, a Service) never claims every pod. A non-nil selector
// with no matchLabels and no matchExpressions is Everything.
//
// matchLabels become "=" requirements. matchExpressions take the operators
// "In" and "NotIn", which need at least one value, and "Exists" and
// "DoesNotExist", which take none. Errors wrap ErrInvalidSelector and
// name the offending entry, e.g.
//
//	invalid label selector: matchExpressions[1]: operator "Gt" is not one of In, NotIn, Exists, DoesNotExist
func FromProto(sel *metav1.LabelSelector) (Selector, error) {
	if sel == nil {
		return Nothing(), nil
	}
	ml, me := sel.GetMatchLabels(), sel.GetMatchExpressions()
	reqs := make([]Requirement, 0, len(ml)+len(me))
	for _, k := range slices.Sorted(maps.Keys(ml)) {
		if err := ValidateKey(k); err != nil {
			return Selector{}, fmt.Errorf("%w: matchLabels: %w", ErrInvalidSelector, err)
		}
		if err := ValidateValue(ml[k]); err != nil {
			return Selector{}, fmt.Errorf("%w: matchLabels[%q]: %w", ErrInvalidSelector, k, err)
		}
		reqs = append(reqs, newRequirement(k, Equals, []string{ml[k]}))
	}
	for i, e := range me {
		if e == nil {
			return Selector{}, fmt.Errorf("%w: matchExpressions[%d]: missing", ErrInvalidSelector, i)
		}
		op, ok := OperatorFromProto(e.GetOperator())
		if !ok {
			return Selector{}, fmt.Errorf("%w: matchExpressions[%d]: operator %q is not one of In, NotIn, Exists, DoesNotExist",
				ErrInvalidSelector, i, e.GetOperator())
		}
		r, err := checkedRequirement(e.GetKey(), e.GetOperator(), op, e.GetValues())
		if err != nil {
			return Selector{}, fmt.Errorf("%w: matchExpressions[%d]: %w", ErrInvalidSelector, i, err)
		}
		reqs = append(reqs, r)
	}
	return newSelector(reqs), nil
}
