package quantity

import (
	"math/bits"
	"strconv"
)

// u128 is an unsigned 128-bit integer: a magnitude in nano-units.
type u128 struct{ hi, lo uint64 }

// i128 is a two's-complement 128-bit integer: a quantity in nano-units.
type i128 struct{ hi, lo uint64 }

// maxMagnitude is the largest magnitude of a quantity, 2^127-1 nano-units
// (about 1.7e29 units). The range is symmetric.
var maxMagnitude = u128{hi: 1<<63 - 1, lo: 1<<64 - 1}

// pow10 holds 10^0 through 10^19, the powers of ten in a uint64.
var pow10 = func() (p [20]uint64) {
	p[0] = 1
	for i := 1; i < len(p); i++ {
		p[i] = p[i-1] * 10
	}
	return p
}()

func (a u128) isZero() bool { return a.hi == 0 && a.lo == 0 }

func (a u128) cmp(b u128) int {
	switch {
	case a.hi < b.hi || a.hi == b.hi && a.lo < b.lo:
		return -1
	case a == b:
		return 0
	}
	return 1
}

// mul returns a*m and whether it overflowed.
func (a u128) mul(m uint64) (u128, bool) {
	hh, hl := bits.Mul64(a.hi, m)
	lh, ll := bits.Mul64(a.lo, m)
	hi, carry := bits.Add64(hl, lh, 0)
	return u128{hi, ll}, hh != 0 || carry != 0
}

// mulPow10 returns a*10^p and whether it overflowed.
func (a u128) mulPow10(p int) (u128, bool) {
	if a.isZero() {
		return a, false
	}
	for p > 0 {
		k := min(p, 19)
		var over bool
		if a, over = a.mul(pow10[k]); over {
			return a, true
		}
		p -= k
	}
	return a, false
}

// shl returns a<<n (n < 64) and whether it overflowed.
func (a u128) shl(n uint) (u128, bool) {
	if n == 0 {
		return a, false
	}
	if a.hi>>(64-n) != 0 {
		return a, true
	}
	return u128{a.hi<<n | a.lo>>(64-n), a.lo << n}, false
}

// divmod returns a/d and a%d.
func (a u128) divmod(d uint64) (u128, uint64) {
	if a.hi == 0 {
		return u128{0, a.lo / d}, a.lo % d
	}
	qhi, r := a.hi/d, a.hi%d
	qlo, r := bits.Div64(r, a.lo, d)
	return u128{qhi, qlo}, r
}

// ceilDivPow10 returns a/10^p rounded up.
func (a u128) ceilDivPow10(p int) u128 {
	inexact := false
	for p > 0 && !a.isZero() {
		k := min(p, 19)
		var r uint64
		a, r = a.divmod(pow10[k])
		inexact = inexact || r != 0
		p -= k
	}
	if inexact {
		a, _ = a.add(u128{0, 1})
	}
	return a
}

func (a u128) add(b u128) (u128, bool) {
	lo, c := bits.Add64(a.lo, b.lo, 0)
	hi, c := bits.Add64(a.hi, b.hi, c)
	return u128{hi, lo}, c != 0
}

// appendDecimal appends a in decimal.
func (a u128) appendDecimal(b []byte) []byte {
	if a.hi == 0 {
		return strconv.AppendUint(b, a.lo, 10)
	}
	// At most 39 digits: split into chunks of 19.
	var chunks [3]uint64
	n := 0
	for !a.isZero() {
		a, chunks[n] = a.divmod(pow10[19])
		n++
	}
	b = strconv.AppendUint(b, chunks[n-1], 10)
	for i := n - 2; i >= 0; i-- {
		var pad [19]byte
		s := strconv.AppendUint(pad[:0], chunks[i], 10)
		for range 19 - len(s) {
			b = append(b, '0')
		}
		b = append(b, s...)
	}
	return b
}

func (a i128) negative() bool { return int64(a.hi) < 0 }

func (a i128) neg() i128 {
	lo, c := bits.Add64(^a.lo, 1, 0)
	return i128{^a.hi + c, lo}
}

// abs returns the magnitude of a, which is at most maxMagnitude.
func (a i128) abs() u128 {
	if a.negative() {
		a = a.neg()
	}
	return u128(a)
}

// signed returns the magnitude m (at most maxMagnitude) with a sign.
func signed(m u128, negative bool) i128 {
	if negative {
		return i128(m).neg()
	}
	return i128(m)
}

// add returns a+b and whether the sum's magnitude exceeds maxMagnitude.
func (a i128) add(b i128) (i128, bool) {
	lo, c := bits.Add64(a.lo, b.lo, 0)
	hi, _ := bits.Add64(a.hi, b.hi, c)
	s := i128{hi, lo}
	over := a.negative() == b.negative() && s.negative() != a.negative()
	return s, over || s == i128{hi: 1 << 63}
}

func (a i128) cmp(b i128) int {
	if a.hi != b.hi {
		if int64(a.hi) < int64(b.hi) {
			return -1
		}
		return 1
	}
	switch {
	case a.lo < b.lo:
		return -1
	case a.lo > b.lo:
		return 1
	}
	return 0
}

func (a i128) sign() int {
	switch {
	case a.negative():
		return -1
	case a.hi == 0 && a.lo == 0:
		return 0
	}
	return 1
}
