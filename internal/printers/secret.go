package printers

import (
	"time"

	"skiff.dev/internal/object"
	corev1 "skiff.dev/proto/core/v1"
)

// secretTable: NAME TYPE DATA AGE, as kubectl; DATA counts the keys (an
// integer in a string column, as in Kubernetes), never shows a value.
var secretTable = kindTable{[]Column{
	nameColumn,
	column("Type", doc("core/v1.Secret", "type")),
	column("Data", doc("core/v1.Secret", "data")),
	ageColumn,
}, secretCells}

func secretCells(obj object.Object, now time.Time) []any {
	s := obj.(*corev1.Secret)
	m := s.GetMetadata()
	return []any{m.GetName(), s.GetType(), int64(len(s.GetData())), Age(m.GetCreationTimestamp(), now)}
}
