package validation

import (
	"errors"
	"fmt"
	"math/big"
	"strconv"
)

// quantityErrMsg is Kubernetes' message for a malformed quantity.
const quantityErrMsg = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"

// maxQuantityLength bounds the text of a quantity: parsing its digits
// costs more than linear time, and no real quantity needs more.
const maxQuantityLength = 128

// maxQuantityExponent bounds "1e<n>" so a hostile exponent cannot make
// validation build a gigantic number.
const maxQuantityExponent = 1000

var (
	errQuantity        = errors.New(quantityErrMsg)
	errQuantityTooLong = fmt.Errorf("quantities must be no more than %d characters", maxQuantityLength)
)

// Multipliers of the suffixes of a quantity.
var (
	decimalSuffixes = map[string]int{"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
	binarySuffixes  = map[string]uint{"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
)

// parseQuantity parses a resource quantity ("500m", "1.5Gi", "2e3", "+1k")
// into an exact rational. The grammar is Kubernetes':
//
//	quantity ::= [+-] number suffix
//	number   ::= digits | digits "." | "." digits | digits "." digits
//	suffix   ::= "" | n | u | m | k | M | G | T | P | E
//	           | Ki | Mi | Gi | Ti | Pi | Ei | (e|E) [+-] digits
func parseQuantity(s string) (*big.Rat, error) {
	if len(s) > maxQuantityLength {
		return nil, errQuantityTooLong
	}
	i := 0
	neg := false
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		neg = s[i] == '-'
		i++
	}
	intStart := i
	for i < len(s) && isDigit(s[i]) {
		i++
	}
	intPart := s[intStart:i]
	fracPart := ""
	if i < len(s) && s[i] == '.' {
		i++
		fracStart := i
		for i < len(s) && isDigit(s[i]) {
			i++
		}
		fracPart = s[fracStart:i]
	}
	if intPart == "" && fracPart == "" {
		return nil, errQuantity
	}
	mantissa, ok := new(big.Int).SetString(intPart+fracPart+"0", 10)
	if !ok {
		return nil, errQuantity
	}
	// mantissa carries one extra zero digit so that "" + "" never reaches
	// SetString; divide it back out with the fraction's scale.
	v := new(big.Rat).SetFrac(mantissa, pow10(len(fracPart)+1))

	suffix := s[i:]
	switch exp, isDecimal := decimalSuffixes[suffix]; {
	case isDecimal:
		scale(v, exp)
	case binarySuffixes[suffix] > 0:
		v.Mul(v, new(big.Rat).SetInt(new(big.Int).Lsh(big.NewInt(1), binarySuffixes[suffix])))
	case len(suffix) > 1 && (suffix[0] == 'e' || suffix[0] == 'E'):
		digits := suffix[1:]
		if digits[0] == '+' || digits[0] == '-' {
			digits = digits[1:]
		}
		if digits == "" {
			return nil, errQuantity
		}
		for j := 0; j < len(digits); j++ {
			if !isDigit(digits[j]) {
				return nil, errQuantity
			}
		}
		exp, err := strconv.Atoi(suffix[1:])
		if err != nil || exp > maxQuantityExponent || exp < -maxQuantityExponent {
			return nil, errQuantity
		}
		scale(v, exp)
	default:
		return nil, errQuantity
	}
	if neg {
		v.Neg(v)
	}
	return v, nil
}

func scale(v *big.Rat, exp int) {
	switch {
	case exp > 0:
		v.Mul(v, new(big.Rat).SetInt(pow10(exp)))
	case exp < 0:
		v.Quo(v, new(big.Rat).SetInt(pow10(-exp)))
	}
}

func pow10(n int) *big.Int { return new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(n)), nil) }

func isDigit(c byte) bool { return '0' <= c && c <= '9' }
