package quantity

import (
	"fmt"
	"math/big"
	"math/bits"
	"strconv"
	"strings"
)

// suffix is what a quantity's suffix multiplies its number by:
// 10^decExp * 2^binExp.
type suffix struct {
	decExp, binExp int
	format         Format
}

var suffixes = map[string]suffix{
	"":   {0, 0, DecimalSI},
	"n":  {-9, 0, DecimalSI},
	"u":  {-6, 0, DecimalSI},
	"m":  {-3, 0, DecimalSI},
	"k":  {3, 0, DecimalSI},
	"M":  {6, 0, DecimalSI},
	"G":  {9, 0, DecimalSI},
	"T":  {12, 0, DecimalSI},
	"P":  {15, 0, DecimalSI},
	"E":  {18, 0, DecimalSI},
	"Ki": {0, 10, BinarySI},
	"Mi": {0, 20, BinarySI},
	"Gi": {0, 30, BinarySI},
	"Ti": {0, 40, BinarySI},
	"Pi": {0, 50, BinarySI},
	"Ei": {0, 60, BinarySI},
}

const (
	// maxLength bounds the text of a quantity. No real quantity comes near
	// it; it keeps hostile input from costing time and memory (and errors
	// from quoting it whole).
	maxLength = 128
	// maxExponent bounds a parsed exponent; anything larger is already far
	// out of range (or finer than 1m) for any mantissa that is not zero.
	maxExponent = 10_000
	// maxDigits bounds the significant digits of a number. Exact quantities
	// need few: 2^-60 has 60 decimals, and 10^20 milli-units is out of range.
	maxDigits = 100
)

// Parse parses a quantity of at most 128 characters; see the package
// documentation for the syntax, range and precision. Errors wrap ErrInvalid (and ErrOutOfRange when the
// magnitude is too large) and quote the input:
//
//	invalid quantity "12Zi": unknown suffix "Zi"
func Parse(s string) (Quantity, error) {
	fail := func(format string, args ...any) (Quantity, error) {
		return Quantity{}, fmt.Errorf("%w %q: %s", ErrInvalid, s, fmt.Sprintf(format, args...))
	}
	if s == "" {
		return fail("empty string")
	}
	if len(s) > maxLength {
		return Quantity{}, fmt.Errorf("%w %q...: longer than %d characters", ErrInvalid, s[:16], maxLength)
	}
	if strings.TrimSpace(s) != s {
		return fail("surrounding whitespace is not allowed")
	}
	rest, negative := s, false
	if rest[0] == '+' || rest[0] == '-' {
		negative, rest = rest[0] == '-', rest[1:]
	}
	n := 0
	for n < len(rest) && (isDigit(rest[n]) || rest[n] == '.') {
		n++
	}
	number, sfx := rest[:n], rest[n:]
	intPart, fracPart, hasDot := strings.Cut(number, ".")
	switch {
	case number == "" && rest == "":
		return fail("expected a number after the sign")
	case number == "":
		return fail("expected a number, found %q", rest)
	case strings.Contains(fracPart, "."):
		return fail("malformed number %q", number)
	case hasDot && intPart == "" && fracPart == "":
		return fail("malformed number %q", number)
	}
	suf, ok := suffixes[sfx]
	if !ok {
		if len(sfx) < 2 || sfx[0] != 'e' && sfx[0] != 'E' {
			return fail("unknown suffix %q", sfx)
		}
		exp, ok := parseExponent(sfx[1:])
		if !ok {
			return fail("invalid exponent %q", sfx)
		}
		suf = suffix{decExp: exp, format: DecimalExponent}
	}

	// The value is digits * 10^p milli-units * 2^binExp, with digits free
	// of leading and trailing zeros.
	digits := strings.TrimLeft(intPart+fracPart, "0")
	if digits == "" {
		return Quantity{format: suf.format}, nil
	}
	trimmed := strings.TrimRight(digits, "0")
	p := suf.decExp + 3 - len(fracPart) + len(digits) - len(trimmed)
	digits = trimmed

	// digits >= 10^(len-1), so this bound alone puts it out of range.
	if len(digits)-1+p > 19 {
		return Quantity{}, outOfRange(s)
	}
	if len(digits) > maxDigits {
		return fail("too many significant digits (%d, at most %d)", len(digits), maxDigits)
	}
	var milli uint64
	if p >= 0 && len(digits)+p <= 18 {
		// Fast path: digits*10^p < 10^18 fits; then scale by 2^binExp.
		d, _ := strconv.ParseUint(digits, 10, 64)
		for range p {
			d *= 10
		}
		hi, lo := bits.Mul64(d, 1<<suf.binExp)
		if hi != 0 || lo > MaxMilli {
			return Quantity{}, outOfRange(s)
		}
		milli = lo
	} else {
		m, exact := exactMilli(digits, p, suf.binExp)
		if !exact {
			return fail("precision finer than 1m (0.001) is not supported")
		}
		if !m.IsUint64() || m.Uint64() > MaxMilli {
			return Quantity{}, outOfRange(s)
		}
		milli = m.Uint64()
	}
	v := int64(milli)
	if negative {
		v = -v
	}
	return Quantity{milli: v, format: suf.format}, nil
}

func outOfRange(s string) error {
	return fmt.Errorf("%w %q: %w: magnitude above %dm (about 9.2e15, or 8Pi)", ErrInvalid, s, ErrOutOfRange, int64(MaxMilli))
}

// exactMilli computes digits * 10^p * 2^binExp when it is a whole number.
func exactMilli(digits string, p, binExp int) (*big.Int, bool) {
	// digits has no factor 10, so dividing by 10^-p needs 5^-p | digits;
	// with digits < 10^maxDigits that bounds -p well below 150.
	if p < -150 {
		return nil, false
	}
	num, _ := new(big.Int).SetString(digits, 10)
	num.Lsh(num, uint(binExp))
	ten := big.NewInt(10)
	if p >= 0 {
		return num.Mul(num, new(big.Int).Exp(ten, big.NewInt(int64(p)), nil)), true
	}
	den := new(big.Int).Exp(ten, big.NewInt(int64(-p)), nil)
	q, r := num.QuoRem(num, den, new(big.Int))
	return q, r.Sign() == 0
}

// parseExponent parses [+-]digits, clamping its magnitude to maxExponent.
func parseExponent(s string) (int, bool) {
	neg := false
	if s != "" && (s[0] == '+' || s[0] == '-') {
		neg, s = s[0] == '-', s[1:]
	}
	if s == "" {
		return 0, false
	}
	e := 0
	for i := 0; i < len(s); i++ {
		if !isDigit(s[i]) {
			return 0, false
		}
		e = min(e*10+int(s[i]-'0'), maxExponent)
	}
	if neg {
		e = -e
	}
	return e, true
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }
