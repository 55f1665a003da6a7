package printers

import (
	"skiff.dev/internal/object"
	tables "skiff.dev/internal/printers"
)

// HasColumns is internal/printers.HasColumns, for tests/conformance,
// which calls it here; it goes once that test imports internal/printers.
func HasColumns(obj object.Object) bool { return tables.HasColumns(obj) }
