package persistentvolume

import (
	"slices"
	"strconv"

	corev1 "skiff.dev/proto/core/v1"
)

// VolumeReachableFrom says whether node satisfies v's required node
// affinity (a volume without one is reachable from every node): any term,
// each of whose expressions (over the node's labels) and fields
// (metadata.name) hold.
func VolumeReachableFrom(v *corev1.PersistentVolume, node *corev1.Node) bool {
	req := v.GetSpec().GetNodeAffinity().GetRequired()
	if req == nil {
		return true
	}
	return slices.ContainsFunc(req.GetNodeSelectorTerms(), func(t *corev1.NodeSelectorTerm) bool {
		if len(t.GetMatchExpressions()) == 0 && len(t.GetMatchFields()) == 0 {
			return false // an empty term matches nothing, as in Kubernetes
		}
		labels := node.GetMetadata().GetLabels()
		for _, r := range t.GetMatchExpressions() {
			v, ok := labels[r.GetKey()]
			if !requirementHolds(r, v, ok) {
				return false
			}
		}
		for _, r := range t.GetMatchFields() {
			if r.GetKey() != "metadata.name" || !requirementHolds(r, node.GetMetadata().GetName(), true) {
				return false
			}
		}
		return true
	})
}

func requirementHolds(r *corev1.NodeSelectorRequirement, v string, ok bool) bool {
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
		return r.GetOperator() == "Gt" && have > want || r.GetOperator() == "Lt" && have < want
	}
	return false
}
