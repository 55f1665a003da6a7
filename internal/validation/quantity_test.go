package validation

import (
	"math"
	"strings"
	"testing"

	"skiff.dev/internal/field"
)

// TestParseQuantity checks what validation accepts as a quantity; the
// syntax itself is package quantity's and tested there. Values are in
// milli-units.
func TestParseQuantity(t *testing.T) {
	const invalid = -1 // want an error
	cases := []struct {
		in    string
		milli int64
	}{
		{"1", 1000},
		{"0", 0},
		{"500m", 500},
		{"250m", 250},
		{"1m", 1},
		{"0.5", 500},
		{".5", 500},
		{"5.", 5000},
		{"+1", 1000},
		{"-1", -1000}, // well-formed; resource lists reject it as negative
		{"1k", 1_000_000},
		{"1M", 1_000_000_000},
		{"1G", 1_000_000_000_000},
		{"1T", 1_000_000_000_000_000},
		{"1P", 1_000_000_000_000_000_000},
		{"1Ki", 1_024_000},
		{"128Mi", 134_217_728_000},
		{"1.5Gi", 1_610_612_736_000},
		{"1Ti", 1_099_511_627_776_000},
		{"1Pi", 1_125_899_906_842_624_000},
		{"1000000n", 1},
		{"1e3", 1_000_000},
		{"1E3", 1_000_000},
		{"1.5e-3", 2}, // 1500e-6: milli-units round up
		{"100n", 1},
		{"5u", 1},
		{"0.1m", 1},
		{"0." + strings.Repeat("0", 125) + "1", 1}, // rounded up to 1n
		{"1E", math.MaxInt64},                      // 1e18: MilliValue saturates
		{"1e30", invalid},                          // above the largest quantity
		{"1Ei", math.MaxInt64},
		{"2e+2", 200_000},
		{"", invalid},
		{"m", invalid},
		{".", invalid},
		{"+", invalid},
		{"1.5.5", invalid},
		{"500 m", invalid},
		{"1Gb", invalid},
		{"1ki", invalid},
		{"1e", invalid},
		{"1e+", invalid},
		{"1e3.5", invalid},
		{"1e99999", invalid},
		{"0x10", invalid},
		{"1Mi ", invalid},
		{"--1", invalid},
		{strings.Repeat("0", 128) + "1", 1000}, // no length limit, as Kubernetes
	}
	p := field.NewPath("spec", "limit")
	for _, c := range cases {
		t.Run(c.in, func(t *testing.T) {
			got, err := parseQuantity(c.in, p)
			if c.milli == invalid {
				if err == nil {
					t.Fatalf("parseQuantity(%q) = %s, want an error", c.in, got)
				}
				if err.Field != "spec.limit" || err.Type != field.ErrorTypeInvalid || err.Detail == "" {
					t.Fatalf("parseQuantity(%q) error = %v, want Invalid at spec.limit with a reason", c.in, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("parseQuantity(%q): %v", c.in, err)
			}
			if got.MilliValue() != c.milli {
				t.Fatalf("parseQuantity(%q) = %dm, want %dm", c.in, got.MilliValue(), c.milli)
			}
		})
	}
}

func TestNameChecks(t *testing.T) {
	cases := []struct {
		name  string
		check func(string) []string
		in    string
		valid bool
	}{
		{"label", isDNS1123Label, "my-name", true},
		{"label digits first", isDNS1123Label, "123-abc", true},
		{"label dash last", isDNS1123Label, "my-", false},
		{"label upper", isDNS1123Label, "My", false},
		{"subdomain", isDNS1123Subdomain, "example.com", true},
		{"subdomain empty label", isDNS1123Subdomain, "example..com", false},
		{"qualified", isQualifiedName, "example.com/My_Name-1", true},
		{"qualified empty prefix", isQualifiedName, "/name", false},
		{"label value empty", isValidLabelValue, "", true},
		{"env var", isEnvVarName, "my.env-name", true},
		{"env var digit first", isEnvVarName, "1A", false},
		{"config key", isConfigMapKey, "KEY_NAME", true},
		{"config key dot", isConfigMapKey, ".", false},
		{"config key dotfile", isConfigMapKey, ".bashrc", true},
		{"port name", isValidPortName, "http-alt", true},
		{"port name double dash", isValidPortName, "http--alt", false},
		{"port name digits", isValidPortName, "8080", false},
		{"port name long", isValidPortName, "a-very-long-port-name", false},
		{"percent", isValidPercent, "25%", true},
		{"percent decimal", isValidPercent, "2.5%", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if msgs := c.check(c.in); (len(msgs) == 0) != c.valid {
				t.Fatalf("%q: messages %q, want valid=%v", c.in, msgs, c.valid)
			}
		})
	}
}

func TestMaskTrailingDash(t *testing.T) {
	for in, want := range map[string]string{"web-": "weba", "web": "web", "-": "-", "a-": "aa"} {
		if got := maskTrailingDash(in); got != want {
			t.Errorf("maskTrailingDash(%q) = %q, want %q", in, got, want)
		}
	}
}
