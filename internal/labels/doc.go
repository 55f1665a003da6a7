// Package labels parses, builds and evaluates Kubernetes-style label
// selectors.
//
// It owns:
//   - the selector string syntax ("app=web,tier in (fe,be),!canary"): Parse;
//   - the conversion of the API's metav1.LabelSelector: FromProto, and
//     its operator names (OperatorFromProto);
//   - how many values each operator takes (Operator.ValueCount);
//   - the label key and value rules (ValidateKey, ValidateValue), also
//     used for other qualified names such as annotation keys; KeyFaults
//     and ValueFaults list each Fault so that package validation can word
//     it as the API does;
//   - matching a selector against an object's labels: Selector.Matches.
//
// It does not own where labels live on objects, field selectors (package
// fields) or indexing; callers that keep an index can ask
// Selector.RequiresExactMatch for a key=value lookup.
//
// # Syntax
//
//	selector    = "" | requirement { "," requirement }
//	requirement = key | "!" key
//	            | key ( "=" | "==" | "!=" ) value
//	            | key ( "in" | "notin" ) "(" value { "," value } ")"
//
// Whitespace between tokens is ignored. A value may be empty ("a=" matches
// labels with a=""; "a in (,x)" holds "" and "x"); "a in ()" is rejected
// because an empty set can never match. "==" is the same as "=" and prints
// as "=". Requirements are ANDed; the empty selector matches everything.
//
// # Semantics
//
// "=" and "in" require the key to be present with one of the values; "!="
// and "notin" match when the key is absent or has another value; a bare key
// requires presence and "!key" absence.
//
// # Values
//
// A Selector is an immutable value and safe for concurrent use. Its zero
// value is Everything. Matches does not allocate: it runs once per watch
// event per watcher.
package labels
