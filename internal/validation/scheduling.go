package validation

import (
	"fmt"
	"strconv"

	"skiff.dev/internal/field"
	corev1 "skiff.dev/proto/core/v1"
)

var (
	taintEffects       = []string{"NoSchedule", "PreferNoSchedule", "NoExecute"}
	unsatisfiableModes = []string{"DoNotSchedule", "ScheduleAnyway"}
)

// tolerations validates a pod's tolerations: key a qualified name (an
// empty key needs operator Exists), operator Equal (or empty) with a label
// value, or Exists with no value, effect empty or a taint effect, and
// tolerationSeconds only with NoExecute.
func tolerations(ts []*corev1.Toleration, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, t := range ts {
		ip := p.Index(i)
		if t == nil {
			errs = append(errs, field.Required(ip, ""))
			continue
		}
		if t.Key != "" {
			errs = append(errs, invalidEach(ip.Child("key"), t.Key, isQualifiedName(t.Key))...)
		} else if t.Operator != "Exists" {
			errs = append(errs, field.Invalid(ip.Child("operator"), t.Operator,
				"operator must be Exists when `key` is empty, which means \"match all values and all keys\""))
		}
		if t.TolerationSeconds != nil && t.Effect != "NoExecute" {
			errs = append(errs, field.Invalid(ip.Child("effect"), t.Effect, "effect must be 'NoExecute' when `tolerationSeconds` is set"))
		}
		switch t.Operator {
		case "Equal", "":
			errs = append(errs, invalidEach(ip.Child("value"), t.Value, isValidLabelValue(t.Value))...)
		case "Exists":
			if t.Value != "" {
				errs = append(errs, field.Invalid(ip.Child("value"), t.Value, "value must be empty when `operator` is 'Exists'"))
			}
		default:
			errs = append(errs, field.NotSupported(ip.Child("operator"), t.Operator, []string{"Equal", "Exists"}))
		}
		if t.Effect != "" {
			errs = append(errs, supported(t.Effect, taintEffects, ip.Child("effect"))...)
		}
	}
	return errs
}

// onlyAddedTolerations allows a pod update to add tolerations and to change
// an existing one's tolerationSeconds, nothing else.
func onlyAddedTolerations(newTs, oldTs []*corev1.Toleration, p *field.Path) field.ErrorList {
	// A toleration is identified by all it says but tolerationSeconds.
	type identity struct{ key, operator, value, effect string }
	id := func(t *corev1.Toleration) identity {
		return identity{t.GetKey(), t.GetOperator(), t.GetValue(), t.GetEffect()}
	}
	present := make(map[identity]bool, len(newTs))
	for _, t := range newTs {
		present[id(t)] = true
	}
	for _, t := range oldTs {
		if !present[id(t)] {
			return field.ErrorList{field.Forbidden(p, "existing toleration can not be modified except its tolerationSeconds")}
		}
	}
	return nil
}

// taints validates a node's taints: key a qualified name, value a label
// value, effect required, and each key and effect pair unique.
func taints(ts []*corev1.Taint, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := map[[2]string]bool{}
	for i, t := range ts {
		ip := p.Index(i)
		if t == nil {
			errs = append(errs, field.Required(ip, ""))
			continue
		}
		errs = append(errs, invalidEach(ip.Child("key"), t.Key, isQualifiedName(t.Key))...)
		errs = append(errs, invalidEach(ip.Child("value"), t.Value, isValidLabelValue(t.Value))...)
		errs = append(errs, supported(t.Effect, taintEffects, ip.Child("effect"))...)
		k := [2]string{t.Key, t.Effect}
		if seen[k] {
			d := field.Duplicate(ip, t.Key+":"+t.Effect)
			d.Detail = "taints must be unique by key and effect pair"
			errs = append(errs, d)
		}
		seen[k] = true
	}
	return errs
}

func affinity(a *corev1.Affinity, p *field.Path) field.ErrorList {
	errs := podAffinities(a, p)
	na := a.GetNodeAffinity()
	if na == nil {
		return errs
	}
	np := p.Child("nodeAffinity")
	if req := na.RequiredDuringSchedulingIgnoredDuringExecution; req != nil {
		tp := np.Child("requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms")
		if len(req.NodeSelectorTerms) == 0 {
			errs = append(errs, field.Required(tp, "must have at least one node selector term"))
		}
		for i, term := range req.NodeSelectorTerms {
			errs = append(errs, nodeSelectorTerm(term, tp.Index(i))...)
		}
	}
	pp := np.Child("preferredDuringSchedulingIgnoredDuringExecution")
	for i, pref := range na.PreferredDuringSchedulingIgnoredDuringExecution {
		ip := pp.Index(i)
		if w := pref.GetWeight(); w < 1 || w > 100 {
			errs = append(errs, field.Invalid(ip.Child("weight"), w, "must be in the range 1-100"))
		}
		errs = append(errs, nodeSelectorTerm(pref.GetPreference(), ip.Child("preference"))...)
	}
	return errs
}

func nodeSelectorTerm(term *corev1.NodeSelectorTerm, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, r := range term.GetMatchExpressions() {
		errs = append(errs, nodeSelectorRequirement(r, p.Child("matchExpressions").Index(i))...)
	}
	for i, r := range term.GetMatchFields() {
		errs = append(errs, nodeFieldSelectorRequirement(r, p.Child("matchFields").Index(i))...)
	}
	return errs
}

// nodeSelectorRequirement: In and NotIn need values, Exists and
// DoesNotExist take none, Gt and Lt take one integer.
func nodeSelectorRequirement(r *corev1.NodeSelectorRequirement, p *field.Path) field.ErrorList {
	if r == nil {
		return field.ErrorList{field.Required(p, "")}
	}
	var errs field.ErrorList
	vp := p.Child("values")
	switch r.Operator {
	case "Gt", "Lt":
		if len(r.Values) != 1 {
			errs = append(errs, field.Required(vp, "must be specified single value when `operator` is 'Lt' or 'Gt'"))
		} else if _, err := strconv.ParseInt(r.Values[0], 10, 64); err != nil {
			errs = append(errs, field.Invalid(vp.Index(0), r.Values[0], "must be an integer"))
		}
	default:
		// The operators node selectors share with label selectors.
		errs = selectorOperator(r.Operator, len(r.Values), p)
	}
	return append(errs, invalidEach(p.Child("key"), r.Key, isQualifiedName(r.Key))...)
}

// nodeFieldSelectorRequirement: only metadata.name, with In or NotIn and
// exactly one value.
func nodeFieldSelectorRequirement(r *corev1.NodeSelectorRequirement, p *field.Path) field.ErrorList {
	if r == nil {
		return field.ErrorList{field.Required(p, "")}
	}
	var errs field.ErrorList
	switch r.Operator {
	case "In", "NotIn":
		if len(r.Values) != 1 {
			errs = append(errs, field.Required(p.Child("values"), "must be only one value when `operator` is 'In' or 'NotIn' for node field selector"))
		}
	default:
		errs = append(errs, field.Invalid(p.Child("operator"), r.Operator, "not a valid selector operator"))
	}
	if r.Key != "metadata.name" {
		errs = append(errs, field.NotSupported(p.Child("key"), r.Key, []string{"metadata.name"}))
	}
	return errs
}

func topologySpreadConstraints(cs []*corev1.TopologySpreadConstraint, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := map[[2]string]bool{}
	for i, c := range cs {
		ip := p.Index(i)
		if c == nil {
			errs = append(errs, field.Required(ip, ""))
			continue
		}
		if c.MaxSkew <= 0 {
			errs = append(errs, field.Invalid(ip.Child("maxSkew"), c.MaxSkew, "must be greater than zero"))
		}
		if c.TopologyKey == "" {
			errs = append(errs, field.Required(ip.Child("topologyKey"), "can not be empty"))
		} else {
			errs = append(errs, invalidEach(ip.Child("topologyKey"), c.TopologyKey, isQualifiedName(c.TopologyKey))...)
		}
		errs = append(errs, supported(c.WhenUnsatisfiable, unsatisfiableModes, ip.Child("whenUnsatisfiable"))...)
		if m := c.MinDomains; m != nil {
			if *m <= 0 {
				errs = append(errs, field.Invalid(ip.Child("minDomains"), *m, "must be greater than zero"))
			}
			if c.WhenUnsatisfiable != "DoNotSchedule" {
				errs = append(errs, field.Invalid(ip.Child("minDomains"), *m,
					fmt.Sprintf("can only use minDomains if whenUnsatisfiable=DoNotSchedule, not %s", c.WhenUnsatisfiable)))
			}
		}
		k := [2]string{c.TopologyKey, c.WhenUnsatisfiable}
		if seen[k] {
			errs = append(errs, field.Duplicate(ip, fmt.Sprintf("{%v, %v}", c.TopologyKey, c.WhenUnsatisfiable)))
		}
		seen[k] = true
		errs = append(errs, LabelSelector(c.LabelSelector, ip.Child("labelSelector"))...)
	}
	return errs
}
