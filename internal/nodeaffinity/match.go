package nodeaffinity

import (
	"slices"
	"strconv"

	corev1 "skiff.dev/proto/core/v1"
)

// FieldNodeName is the one field matchFields may name.
const FieldNodeName = "metadata.name"

// PodMatches reports whether node admits a pod of spec as far as labels
// and fields go: every spec.nodeSelector pair, and the required node
// affinity if any (Kubernetes' GetRequiredNodeAffinity(pod).Match).
func PodMatches(node *corev1.Node, spec *corev1.PodSpec) bool {
	return MatchLabels(node, spec.GetNodeSelector()) &&
		Match(node, spec.GetAffinity().GetNodeAffinity().GetRequiredDuringSchedulingIgnoredDuringExecution())
}

// MatchLabels reports whether node carries every key=value of selector
// (a spec.nodeSelector); an empty selector admits every node.
func MatchLabels(node *corev1.Node, selector map[string]string) bool {
	labels := node.GetMetadata().GetLabels()
	for k, v := range selector {
		if have, ok := labels[k]; !ok || have != v {
			return false
		}
	}
	return true
}

// Match reports whether node satisfies sel: true for a nil selector,
// else MatchTerms of its terms (so a selector without terms admits none).
func Match(node *corev1.Node, sel *corev1.NodeSelector) bool {
	if sel == nil {
		return true
	}
	return MatchTerms(node, sel.GetNodeSelectorTerms())
}

// MatchTerms reports whether node matches any of terms; an empty list
// matches nothing.
func MatchTerms(node *corev1.Node, terms []*corev1.NodeSelectorTerm) bool {
	return slices.ContainsFunc(terms, func(t *corev1.NodeSelectorTerm) bool { return MatchTerm(node, t) })
}

// MatchTerm reports whether node matches every expression and field of
// term; an empty (or nil) term matches nothing.
func MatchTerm(node *corev1.Node, term *corev1.NodeSelectorTerm) bool {
	exprs, fields := term.GetMatchExpressions(), term.GetMatchFields()
	if len(exprs) == 0 && len(fields) == 0 {
		return false
	}
	labels := node.GetMetadata().GetLabels()
	for _, r := range exprs {
		v, ok := labels[r.GetKey()]
		if !MatchExpression(r, v, ok) {
			return false
		}
	}
	for _, r := range fields {
		if !MatchField(r, node) {
			return false
		}
	}
	return true
}

// MatchExpression reports whether requirement r holds of a label whose
// value is v (ok false: the node has no such label). An unknown operator
// fails.
func MatchExpression(r *corev1.NodeSelectorRequirement, v string, ok bool) bool {
	switch r.GetOperator() {
	case "In":
		return ok && slices.Contains(r.GetValues(), v)
	case "NotIn":
		return !ok || !slices.Contains(r.GetValues(), v)
	case "Exists":
		return ok
	case "DoesNotExist":
		return !ok
	case "Gt", "Lt":
		if !ok || len(r.GetValues()) != 1 {
			return false
		}
		have, err1 := strconv.ParseInt(v, 10, 64)
		want, err2 := strconv.ParseInt(r.GetValues()[0], 10, 64)
		if err1 != nil || err2 != nil {
			return false
		}
		if r.GetOperator() == "Gt" {
			return have > want
		}
		return have < want
	}
	return false
}

// MatchField reports whether field requirement r holds of node: only
// metadata.name with In or NotIn can hold.
func MatchField(r *corev1.NodeSelectorRequirement, node *corev1.Node) bool {
	if r.GetKey() != FieldNodeName {
		return false
	}
	name := node.GetMetadata().GetName()
	switch r.GetOperator() {
	case "In":
		return slices.Contains(r.GetValues(), name)
	case "NotIn":
		return !slices.Contains(r.GetValues(), name)
	}
	return false
}
