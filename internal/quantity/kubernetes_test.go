package quantity

import (
	"errors"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	inf "gopkg.in/inf.v0"
	"k8s.io/apimachinery/pkg/api/resource"
)

// This file checks Parse against Kubernetes' own resource.ParseQuantity
// (k8s.io/apimachinery, a test-only dependency) on the table of
// compat_test.go, on random quantities and under the fuzzer.

// compareWithKubernetes fails t if Parse(s) and resource.ParseQuantity(s)
// disagree beyond the departures the package documentation names.
func compareWithKubernetes(t *testing.T, s string) {
	t.Helper()
	if bigExponent(s) {
		return // Kubernetes would build a number with that many digits
	}
	kq, kerr := resource.ParseQuantity(s)
	q, err := Parse(s)
	switch {
	case kerr != nil && err != nil:
		return
	case kerr != nil:
		t.Fatalf("Parse(%q) = %s; Kubernetes rejects it: %v", s, q, kerr)
	case err != nil:
		if !errors.Is(err, ErrInvalid) {
			t.Fatalf("Parse(%q) error %v does not wrap ErrInvalid", s, err)
		}
		if noDigits(s) || errors.Is(err, ErrOutOfRange) && outsideRange(kq) {
			return // departures: a quantity without digits, and the range
		}
		t.Fatalf("Parse(%q): %v; Kubernetes accepts it as %s", s, err, kq.String())
	}
	want := new(inf.Dec).Round(kq.AsDec(), 9, inf.RoundUp).String()
	want = strings.TrimSuffix(want, ".000000000")
	if got := exact(q); got != want {
		t.Fatalf("Parse(%q) = %s, Kubernetes %s", s, got, want)
	}
	if q.Format() != Format(kq.Format) {
		t.Fatalf("Parse(%q).Format() = %s, Kubernetes %s", s, q.Format(), kq.Format)
	}
	n, sfx := kq.CanonicalizeBytes(nil)
	canon := string(n) + string(sfx)
	aboveE := q.Format() == DecimalSI && (q.Cmp(MustParse("1000E")) >= 0 || q.Cmp(MustParse("-1000E")) <= 0)
	if got := q.String(); got != canon && !aboveE {
		t.Fatalf("Parse(%q).String() = %q, Kubernetes %q", s, got, canon)
	}
	// Kubernetes' MilliValue and Value overflow past int64 and round some
	// negative fractions toward +∞; compare where they are sound.
	if kq.Sign() >= 0 && kq.CmpInt64(math.MaxInt64/1000) < 0 {
		if q.MilliValue() != kq.MilliValue() || q.Value() != kq.Value() {
			t.Fatalf("Parse(%q): MilliValue %d, Value %d; Kubernetes %d, %d", s, q.MilliValue(), q.Value(), kq.MilliValue(), kq.Value())
		}
	}
}

// bigExponent reports whether s has an exponent beyond ±60.
func bigExponent(s string) bool {
	i := strings.LastIndexAny(s, "eE")
	if i < 0 {
		return false
	}
	e, err := strconv.ParseInt(s[i+1:], 10, 64)
	return err == nil && (e > 60 || e < -60)
}

// noDigits reports whether s's number has no digit ("m", "-", ".Ki").
func noDigits(s string) bool {
	s = strings.TrimLeft(s, "+-")
	return s == "" || !isDigit(s[0]) && (s[0] != '.' || len(s) == 1 || !isDigit(s[1]))
}

// outsideRange reports whether Kubernetes' quantity exceeds 2^127-1 nano-units.
func outsideRange(kq resource.Quantity) bool {
	limit, _ := new(inf.Dec).SetString("170141183460469231731687303715.884105727")
	d := new(inf.Dec).Abs(kq.AsDec())
	return d.Cmp(limit) > 0
}

func TestKubernetesTable(t *testing.T) {
	for _, tc := range kubernetesCases {
		compareWithKubernetes(t, tc.in)
	}
}

// randomQuantity builds quantities from the grammar's pieces, with some
// noise: what a person or a program might write.
func randomQuantity(r *rand.Rand) string {
	var b strings.Builder
	pick := func(options ...string) { b.WriteString(options[r.IntN(len(options))]) }
	digits := func(max int) {
		for range r.IntN(max + 1) {
			b.WriteByte(byte('0' + r.IntN(10)))
		}
	}
	pick("", "", "", "+", "-")
	if r.IntN(4) == 0 {
		pick("0", "00")
	}
	digits(22)
	if r.IntN(2) == 0 {
		b.WriteByte('.')
		digits(22)
	}
	switch r.IntN(4) {
	case 0:
		pick("", "n", "u", "m", "k", "M", "G", "T", "P", "E")
	case 1:
		pick("Ki", "Mi", "Gi", "Ti", "Pi", "Ei")
	case 2:
		pick("e", "E")
		pick("", "", "+", "-")
		b.WriteString(strconv.Itoa(r.IntN(45)))
	default:
		pick("", "K", "ki", "KiB", " ", ".", "e", "i", "x", "Gi ")
	}
	return b.String()
}

func TestKubernetesRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(17, 4))
	n := 20000
	if testing.Short() {
		n = 2000
	}
	for range n {
		compareWithKubernetes(t, randomQuantity(r))
	}
}

func FuzzKubernetes(f *testing.F) {
	for _, tc := range kubernetesCases {
		f.Add(tc.in)
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 50 {
		f.Add(randomQuantity(r))
	}
	f.Fuzz(func(t *testing.T, s string) {
		if len(s) > 1000 {
			return
		}
		compareWithKubernetes(t, s)
	})
}
