package quantity

import (
	"fmt"
	"math/big"
	"strconv"
	"strings"
)

// suffix is what a quantity's suffix multiplies its number by:
// 10^decExp * 2^binExp.
type suffix struct {
	decExp int
	binExp uint
	format Format
}

// lookupSuffix interprets the SI suffixes; exponents are parsed apart.
func lookupSuffix(s string) (suffix, bool) {
	switch s {
	case "":
		return suffix{0, 0, DecimalSI}, true
	case "m":
		return suffix{-3, 0, DecimalSI}, true
	case "Mi":
		return suffix{0, 20, BinarySI}, true
	case "Gi":
		return suffix{0, 30, BinarySI}, true
	case "k":
		return suffix{3, 0, DecimalSI}, true
	case "Ki":
		return suffix{0, 10, BinarySI}, true
	case "n":
		return suffix{-9, 0, DecimalSI}, true
	case "u":
		return suffix{-6, 0, DecimalSI}, true
	case "M":
		return suffix{6, 0, DecimalSI}, true
	case "G":
		return suffix{9, 0, DecimalSI}, true
	case "T":
		return suffix{12, 0, DecimalSI}, true
	case "P":
		return suffix{15, 0, DecimalSI}, true
	case "E":
		return suffix{18, 0, DecimalSI}, true
	case "Ti":
		return suffix{0, 40, BinarySI}, true
	case "Pi":
		return suffix{0, 50, BinarySI}, true
	case "Ei":
		return suffix{0, 60, BinarySI}, true
	}
	return suffix{}, false
}

// binaryCap is where Kubernetes caps a binary quantity: 2^63-1 units.
var binaryCap, _ = u128{0, 1<<63 - 1}.mul(1e9)

// Parse parses a quantity as Kubernetes' resource.ParseQuantity does; see
// the package documentation for the syntax, rounding and range. Errors
// wrap ErrInvalid (and ErrOutOfRange when the magnitude is too large) and
// quote the input:
//
//	invalid quantity "12Zi": unknown suffix "Zi"
func Parse(s string) (Quantity, error) {
	if s == "" {
		return Quantity{}, invalid(s, "empty string")
	}
	i, negative := 0, false
	if s[0] == '+' || s[0] == '-' {
		negative, i = s[0] == '-', 1
	}
	// The number's digits: the first 19 significant ones accumulate in
	// mant; more send the number to the exact slow path.
	start := i
	var mant uint64
	sig, fracLen, dot := 0, 0, false
	for ; i < len(s); i++ {
		c := s[i]
		switch {
		case '0' <= c && c <= '9':
			if dot {
				fracLen++
			}
			if sig > 0 || c != '0' {
				if sig < 19 {
					mant = mant*10 + uint64(c-'0')
				}
				sig++
			}
			continue
		case c == '.' && !dot:
			dot = true
			continue
		}
		break
	}
	number, sfx := s[start:i], s[i:]
	switch {
	case number == "" && sfx == "":
		return Quantity{}, invalid(s, "expected a number after the sign")
	case number == "." || strings.HasPrefix(sfx, "."):
		n := len(number) + len(sfx) - len(strings.TrimLeft(sfx, "0123456789."))
		return Quantity{}, invalid(s, "malformed number %q", s[start:start+n])
	case number == "":
		return Quantity{}, invalid(s, "expected a number, found %q", sfx)
	}
	suf, ok := lookupSuffix(sfx)
	if !ok {
		if len(sfx) < 2 || sfx[0] != 'e' && sfx[0] != 'E' {
			return Quantity{}, invalid(s, "unknown suffix %q", sfx)
		}
		exp, err := parseExponent(sfx[1:], len(s))
		if err != "" {
			return Quantity{}, invalid(s, "invalid exponent %q: %s", sfx, err)
		}
		suf = suffix{decExp: exp, format: DecimalExponent}
	}
	if sig == 0 {
		return Quantity{format: suf.format}, nil
	}

	// The magnitude is number * 10^p nano-units * 2^binExp, rounded up to
	// a whole nano-unit.
	p := suf.decExp + 9 - fracLen
	var mag u128
	var over bool
	if sig <= 19 {
		mag, over = small(mant, p, suf.binExp)
	} else {
		mag, over = exactMagnitude(number, p, suf.binExp)
	}
	if suf.format == BinarySI && (over || mag.cmp(binaryCap) > 0) {
		// Kubernetes caps a binary quantity rather than refusing it.
		mag, over = binaryCap, false
	}
	if over || mag.cmp(maxMagnitude) > 0 {
		return Quantity{}, outOfRange(s)
	}
	format := suf.format
	if format == BinarySI && mag.cmp(u128{0, 1e9}) < 0 {
		// Below one unit there is nothing binary to print.
		format = DecimalSI
	}
	return Quantity{n: signed(mag, negative), format: format}, nil
}

// small computes ceil(mant * 10^p * 2^b) for a mantissa in a uint64.
func small(mant uint64, p int, b uint) (u128, bool) {
	m, _ := u128{0, mant}.shl(b) // mant < 2^64 and b <= 60
	if p < 0 {
		return m.ceilDivPow10(-p), false
	}
	if p > 38 {
		return m, true
	}
	return m.mulPow10(p)
}

// exactMagnitude computes ceil(number * 10^p * 2^b) for a number of more than 19
// significant digits.
func exactMagnitude(number string, p int, b uint) (u128, bool) {
	digits := strings.TrimLeft(strings.Replace(number, ".", "", 1), "0")
	trimmed := strings.TrimRight(digits, "0")
	p += len(digits) - len(trimmed)
	digits = trimmed
	n, _ := new(big.Int).SetString(digits, 10)
	n.Lsh(n, b)
	switch {
	case p >= 0 && len(digits)+p > 40:
		return u128{}, true
	case p >= 0:
		n.Mul(n, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(p)), nil))
	case -p > len(digits)+19:
		// digits * 2^b < 10^(len+19): less than one nano-unit.
		return u128{0, 1}, false
	default:
		q, r := n.QuoRem(n, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(-p)), nil), new(big.Int))
		if r.Sign() != 0 {
			q.Add(q, big.NewInt(1))
		}
		n = q
	}
	if n.BitLen() > 128 {
		return u128{}, true
	}
	var buf [16]byte
	n.FillBytes(buf[:])
	return u128{be64(buf[:8]), be64(buf[8:])}, false
}

func be64(b []byte) uint64 {
	var v uint64
	for _, c := range b {
		v = v<<8 | uint64(c)
	}
	return v
}

// parseExponent parses [+-]digits, as Kubernetes does into an int64. A
// magnitude beyond limit (the length of the whole quantity plus a margin)
// is clamped there: any such exponent already puts a non-zero number far
// out of range or below one nano-unit.
func parseExponent(s string, limit int) (int, string) {
	signed, neg := s, false
	if s != "" && (s[0] == '+' || s[0] == '-') {
		neg, s = s[0] == '-', s[1:]
	}
	if s == "" {
		return 0, "no digits"
	}
	limit += 64
	e := 0
	for i := 0; i < len(s); i++ {
		if !isDigit(s[i]) {
			return 0, fmt.Sprintf("unexpected %q", s[i:])
		}
		e = min(e*10+int(s[i]-'0'), limit)
	}
	if _, err := strconv.ParseInt(signed, 10, 64); err != nil {
		return 0, "beyond 64 bits"
	}
	if neg {
		e = -e
	}
	return e, ""
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// invalid returns an ErrInvalid error quoting s (its first 64 bytes).
func invalid(s, format string, args ...any) error {
	return fmt.Errorf("%w %s: %s", ErrInvalid, quote(s), fmt.Sprintf(format, args...))
}

func outOfRange(s string) error {
	return fmt.Errorf("%w %s: %w: magnitude above 2^127-1 nano-units (about 1.7e29)", ErrInvalid, quote(s), ErrOutOfRange)
}

func quote(s string) string {
	if len(s) > 64 {
		return strconv.Quote(s[:64]) + "..."
	}
	return strconv.Quote(s)
}
