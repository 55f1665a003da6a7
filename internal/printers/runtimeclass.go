package printers

import (
	"time"

	"skiff.dev/internal/object"
	nodev1 "skiff.dev/proto/node/v1"
)

// runtimeClassColumns are kubectl's columns of a RuntimeClass.
var runtimeClassColumns = columns{[]string{"NAME", "HANDLER", "AGE"}, nil, runtimeClassRow}

func runtimeClassRow(obj object.Object, now time.Time) ([]string, []string) {
	rc := obj.(*nodev1.RuntimeClass)
	return []string{rc.GetMetadata().GetName(), rc.GetHandler(), Age(rc.GetMetadata().GetCreationTimestamp(), now)}, nil
}
