package printers

import (
	"time"

	"skiff.dev/internal/object"
	nodev1 "skiff.dev/proto/node/v1"
)

// runtimeClassTable are kubectl's columns of a RuntimeClass.
var runtimeClassTable = kindTable{[]Column{nameColumn, column("Handler", doc("node/v1.RuntimeClass", "handler")), ageColumn}, func(obj object.Object, now time.Time) []any {
	rc := obj.(*nodev1.RuntimeClass)
	return []any{rc.GetMetadata().GetName(), rc.GetHandler(), Age(rc.GetMetadata().GetCreationTimestamp(), now)}
}}
