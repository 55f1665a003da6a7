// Package quantity parses, compares and adds Kubernetes resource
// quantities: "2", "0.5", "500m", "100n", "1.5Gi", "1e3".
//
// It owns the quantity string syntax and its canonical form, exact
// arithmetic on quantities and the conversion of a resource list
// (ParseResourceList). It does not own which resources exist, whether a
// quantity may be negative or fractional (Parse accepts "-1"; request and
// limit validation rejects it) or how the scheduler sums requests.
//
// Parse accepts what Kubernetes' resource.ParseQuantity accepts, with its
// rounding and canonical forms; kubernetes_test.go checks it against
// k8s.io/apimachinery on a table, random quantities and a fuzzer.
//
// # Syntax
//
//	quantity = [ "+" | "-" ] number [ suffix ]
//	number   = digits [ "." [ digits ] ] | "." digits
//	suffix   = "n" | "u" | "m" | "k" | "M" | "G" | "T" | "P" | "E"   (decimal SI)
//	         | "Ki" | "Mi" | "Gi" | "Ti" | "Pi" | "Ei"               (binary SI)
//	         | ( "e" | "E" ) [ "+" | "-" ] digits                    (decimal exponent)
//
// "E" alone is exa; "E" followed by digits is an exponent, which must fit
// in 64 bits. There is no length limit.
//
// # Rounding and range
//
// A Quantity is exact: a whole number of nano-units (10^-9) in 128 bits.
// Parse rounds a value finer than 1n up, away from zero, as Kubernetes
// does: "0.1n" is 1n, "-0.1n" is -1n, "1.0000000001Ki" is 1024000000103n.
// A binary quantity above 2^63-1 units is capped there, as Kubernetes
// caps it ("10Ei" is 9223372036854775807). A magnitude above 2^127-1
// nano-units (about 1.7e29) is out of range. MilliValue and Value round
// away from zero and saturate at ±MaxMilli. Add and Sub report overflow
// instead of wrapping.
//
// # Canonical form
//
// String prints Kubernetes' canonical form (its CanonicalizeBytes): the
// suffix family the quantity was written in, no fraction, the largest
// suffix or exponent that keeps the number whole. A binary quantity of at
// least 1Ki that is a whole number prints with the largest binary suffix
// that keeps it whole ("1536Mi", "1Gi"); everything else prints in
// decimal with the largest power of 1000 that keeps it whole, as an SI
// suffix ("1500m", "100u", "2k", "512") or, for quantities written with an
// exponent, as "e<n>" ("1e3", "500e-3", "1e-9"). Zero is "0".
// Parse(q.String()) always gives back q.
//
// # Departures from Kubernetes
//
//   - A quantity without digits ("m", "Gi", ".", "+", "-") is an error;
//     Kubernetes reads it as 0.
//   - Magnitudes above 2^127-1 nano-units are out of range; Kubernetes
//     accepts any magnitude (and an exponent beyond 32 bits wraps around).
//   - String always prints the canonical form; Kubernetes' String returns
//     some inputs as written ("+1", "007", "1E3", "1e+3", "1.G").
//   - A DecimalSI quantity of 1000E or more prints as "1000E"; Kubernetes
//     drops the suffix and prints "1".
//   - MilliValue and Value saturate and round negative values away from
//     zero; Kubernetes' overflow past int64 and round some negative
//     fractions ("-0.5m") toward +∞.
package quantity
