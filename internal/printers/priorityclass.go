package printers

import (
	"time"

	"skiff.dev/internal/object"
	schedulingv1 "skiff.dev/proto/scheduling/v1"
)

// priorityClassTable: VALUE is an integer and GLOBAL-DEFAULT a boolean,
// as Kubernetes has them; PREEMPTIONPOLICY is not an -o wide column there.
var priorityClassTable = kindTable{[]Column{
	nameColumn,
	typed("integer", column("Value", doc("scheduling/v1.PriorityClass", "value"))),
	typed("boolean", column("Global-Default", doc("scheduling/v1.PriorityClass", "globalDefault"))),
	ageColumn,
	column("PreemptionPolicy", doc("scheduling/v1.PriorityClass", "preemptionPolicy")),
}, priorityClassCells}

func priorityClassCells(obj object.Object, now time.Time) []any {
	pc := obj.(*schedulingv1.PriorityClass)
	policy := "PreemptLowerPriority"
	if pc.PreemptionPolicy != nil {
		policy = pc.GetPreemptionPolicy()
	}
	return []any{pc.GetMetadata().GetName(), int64(pc.GetValue()), pc.GetGlobalDefault(), Age(pc.GetMetadata().GetCreationTimestamp(), now), policy}
}
