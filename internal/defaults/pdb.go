package defaults

import policyv1 "skiff.dev/proto/policy/v1"

// PodDisruptionBudget has no defaults, as in Kubernetes: an unset
// unhealthyPodEvictionPolicy stays unset (the eviction subresource reads
// it as IfHealthyBudget).
func PodDisruptionBudget(*policyv1.PodDisruptionBudget) {}
