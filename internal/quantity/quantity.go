package quantity

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
)

var (
	// ErrInvalid is the category of errors returned by Parse.
	ErrInvalid = errors.New("invalid quantity")
	// ErrOutOfRange is the category of errors for quantities whose
	// magnitude exceeds MaxMilli, from Parse (which wraps ErrInvalid too),
	// the constructors, Add and Sub.
	ErrOutOfRange = errors.New("out of range")
)

// MaxMilli is the largest magnitude of a Quantity, in milli-units. The
// range is symmetric: -MaxMilli is the smallest quantity.
const MaxMilli = math.MaxInt64

// Format is the family of suffix a quantity prints with.
type Format string

// The formats. The zero Format prints as DecimalSI.
const (
	DecimalSI       Format = "DecimalSI"       // "500m", "2k", "1.5" -> "1500m"
	BinarySI        Format = "BinarySI"        // "1Gi", "1536Mi"
	DecimalExponent Format = "DecimalExponent" // "1e3", "500e-3"
)

// Quantity is an exact amount of a resource: a whole number of milli-units
// and the format it prints in. The zero value is 0. Compare quantities with
// Cmp, not ==, which also compares formats.
type Quantity struct {
	milli  int64
	format Format
}

// NewQuantity returns value units in format f. It fails when value*1000
// exceeds MaxMilli.
func NewQuantity(value int64, f Format) (Quantity, error) {
	if value > MaxMilli/1000 || value < -MaxMilli/1000 {
		return Quantity{}, fmt.Errorf("quantity %d: %w", value, ErrOutOfRange)
	}
	return Quantity{milli: value * 1000, format: f}, nil
}

// NewMilliQuantity returns milli milli-units in format f. It fails only for
// math.MinInt64, whose magnitude exceeds MaxMilli.
func NewMilliQuantity(milli int64, f Format) (Quantity, error) {
	if milli == math.MinInt64 {
		return Quantity{}, fmt.Errorf("quantity %dm: %w", milli, ErrOutOfRange)
	}
	return Quantity{milli: milli, format: f}, nil
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

// MilliValue returns q in milli-units, exactly.
func (q Quantity) MilliValue() int64 { return q.milli }

// Value returns q in units, rounded away from zero as Kubernetes does:
// "1500m" is 2 and "-1500m" is -2.
func (q Quantity) Value() int64 {
	v := q.milli / 1000
	switch r := q.milli % 1000; {
	case r > 0:
		v++
	case r < 0:
		v--
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
func (q Quantity) IsZero() bool { return q.milli == 0 }

// Sign returns -1, 0 or 1 as q is negative, zero or positive.
func (q Quantity) Sign() int { return cmp.Compare(q.milli, 0) }

// Cmp returns -1, 0 or 1 as q is less than, equal to or greater than y.
func (q Quantity) Cmp(y Quantity) int { return cmp.Compare(q.milli, y.milli) }

// Neg returns -q.
func (q Quantity) Neg() Quantity { return Quantity{milli: -q.milli, format: q.format} }

// Add returns q+y in q's format (y's if q has none). It fails with
// ErrOutOfRange rather than wrapping around.
func (q Quantity) Add(y Quantity) (Quantity, error) {
	sum := q.milli + y.milli
	if (q.milli > 0 && y.milli > 0 && sum < 0) || (q.milli < 0 && y.milli < 0 && sum >= 0) || sum == math.MinInt64 {
		return Quantity{}, fmt.Errorf("quantity %s + %s: %w", q, y, ErrOutOfRange)
	}
	f := q.format
	if f == "" {
		f = y.format
	}
	return Quantity{milli: sum, format: f}, nil
}

// Sub returns q-y in q's format (y's if q has none). It fails with
// ErrOutOfRange rather than wrapping around.
func (q Quantity) Sub(y Quantity) (Quantity, error) {
	d, err := q.Add(y.Neg())
	if err != nil {
		return Quantity{}, fmt.Errorf("quantity %s - %s: %w", q, y, ErrOutOfRange)
	}
	return d, nil
}

var (
	binarySuffixes  = []string{"", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"}
	decimalSuffixes = map[int]string{-3: "m", 0: "", 3: "k", 6: "M", 9: "G", 12: "T", 15: "P", 18: "E"}
)

// String returns q in canonical form (see the package documentation);
// Parse(q.String()) gives back q.
func (q Quantity) String() string {
	if q.milli == 0 {
		return "0"
	}
	sign, m := "", q.milli
	if m < 0 {
		sign, m = "-", -m
	}
	if q.format == BinarySI && m%1000 == 0 && m/1000 >= 1024 {
		v, k := m/1000, 0
		for v%1024 == 0 && k < len(binarySuffixes)-1 {
			v, k = v/1024, k+1
		}
		if k > 0 {
			return sign + strconv.FormatInt(v, 10) + binarySuffixes[k]
		}
		// Not a whole number of Ki: fall through to decimal, the form
		// Parse would give this string back in.
	}
	// The largest power of 1000 (down to milli) that divides q.
	exp := -3
	for exp < 18 && m%1000 == 0 {
		m /= 1000
		exp += 3
	}
	suffix := decimalSuffixes[exp]
	if q.format == DecimalExponent && exp != 0 {
		suffix = "e" + strconv.Itoa(exp)
	}
	return sign + strconv.FormatInt(m, 10) + suffix
}
