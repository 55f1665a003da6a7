// Package printers renders objects for people and scripts, as kubectl
// does: tables with each kind's columns (age.go formats ages as kubectl
// does: 5s, 3m20s, 2d), -o wide columns, -o name, and -o yaml|json
// through package manifest; -o custom-columns (columns.go) and --sort-by
// (sort.go) over the objects' JSON forms, with the JSONPath dialect of
// package printers/jsonpath. Everything is a pure function of the objects
// and an injected clock.
//
// It owns no I/O but the writer it is given; it does not fetch objects
// or events (package cmd does).
package printers
