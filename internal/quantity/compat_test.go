package quantity

import (
	"errors"
	"fmt"
	"math/big"
	"strings"
	"testing"
)

// kubernetesCases are Kubernetes' own answers, from
// k8s.io/apimachinery v0.37.2 resource.ParseQuantity: the canonical form
// (CanonicalizeBytes, what String prints for a computed quantity), the
// format, and the exact value rounded up to 1n. MilliValue and Value are
// rounded away from zero and saturate at ±MaxInt64; where Kubernetes'
// own MilliValue or Value differ (they overflow, and round some negative
// fractions toward +∞) or its String returns the input as written, the
// comment says what Kubernetes gives.
var kubernetesCases = []struct {
	in, str string
	format  Format
	milli   int64
	value   int64
	exact   string // the value in units, to the nano
}{
	{"0", "0", DecimalSI, 0, 0, "0"},
	{"-0", "0", DecimalSI, 0, 0, "0"},
	{"00", "0", DecimalSI, 0, 0, "0"},
	{"0.0", "0", DecimalSI, 0, 0, "0"},
	{"0Gi", "0", BinarySI, 0, 0, "0"},
	{"0e3", "0", DecimalExponent, 0, 0, "0"},
	{"1", "1", DecimalSI, 1000, 1, "1"},
	{"+1", "1", DecimalSI, 1000, 1, "1"}, // k8s: String "+1"
	{"-1", "-1", DecimalSI, -1000, -1, "-1"},
	{"2", "2", DecimalSI, 2000, 2, "2"},
	{"007", "7", DecimalSI, 7000, 7, "7"}, // k8s: String "007"
	{"0.5", "500m", DecimalSI, 500, 1, "0.500000000"},
	{".5", "500m", DecimalSI, 500, 1, "0.500000000"},
	{"5.", "5", DecimalSI, 5000, 5, "5"},                              // k8s: String "5."
	{"1.G", "1G", DecimalSI, 1000000000000, 1000000000, "1000000000"}, // k8s: String "1.G"
	{"1.500", "1500m", DecimalSI, 1500, 2, "1.500000000"},             // k8s: String "1.500"
	{"1.5", "1500m", DecimalSI, 1500, 2, "1.500000000"},
	{"1n", "1n", DecimalSI, 1, 1, "0.000000001"},
	{"0.1n", "1n", DecimalSI, 1, 1, "0.000000001"},
	{"-0.1n", "-1n", DecimalSI, -1, -1, "-0.000000001"}, // k8s: MilliValue 1, Value 1
	{"0.5e-9", "1e-9", DecimalExponent, 1, 1, "0.000000001"},
	{"1e-12", "1e-9", DecimalExponent, 1, 1, "0.000000001"},
	{"1500u", "1500u", DecimalSI, 2, 1, "0.001500000"},
	{"0.1m", "100u", DecimalSI, 1, 1, "0.000100000"},
	{"-0.5m", "-500u", DecimalSI, -1, -1, "-0.000500000"}, // k8s: MilliValue 1, Value 1
	{"1.5e-3", "1500e-6", DecimalExponent, 2, 1, "0.001500000"},
	{"0.000001", "1u", DecimalSI, 1, 1, "0.000001000"},
	{"1000000n", "1m", DecimalSI, 1, 1, "0.001000000"},
	{"5000u", "5m", DecimalSI, 5, 1, "0.005000000"},
	{"500m", "500m", DecimalSI, 500, 1, "0.500000000"},
	{"1000m", "1", DecimalSI, 1000, 1, "1"},
	{"2500m", "2500m", DecimalSI, 2500, 3, "2.500000000"},
	{"1k", "1k", DecimalSI, 1000000, 1000, "1000"},
	{"1.5k", "1500", DecimalSI, 1500000, 1500, "1500"},
	{"1000", "1k", DecimalSI, 1000000, 1000, "1000"},
	{"1M", "1M", DecimalSI, 1000000000, 1000000, "1000000"},
	{"1G", "1G", DecimalSI, 1000000000000, 1000000000, "1000000000"},
	{"1T", "1T", DecimalSI, 1000000000000000, 1000000000000, "1000000000000"},
	{"1P", "1P", DecimalSI, 1000000000000000000, 1000000000000000, "1000000000000000"},
	{"1E", "1E", DecimalSI, 9223372036854775807, 1000000000000000000, "1000000000000000000"}, // k8s: MilliValue -9223372036854775808
	{"9P", "9P", DecimalSI, 9000000000000000000, 9000000000000000, "9000000000000000"},
	{"0.001E", "1P", DecimalSI, 1000000000000000000, 1000000000000000, "1000000000000000"},
	{"10Pi", "10Pi", BinarySI, 9223372036854775807, 11258999068426240, "11258999068426240"}, // k8s: MilliValue -7187745005283311616
	{"1Ki", "1Ki", BinarySI, 1024000, 1024, "1024"},
	{"01Ki", "1Ki", BinarySI, 1024000, 1024, "1024"}, // k8s: String "01Ki"
	{"128Mi", "128Mi", BinarySI, 134217728000, 134217728, "134217728"},
	{"1024Mi", "1Gi", BinarySI, 1073741824000, 1073741824, "1073741824"},
	{"1.5Gi", "1536Mi", BinarySI, 1610612736000, 1610612736, "1610612736"},
	{"1023.5Ki", "1048064", BinarySI, 1048064000, 1048064, "1048064"},
	{"0.5Ki", "512", BinarySI, 512000, 512, "512"},
	{"1.5Ki", "1536", BinarySI, 1536000, 1536, "1536"},
	{"0.1Ki", "102400m", BinarySI, 102400, 103, "102.400000000"},
	{"0.0001Ki", "102400u", DecimalSI, 103, 1, "0.102400000"},
	{"0.0009765625Ki", "1", BinarySI, 1000, 1, "1"},
	{"-1Gi", "-1Gi", BinarySI, -1073741824000, -1073741824, "-1073741824"},
	{"-1536Mi", "-1536Mi", BinarySI, -1610612736000, -1610612736, "-1610612736"},
	{"2Ti", "2Ti", BinarySI, 2199023255552000, 2199023255552, "2199023255552"},
	{"8Pi", "8Pi", BinarySI, 9007199254740992000, 9007199254740992, "9007199254740992"},
	{"1Ei", "1Ei", BinarySI, 9223372036854775807, 1152921504606846976, "1152921504606846976"},                       // k8s: MilliValue -9223372036854775808
	{"8Ei", "9223372036854775807", BinarySI, 9223372036854775807, 9223372036854775807, "9223372036854775807"},       // k8s: MilliValue -1000
	{"10Ei", "9223372036854775807", BinarySI, 9223372036854775807, 9223372036854775807, "9223372036854775807"},      // k8s: MilliValue -1000
	{"-10Ei", "-9223372036854775807", BinarySI, -9223372036854775807, -9223372036854775807, "-9223372036854775807"}, // k8s: MilliValue 1000
	{"1e3", "1e3", DecimalExponent, 1000000, 1000, "1000"},
	{"1E3", "1e3", DecimalExponent, 1000000, 1000, "1000"},  // k8s: String "1E3"
	{"1e+3", "1e3", DecimalExponent, 1000000, 1000, "1000"}, // k8s: String "1e+3"
	{"1e-3", "1e-3", DecimalExponent, 1, 1, "0.001000000"},
	{"1e003", "1e3", DecimalExponent, 1000000, 1000, "1000"}, // k8s: String "1e003"
	{"12e6", "12e6", DecimalExponent, 12000000000, 12000000, "12000000"},
	{"15e0", "15", DecimalExponent, 15000, 15, "15"}, // k8s: String "15e0"
	{"15e2", "1500", DecimalExponent, 1500000, 1500, "1500"},
	{"5e-1", "500e-3", DecimalExponent, 500, 1, "0.500000000"},
	{"2e-1", "200e-3", DecimalExponent, 200, 1, "0.200000000"},
	{"1e18", "1e18", DecimalExponent, 9223372036854775807, 1000000000000000000, "1000000000000000000"},   // k8s: MilliValue -9223372036854775808
	{"1e19", "10e18", DecimalExponent, 9223372036854775807, 9223372036854775807, "10000000000000000000"}, // k8s: MilliValue -9223372036854775808, Value -9223372036854775808
	{"1e-9", "1e-9", DecimalExponent, 1, 1, "0.000000001"},
	{"-1e-9", "-1e-9", DecimalExponent, -1, -1, "-0.000000001"}, // k8s: MilliValue 1, Value 1
	{"1.5e3", "1500", DecimalExponent, 1500000, 1500, "1500"},
	{"9223372036854775807m", "9223372036854775807m", DecimalSI, 9223372036854775807, 9223372036854776, "9223372036854775.807000000"},
	{"9223372036854775807", "9223372036854775807", DecimalSI, 9223372036854775807, 9223372036854775807, "9223372036854775807"},      // k8s: MilliValue -1000
	{"9223372036854775808", "9223372036854775808", DecimalSI, 9223372036854775807, 9223372036854775807, "9223372036854775808"},      // k8s: MilliValue 0, Value -9223372036854775808
	{"-9223372036854775808", "-9223372036854775808", DecimalSI, -9223372036854775807, -9223372036854775807, "-9223372036854775808"}, // k8s: MilliValue 0, Value 0
	{"1000E", "1000E", DecimalSI, 9223372036854775807, 9223372036854775807, "1000000000000000000000"},                               // k8s: String "1" (no suffix above E), MilliValue 0, Value 3875820019684212736
	{"1e21", "1e21", DecimalExponent, 9223372036854775807, 9223372036854775807, "1000000000000000000000"},                           // k8s: MilliValue -9223372036854775808, Value -9223372036854775808
	{"1e27", "1e27", DecimalExponent, 9223372036854775807, 9223372036854775807, "1000000000000000000000000000"},                     // k8s: MilliValue -9223372036854775808, Value -9223372036854775808
	{"123456789012345678901234567890", "123456789012345678901234567890", DecimalSI, 9223372036854775807, 9223372036854775807, "123456789012345678901234567890"}, // k8s: MilliValue 8982045596877734992, Value -4362896299872285998
	{"0.0000000000000000000001", "1n", DecimalSI, 1, 1, "0.000000001"},
	{"1.0000000001", "1000000001n", DecimalSI, 1001, 2, "1.000000001"},
	{"-1.0000000001", "-1000000001n", DecimalSI, -1001, -2, "-1.000000001"}, // k8s: MilliValue -999, Value 0
	{"1.0000000001Ki", "1024000000103n", BinarySI, 1024001, 1025, "1024.000000103"},
	{"1Mi", "1Mi", BinarySI, 1048576000, 1048576, "1048576"},
	{"100Mi", "100Mi", BinarySI, 104857600000, 104857600, "104857600"},
	{"64Gi", "64Gi", BinarySI, 68719476736000, 68719476736, "68719476736"},
	{"100k", "100k", DecimalSI, 100000000, 100000, "100000"},
	{"0.25", "250m", DecimalSI, 250, 1, "0.250000000"},
	{"3", "3", DecimalSI, 3000, 3, "3"},
	{"2000m", "2", DecimalSI, 2000, 2, "2"},
	{"1e-99999", "1e-9", DecimalExponent, 1, 1, "0.000000001"},
	{"0.00000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000001", "1n", DecimalSI, 1, 1, "0.000000001"},
	{"1.0000000000000000000000000001Ki", "1024000000001n", BinarySI, 1024001, 1025, "1024.000000001"},
	{"12345678901234567890.123456789012Ki", "9223372036854775807", BinarySI, 9223372036854775807, 9223372036854775807, "9223372036854775807"}, // k8s: MilliValue -1000
	{"0.3333333333333333333333333333333333333Mi", "349525333333334n", BinarySI, 349525334, 349526, "349525.333333334"},
}

// exact prints q's value in units with nine decimals, without them when
// they are all zero, as inf.Dec prints a Kubernetes quantity.
func exact(q Quantity) string {
	n := new(big.Int).SetUint64(q.n.hi)
	n.Lsh(n, 64).Or(n, new(big.Int).SetUint64(q.n.lo))
	if q.n.negative() {
		n.Sub(n, new(big.Int).Lsh(big.NewInt(1), 128))
	}
	sign := ""
	if n.Sign() < 0 {
		sign = "-"
		n.Neg(n)
	}
	whole, frac := new(big.Int).QuoRem(n, big.NewInt(1e9), new(big.Int))
	if frac.Sign() == 0 {
		return sign + whole.String()
	}
	return fmt.Sprintf("%s%s.%09d", sign, whole, frac.Int64())
}

func TestKubernetesCases(t *testing.T) {
	for _, tc := range kubernetesCases {
		name := tc.in
		if len(name) > 40 {
			name = name[:40] + "..."
		}
		t.Run(name, func(t *testing.T) {
			q, err := Parse(tc.in)
			if err != nil {
				t.Fatalf("Parse(%q): %v", tc.in, err)
			}
			if got := exact(q); got != tc.exact {
				t.Errorf("Parse(%q) = %s, want %s", tc.in, got, tc.exact)
			}
			if got := q.String(); got != tc.str {
				t.Errorf("Parse(%q).String() = %q, want %q", tc.in, got, tc.str)
			}
			if got := q.Format(); got != tc.format {
				t.Errorf("Parse(%q).Format() = %s, want %s", tc.in, got, tc.format)
			}
			if got := q.MilliValue(); got != tc.milli {
				t.Errorf("Parse(%q).MilliValue() = %d, want %d", tc.in, got, tc.milli)
			}
			if got := q.Value(); got != tc.value {
				t.Errorf("Parse(%q).Value() = %d, want %d", tc.in, got, tc.value)
			}
			again, err := Parse(q.String())
			if err != nil || again.Cmp(q) != 0 || again.String() != q.String() {
				t.Errorf("round trip through %q = %s (%s), %v", q.String(), exact(again), again, err)
			}
		})
	}
}

// TestKubernetesRejects lists what Kubernetes refuses too.
func TestKubernetesRejects(t *testing.T) {
	for _, in := range []string{
		"", "1.5.5", "10KiB", "1 Gi", " 1", "1 ", "1K", "1ki", "1e", "1e+", "1e3.5", "1e3Ki",
		"12Zi", "abc", "--1", "0x10", "1Gb", "1e99999999999999999999",
	} {
		if q, err := Parse(in); err == nil || !errors.Is(err, ErrInvalid) {
			t.Errorf("Parse(%q) = %s, %v; want ErrInvalid", in, q, err)
		}
	}
}

// TestNoDigits: Kubernetes reads a quantity without digits ("m", "Gi",
// ".", "+", "-") as 0; Skiff refuses it, as a typo rather than a value.
func TestNoDigits(t *testing.T) {
	for _, in := range []string{"m", "Gi", "E", ".", "+", "-", "-.", ".Ki"} {
		_, err := Parse(in)
		if err == nil || !strings.Contains(err.Error(), "expected a number") && !strings.Contains(err.Error(), "malformed number") {
			t.Errorf("Parse(%q) error = %v, want one asking for a number", in, err)
		}
	}
}
