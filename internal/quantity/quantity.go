package quantity

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"math/bits"
	"slices"
	"strconv"
)

var (
	// ErrInvalid is the category of errors returned by Parse.
	ErrInvalid = errors.New("invalid quantity")
	// ErrOutOfRange is the category of errors for quantities whose
	// magnitude exceeds 2^127-1 nano-units, from Parse (which wraps
	// ErrInvalid too), Add and Sub.
	ErrOutOfRange = errors.New("out of range")
)

// MaxMilli is the largest magnitude MilliValue and Value report; larger
// quantities saturate there.
const MaxMilli = math.MaxInt64

// Format is the family of suffix a quantity prints with.
type Format string

// The formats. The zero Format prints as DecimalSI.
const (
	DecimalSI       Format = "DecimalSI"       // "500m", "2k", "1.5" -> "1500m"
	BinarySI        Format = "BinarySI"        // "1Gi", "1536Mi"
	DecimalExponent Format = "DecimalExponent" // "1e3", "500e-3"
)

// Quantity is an exact amount of a resource: a whole number of nano-units
// and the format it prints in. The zero value is 0. Compare quantities with
// Cmp, not ==, which also compares formats.
type Quantity struct {
	n      i128
	format Format
}

// NewQuantity returns value units in format f. Every int64 is in range;
// the error is always nil.
func NewQuantity(value int64, f Format) (Quantity, error) {
	return scaled(value, 1e9, f), nil
}

// NewMilliQuantity returns milli milli-units in format f. Every int64 is in
// range; the error is always nil.
func NewMilliQuantity(milli int64, f Format) (Quantity, error) {
	return scaled(milli, 1e6, f), nil
}

func scaled(v int64, nanos uint64, f Format) Quantity {
	m := uint64(v)
	if v < 0 {
		m = -m
	}
	hi, lo := bits.Mul64(m, nanos)
	return Quantity{n: signed(u128{hi, lo}, v < 0), format: f}
}

// MustParse is Parse for constants and tests; it panics on error.
func MustParse(s string) Quantity {
	q, err := Parse(s)
	if err != nil {
		panic(err)
	}
	return q
}

// ParseResourceList parses the quantities of a resource list such as
// {"cpu": "500m", "memory": "1Gi"}. An error names the resource:
//
//	resource "memory": invalid quantity "12Zi": unknown suffix "Zi"
//
// Resources are checked in name order, so the error is deterministic.
func ParseResourceList(list map[string]string) (map[string]Quantity, error) {
	out := make(map[string]Quantity, len(list))
	for _, name := range slices.Sorted(maps.Keys(list)) {
		q, err := Parse(list[name])
		if err != nil {
			return nil, fmt.Errorf("resource %q: %w", name, err)
		}
		out[name] = q
	}
	return out, nil
}

// MilliValue returns q in milli-units, rounded away from zero ("1n" is
// 1, "-1n" is -1) and saturated at ±MaxMilli.
func (q Quantity) MilliValue() int64 { return q.scaledValue(1e6) }

// Value returns q in units, rounded away from zero as Kubernetes does
// ("1500m" is 2, "-1500m" is -2) and saturated at ±MaxMilli.
func (q Quantity) Value() int64 { return q.scaledValue(1e9) }

func (q Quantity) scaledValue(nanos uint64) int64 {
	m, r := q.n.abs().divmod(nanos)
	if r != 0 {
		m, _ = m.add(u128{0, 1})
	}
	v := int64(MaxMilli)
	if m.hi == 0 && m.lo < MaxMilli {
		v = int64(m.lo)
	}
	if q.n.negative() {
		return -v
	}
	return v
}

// Format returns the format q prints in.
func (q Quantity) Format() Format {
	if q.format == "" {
		return DecimalSI
	}
	return q.format
}

// IsZero reports whether q is 0.
func (q Quantity) IsZero() bool { return q.n == i128{} }

// Sign returns -1, 0 or 1 as q is negative, zero or positive.
func (q Quantity) Sign() int { return q.n.sign() }

// Cmp returns -1, 0 or 1 as q is less than, equal to or greater than y.
func (q Quantity) Cmp(y Quantity) int { return q.n.cmp(y.n) }

// Neg returns -q.
func (q Quantity) Neg() Quantity { return Quantity{n: q.n.neg(), format: q.format} }

// Add returns q+y in q's format, or y's when q is zero (as Kubernetes'
// Quantity.Add). It fails with ErrOutOfRange rather than wrapping around.
func (q Quantity) Add(y Quantity) (Quantity, error) {
	sum, over := q.n.add(y.n)
	if over {
		return Quantity{}, fmt.Errorf("quantity %s + %s: %w", q, y, ErrOutOfRange)
	}
	f := q.format
	if q.IsZero() {
		f = y.format
	}
	return Quantity{n: sum, format: f}, nil
}

// Sub returns q-y in q's format, or y's when q is zero. It fails with
// ErrOutOfRange rather than wrapping around.
func (q Quantity) Sub(y Quantity) (Quantity, error) {
	d, err := q.Add(y.Neg())
	if err != nil {
		return Quantity{}, fmt.Errorf("quantity %s - %s: %w", q, y, ErrOutOfRange)
	}
	return d, nil
}

var (
	binarySuffixes  = [...]string{"", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"}
	decimalSuffixes = [...]string{"n", "u", "m", "", "k", "M", "G", "T", "P", "E"} // 10^-9 .. 10^18
)

// String returns q in canonical form (see the package documentation);
// Parse(q.String()) gives back q.
func (q Quantity) String() string {
	if q.IsZero() {
		return "0"
	}
	var buf [48]byte
	b := buf[:0]
	if q.n.negative() {
		b = append(b, '-')
	}
	m := q.n.abs()
	if q.format == BinarySI {
		if units, r := m.divmod(1e9); r == 0 && units.cmp(u128{0, 1024}) >= 0 {
			k := 0
			for k < len(binarySuffixes)-1 && units.lo&1023 == 0 {
				units, _ = units.divmod(1024)
				k++
			}
			b = units.appendDecimal(b)
			return string(append(b, binarySuffixes[k]...))
		}
		// Below 1Ki or not whole: decimal, the form Kubernetes prints.
	}
	// The largest power of 1000 that divides m, from 10^-9 up; DecimalSI
	// stops at E.
	exp := -9
	for exp < 18 || q.format == DecimalExponent {
		d, r := m.divmod(1000)
		if r != 0 {
			break
		}
		m, exp = d, exp+3
	}
	b = m.appendDecimal(b)
	switch {
	case q.format == DecimalExponent && exp != 0:
		b = append(b, 'e')
		b = strconv.AppendInt(b, int64(exp), 10)
	case q.format != DecimalExponent:
		b = append(b, decimalSuffixes[exp/3+3]...)
	}
	return string(b)
}
