// Package nodeaffinity decides whether a Node satisfies a node selector:
// a pod's spec.nodeSelector labels, its required node affinity, a preferred
// term, or a PersistentVolume's spec.nodeAffinity.required, with the
// semantics of Kubernetes' component-helpers/scheduling/corev1/nodeaffinity:
//
//   - a nil *NodeSelector admits every node; a NodeSelector with no terms
//     admits none (Match);
//   - the terms are ORed (MatchTerms); within a term every matchExpressions
//     and every matchFields requirement must hold; an empty term matches
//     nothing (MatchTerm);
//   - matchExpressions over the node's labels take In, NotIn, Exists,
//     DoesNotExist, Gt and Lt (integers, compared as int64; a label or value
//     that is not one fails the requirement); NotIn and DoesNotExist hold
//     when the label is missing (MatchExpression);
//   - matchFields take only the key metadata.name with In or NotIn
//     (MatchField); anything else fails the requirement, as Kubernetes'
//     field selector conversion rejects it.
//
// It owns the matching only: no validation (package validation rejects
// what the API does not admit), no scheduling state, no pre-computation.
package nodeaffinity
