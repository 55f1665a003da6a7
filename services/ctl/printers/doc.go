// Package printers is what skiffctl prints of objects' JSON forms:
// -o custom-columns (columns.go) and --sort-by (sort.go), with the
// JSONPath dialect of package printers/jsonpath. Each kind's own table
// columns are internal/printers', shared with the apiserver's HTTP API.
package printers
