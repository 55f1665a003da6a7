// Package fields parses and evaluates Kubernetes-style field selectors
// ("metadata.name=web,status.phase!=Running").
//
// It owns the string syntax (Parse, Selector.String), matching a selector
// against the field values an object exposes (Selector.Matches), and
// checking a selector against the fields a resource supports
// (Selector.Validate). It does not know which fields a resource has or how
// to read them from an object: the apiserver passes the supported field
// names to Validate and a Set (or a getter) of an object's values to
// Matches. Label selectors live in package labels.
//
// # Syntax
//
//	selector    = "" | requirement { "," requirement }
//	requirement = field ( "=" | "==" | "!=" ) value
//
// A field is a non-empty run of ASCII letters, digits and ".-_/[]". A value
// is any text, possibly empty ("spec.nodeName=" selects unscheduled pods),
// in which '\', ',' and '=' are written escaped as `\\`, `\,` and `\=`.
// Whitespace around fields, operators and values is ignored. "==" is the
// same as "=" and prints as "=".
//
// A field an object does not have reads as "": "f=" matches it and "f!=x"
// matches it.
//
// A Selector is an immutable value, safe for concurrent use; its zero value
// is Everything.
package fields
