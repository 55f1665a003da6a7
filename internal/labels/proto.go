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
		op, ok := protoOperators[e.GetOperator()]
		if !ok {
			return Selector{}, fmt.Errorf("%w: matchExpressions[%d]: operator %q is not one of In, NotIn, Exists, DoesNotExist",
				ErrInvalidSelector, i, e.GetOperator())
		}
		key, values := e.GetKey(), e.GetValues()
		if err := ValidateKey(key); err != nil {
			return Selector{}, fmt.Errorf("%w: matchExpressions[%d]: %w", ErrInvalidSelector, i, err)
		}
		switch {
		case (op == In || op == NotIn) && len(values) == 0:
			return Selector{}, fmt.Errorf("%w: matchExpressions[%d]: key %q: operator %s needs at least one value",
				ErrInvalidSelector, i, key, e.GetOperator())
		case (op == Exists || op == DoesNotExist) && len(values) != 0:
			return Selector{}, fmt.Errorf("%w: matchExpressions[%d]: key %q: operator %s takes no values, got %d",
				ErrInvalidSelector, i, key, e.GetOperator(), len(values))
		}
		for _, v := range values {
			if err := ValidateValue(v); err != nil {
				return Selector{}, fmt.Errorf("%w: matchExpressions[%d]: key %q: %w", ErrInvalidSelector, i, key, err)
			}
		}
		reqs = append(reqs, newRequirement(key, op, values))
	}
	return newSelector(reqs), nil
}
