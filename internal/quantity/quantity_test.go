package quantity

import (
	"errors"
	"math"
	"strconv"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		milli    int64
		str      string // canonical String
	}{
		{"zero", "0", 0, "0"},
		{"negative zero", "-0", 0, "0"},
		{"zero with suffix", "0Gi", 0, "0"},
		{"zero with huge exponent", "0e99999", 0, "0"},
		{"integer", "2", 2000, "2"},
		{"plus sign", "+2", 2000, "2"},
		{"negative", "-2", -2000, "-2"},
		{"decimal", "0.5", 500, "500m"},
		{"decimal above one", "1.5", 1500, "1500m"},
		{"leading dot", ".5", 500, "500m"},
		{"trailing dot", "5.", 5000, "5"},
		{"leading zeros", "007", 7000, "7"},
		{"trailing fraction zeros", "1.500", 1500, "1500m"},
		{"milli", "500m", 500, "500m"},
		{"milli whole", "1000m", 1000, "1"},
		{"milli above one", "2500m", 2500, "2500m"},
		{"nano whole milli", "1000000n", 1, "1m"},
		{"micro whole milli", "5000u", 5, "5m"},
		{"kilo", "2k", 2_000_000, "2k"},
		{"kilo fraction", "1.5k", 1_500_000, "1500"},
		{"mega", "3M", 3e9, "3M"},
		{"giga", "1G", 1e12, "1G"},
		{"tera", "1T", 1e15, "1T"},
		{"peta", "9P", 9e18, "9P"},
		{"exa fraction", "0.001E", 1e18, "1P"},
		{"thousand is kilo", "1000", 1_000_000, "1k"},
		{"kibi", "1Ki", 1024_000, "1Ki"},
		{"mebi", "128Mi", 128 << 20 * 1000, "128Mi"},
		{"gibi promotes", "1024Mi", 1 << 30 * 1000, "1Gi"},
		{"gibi fraction", "1.5Gi", 1536 << 20 * 1000, "1536Mi"},
		{"tebi", "2Ti", 2 << 40 * 1000, "2Ti"},
		{"pebi", "8Pi", 8 << 50 * 1000, "8Pi"},
		{"exbi fraction", "0.0078125Ei", 1 << 53 * 1000, "8Pi"},
		{"binary below 1Ki prints decimal", "0.5Ki", 512_000, "512"},
		{"binary not whole Ki prints decimal", "1.5Ki", 1536_000, "1536"},
		{"binary fraction of a unit", "0.1Ki", 102_400, "102400m"},
		{"binary exact tiny fraction", "0.0009765625Ki", 1000, "1"},
		{"negative binary", "-1Gi", -(1 << 30 * 1000), "-1Gi"},
		{"exponent", "1e3", 1_000_000, "1e3"},
		{"upper exponent", "1E3", 1_000_000, "1e3"},
		{"plus exponent", "1e+3", 1_000_000, "1e3"},
		{"negative exponent", "1e-3", 1, "1e-3"},
		{"exponent zero", "15e0", 15_000, "15"},
		{"exponent not multiple of 3", "15e2", 1_500_000, "1500"},
		{"exponent fraction", "5e-1", 500, "500e-3"},
		{"exponent leading zeros", "1e003", 1_000_000, "1e3"},
		{"largest", "9223372036854775807m", math.MaxInt64, "9223372036854775807m"},
		{"smallest", "-9223372036854775807m", -math.MaxInt64, "-9223372036854775807m"},
		{"largest units", "9223372036854775", 9223372036854775000, "9223372036854775"},
		{"many fraction digits", "1.000000000000000000000000000000", 1000, "1"},
		{"long zero run before digits", "0.000000000000000000000000000000001e33", 1000, "1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q, err := Parse(tc.in)
			if err != nil {
				t.Fatalf("Parse(%q): %v", tc.in, err)
			}
			if q.MilliValue() != tc.milli {
				t.Fatalf("Parse(%q).MilliValue() = %d, want %d", tc.in, q.MilliValue(), tc.milli)
			}
			if q.String() != tc.str {
				t.Fatalf("Parse(%q).String() = %q, want %q", tc.in, q.String(), tc.str)
			}
			again, err := Parse(q.String())
			if err != nil || again.Cmp(q) != 0 || again.String() != q.String() {
				t.Fatalf("round trip through %q = %v (%q), %v", q.String(), again.MilliValue(), again.String(), err)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	const outOfRange = "out of range: magnitude above 2^127-1 nano-units"
	for _, tc := range []struct {
		name, in, want string
		outOfRange     bool
	}{
		{"empty", "", `invalid quantity "": empty string`, false},
		{"unknown suffix", "12Zi", `invalid quantity "12Zi": unknown suffix "Zi"`, false},
		{"uppercase kilo", "1K", `unknown suffix "K"`, false},
		{"lowercase binary", "1ki", `unknown suffix "ki"`, false},
		{"bytes", "10KiB", `unknown suffix "KiB"`, false},
		{"lone e", "1e", `unknown suffix "e"`, false},
		{"suffix after binary", "1Ki3", `unknown suffix "Ki3"`, false},
		{"exponent without digits", "1e+", `invalid exponent "e+": no digits`, false},
		{"fractional exponent", "1e3.5", `invalid exponent "e3.5": unexpected ".5"`, false},
		{"exponent then suffix", "1e3Ki", `invalid exponent "e3Ki"`, false},
		{"exponent beyond 64 bits", "1e-99999999999999999999", `invalid exponent "e-99999999999999999999": beyond 64 bits`, false},
		{"letters", "abc", `invalid quantity "abc": expected a number, found "abc"`, false},
		{"suffix only", "Gi", `expected a number, found "Gi"`, false},
		{"milli only", "m", `expected a number, found "m"`, false},
		{"sign only", "-", `expected a number after the sign`, false},
		{"two signs", "--1", `expected a number, found "-1"`, false},
		{"dot only", ".", `malformed number "."`, false},
		{"two dots", "1.2.3", `malformed number "1.2.3"`, false},
		{"two dots then suffix", "1.5.5Gi", `malformed number "1.5.5"`, false},
		{"leading space", " 1", `expected a number, found " 1"`, false},
		{"trailing space", "1Gi ", `unknown suffix "Gi "`, false},
		{"inner space", "1 Gi", `unknown suffix " Gi"`, false},
		{"exa of exa", "1000000000000E", `invalid quantity "1000000000000E": ` + outOfRange, true},
		{"huge exponent", "1e99999999999", outOfRange, true},
		{"huge integer", strings.Repeat("9", 128), outOfRange, true},
		{"just past largest", "170141183460469231731687303715.884105728", outOfRange, true},
		{"long input is quoted short", strings.Repeat("9", 129), `invalid quantity "` + strings.Repeat("9", 64) + `"...: out of range`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q, err := Parse(tc.in)
			if err == nil {
				t.Fatalf("Parse(%q) = %s, want error containing %q", tc.in, q, tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) || !errors.Is(err, ErrInvalid) {
				t.Fatalf("Parse(%q) error:\n  %v\nwant ErrInvalid containing:\n  %s", tc.in, err, tc.want)
			}
			if errors.Is(err, ErrOutOfRange) != tc.outOfRange {
				t.Fatalf("Parse(%q) error %v: errors.Is(ErrOutOfRange) = %v, want %v", tc.in, err, !tc.outOfRange, tc.outOfRange)
			}
		})
	}
}

// TestRange checks both ends of the range, 2^127-1 nano-units.
func TestRange(t *testing.T) {
	for _, in := range []string{"170141183460469231731687303715.884105727", "-170141183460469231731687303715.884105727", "170141183460469231731687303715884105727n", "170141183460469231731687303715.8841057261"} {
		q, err := Parse(in)
		if err != nil {
			t.Fatalf("Parse(%q): %v", in, err)
		}
		if q.n.abs() != maxMagnitude {
			t.Fatalf("Parse(%q) = %s, want the largest magnitude", in, q)
		}
	}
	if _, err := Parse("170141183460469231731687303715884105728n"); !errors.Is(err, ErrOutOfRange) {
		t.Fatalf("one past the largest: err = %v", err)
	}
}

func TestMustParsePanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("MustParse of a bad quantity did not panic")
		}
	}()
	MustParse("12Zi")
}

func TestValue(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
	}{
		{"0", 0}, {"1", 1}, {"1500m", 2}, {"1001m", 2}, {"1m", 1}, {"999m", 1}, {"2000m", 2},
		{"-1500m", -2}, {"-1m", -1}, {"-2", -2}, {"1Gi", 1 << 30},
		{"9223372036854775807m", 9223372036854776},
	} {
		t.Run(tc.in, func(t *testing.T) {
			if got := MustParse(tc.in).Value(); got != tc.want {
				t.Fatalf("Value(%q) = %d, want %d", tc.in, got, tc.want)
			}
		})
	}
}

func TestCmpAndSign(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{
		{"1", "1000m", 0},
		{"1Ki", "1024", 0},
		{"1k", "1e3", 0},
		{"500m", "0.5", 0},
		{"1Gi", "1G", 1},
		{"1G", "1Gi", -1},
		{"-1", "0", -1},
		{"0", "-0", 0},
	} {
		t.Run(tc.a+" vs "+tc.b, func(t *testing.T) {
			if got := MustParse(tc.a).Cmp(MustParse(tc.b)); got != tc.want {
				t.Fatalf("Cmp = %d, want %d", got, tc.want)
			}
		})
	}
	if MustParse("-1m").Sign() != -1 || MustParse("0").Sign() != 0 || MustParse("1m").Sign() != 1 {
		t.Fatal("Sign is wrong")
	}
	if !MustParse("0Mi").IsZero() || !(Quantity{}).IsZero() || MustParse("1m").IsZero() {
		t.Fatal("IsZero is wrong")
	}
}

func TestAddSub(t *testing.T) {
	max := Quantity{n: i128(maxMagnitude)}
	min := max.Neg()
	for _, tc := range []struct {
		name    string
		a, b    Quantity
		sum     string // "" means ErrOutOfRange
		diff    string
		sumForm Format
	}{
		{"cpu", MustParse("500m"), MustParse("1.5"), "2", "-1", DecimalSI},
		{"nano cpu", MustParse("1n"), MustParse("999999999n"), "1", "-999999998n", DecimalSI},
		{"memory keeps binary", MustParse("1Gi"), MustParse("512Mi"), "1536Mi", "512Mi", BinarySI},
		{"receiver format wins", MustParse("1k"), MustParse("1Ki"), "2024", "-24", DecimalSI},
		{"zero value takes other format", Quantity{}, MustParse("1Gi"), "1Gi", "-1Gi", BinarySI},
		{"zero takes other format", MustParse("0"), MustParse("1Gi"), "1Gi", "-1Gi", BinarySI},
		{"negatives", MustParse("-1"), MustParse("-2"), "-3", "1", DecimalSI},
		{"past int64 units", MustParse("8Ei"), MustParse("8Ei"), "18446744073709551614", "0", BinarySI},
		{"max plus zero", max, Quantity{}, "170141183460469231731687303715884105727n", "170141183460469231731687303715884105727n", ""},
		{"max plus one", max, MustParse("1n"), "", "170141183460469231731687303715884105726n", ""},
		{"min minus one", min, MustParse("1n"), "-170141183460469231731687303715884105726n", "", ""},
		{"min plus min", min, min, "", "0", ""},
		{"max minus min", max, min, "0", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			check := func(op string, got Quantity, err error, want string) {
				t.Helper()
				if want == "" {
					if !errors.Is(err, ErrOutOfRange) {
						t.Fatalf("%s = %s, %v; want ErrOutOfRange", op, got, err)
					}
					return
				}
				if err != nil {
					t.Fatalf("%s: %v", op, err)
				}
				if got.String() != want {
					t.Fatalf("%s = %s, want %s", op, got, want)
				}
			}
			sum, err := tc.a.Add(tc.b)
			check("Add", sum, err, tc.sum)
			if err == nil && tc.sumForm != "" && sum.Format() != tc.sumForm {
				t.Fatalf("Add format = %s, want %s", sum.Format(), tc.sumForm)
			}
			diff, err := tc.a.Sub(tc.b)
			check("Sub", diff, err, tc.diff)
		})
	}
	_, err := max.Add(MustParse("1"))
	if err == nil || err.Error() != "quantity 170141183460469231731687303715884105727n + 1: out of range" {
		t.Fatalf("overflow error = %v", err)
	}
}

func TestConstructors(t *testing.T) {
	q, err := NewQuantity(1<<30, BinarySI)
	if err != nil || q.String() != "1Gi" {
		t.Fatalf("NewQuantity(1<<30, BinarySI) = %s, %v", q, err)
	}
	for _, v := range []int64{math.MaxInt64, math.MinInt64} {
		q, err := NewQuantity(v, DecimalSI)
		if err != nil || q.Value() != max(v, -math.MaxInt64) || exact(q) != strconv.FormatInt(v, 10) {
			t.Fatalf("NewQuantity(%d) = %s (%s), %v", v, q, exact(q), err)
		}
	}
	m, err := NewMilliQuantity(-250, DecimalExponent)
	if err != nil || m.String() != "-250e-3" || m.Format() != DecimalExponent {
		t.Fatalf("NewMilliQuantity(-250) = %s, %v", m, err)
	}
	if m, err := NewMilliQuantity(math.MinInt64, DecimalSI); err != nil || m.String() != "-9223372036854775808m" {
		t.Fatalf("NewMilliQuantity(MinInt64) = %s, %v", m, err)
	}
	if (Quantity{}).Format() != DecimalSI || (Quantity{}).String() != "0" {
		t.Fatal("the zero Quantity should be 0 in DecimalSI")
	}
}

func TestParseResourceList(t *testing.T) {
	got, err := ParseResourceList(map[string]string{"cpu": "500m", "memory": "1Gi"})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got["cpu"].MilliValue() != 500 || got["memory"].Value() != 1<<30 {
		t.Fatalf("ParseResourceList = %v", got)
	}
	if got, err := ParseResourceList(nil); err != nil || len(got) != 0 {
		t.Fatalf("ParseResourceList(nil) = %v, %v", got, err)
	}
	_, err = ParseResourceList(map[string]string{"cpu": "1", "memory": "12Zi", "pods": "x"})
	want := `resource "memory": invalid quantity "12Zi": unknown suffix "Zi"`
	if err == nil || err.Error() != want || !errors.Is(err, ErrInvalid) {
		t.Fatalf("ParseResourceList error = %v, want %s", err, want)
	}
}
