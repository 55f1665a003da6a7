package describe

import (
	schedulingv1 "skiff.dev/proto/scheduling/v1"
)

// priorityClass writes a PriorityClass as kubectl's describe does.
func (p *out) priorityClass(pc *schedulingv1.PriorityClass) {
	policy := "PreemptLowerPriority"
	if pc.PreemptionPolicy != nil {
		policy = pc.GetPreemptionPolicy()
	}
	p.kv(0, "Name", pc.GetMetadata().GetName())
	p.kv(0, "Value", pc.GetValue())
	p.kv(0, "GlobalDefault", pc.GetGlobalDefault())
	p.kv(0, "PreemptionPolicy", policy)
	p.kv(0, "Description", pc.GetDescription())
	p.multi(0, "Annotations", pc.GetMetadata().GetAnnotations(), "=")
}
