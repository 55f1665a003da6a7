// Package quantity parses, compares and adds Kubernetes-style resource
// quantities: "2", "0.5", "500m", "1.5Gi", "1e3".
//
// It owns the quantity string syntax and its canonical form, exact
// arithmetic on quantities and the conversion of a resource list
// (ParseResourceList). It does not own which resources exist, whether a
// quantity may be negative (Parse accepts "-1"; request and limit
// validation rejects it) or how the scheduler sums requests.
//
// # Syntax
//
//	quantity = [ "+" | "-" ] number [ suffix ]
//	number   = digits [ "." [ digits ] ] | "." digits
//	suffix   = "n" | "u" | "m" | "k" | "M" | "G" | "T" | "P" | "E"   (decimal SI)
//	         | "Ki" | "Mi" | "Gi" | "Ti" | "Pi" | "Ei"               (binary SI)
//	         | ( "e" | "E" ) [ "+" | "-" ] digits                    (decimal exponent)
//
// "E" alone is exa; "E" followed by digits is an exponent. A quantity is
// at most 128 characters long.
//
// # Range and precision
//
// A Quantity is exact: it holds a whole number of milli-units in an int64.
// Parse rejects a value finer than 1m ("0.1m", "1n") and one whose
// magnitude exceeds 9223372036854775807m, about 9.2e15 or 8Pi, so "1E" and
// "1Ei" are out of range. Add and Sub report overflow instead of wrapping.
//
// # Canonical form
//
// String keeps the family of suffix the quantity was written in. A binary
// quantity of at least 1Ki that is a whole number prints with the largest
// binary suffix that keeps the mantissa whole ("1536Mi", "1Gi"); everything
// else prints in decimal with the largest power of 1000 that keeps it whole,
// as an SI suffix ("1500m", "2k", "512") or, for quantities written with an
// exponent, as "e<n>" ("1e3", "500e-3"). Zero is "0". Parse(q.String())
// always gives back q.
package quantity
