package printers

import (
	"strconv"
	"time"

	"skiff.dev/internal/object"
	schedulingv1 "skiff.dev/proto/scheduling/v1"
)

// priorityClassColumns are kubectl's columns of a PriorityClass.
var priorityClassColumns = columns{[]string{"NAME", "VALUE", "GLOBAL-DEFAULT", "AGE", "PREEMPTIONPOLICY"}, nil, priorityClassRow}

func priorityClassRow(obj object.Object, now time.Time) ([]string, []string) {
	pc := obj.(*schedulingv1.PriorityClass)
	policy := "PreemptLowerPriority"
	if pc.PreemptionPolicy != nil {
		policy = pc.GetPreemptionPolicy()
	}
	return []string{pc.GetMetadata().GetName(), strconv.Itoa(int(pc.GetValue())), strconv.FormatBool(pc.GetGlobalDefault()),
		Age(pc.GetMetadata().GetCreationTimestamp(), now), policy}, nil
}
