package validation

import (
	"math/big"
	"strings"
	"testing"
)

func TestParseQuantity(t *testing.T) {
	cases := []struct {
		in   string
		want string // exact value as a big.Rat string; "" when malformed
	}{
		{"1", "1"},
		{"0", "0"},
		{"500m", "1/2"},
		{"250m", "1/4"},
		{"0.5", "1/2"},
		{".5", "1/2"},
		{"5.", "5"},
		{"+1", "1"},
		{"-1", "-1"},
		{"1k", "1000"},
		{"1M", "1000000"},
		{"1G", "1000000000"},
		{"1T", "1000000000000"},
		{"1P", "1000000000000000"},
		{"1E", "1000000000000000000"},
		{"1Ki", "1024"},
		{"128Mi", "134217728"},
		{"1.5Gi", "1610612736"},
		{"1Ti", "1099511627776"},
		{"1Pi", "1125899906842624"},
		{"1Ei", "1152921504606846976"},
		{"100n", "1/10000000"},
		{"5u", "1/200000"},
		{"1e3", "1000"},
		{"1E3", "1000"},
		{"1.5e-3", "3/2000"},
		{"2e+2", "200"},
		{"", ""},
		{"m", ""},
		{".", ""},
		{"+", ""},
		{"1.5.5", ""},
		{"500 m", ""},
		{"1Gb", ""},
		{"1ki", ""},
		{"1e", ""},
		{"1e+", ""},
		{"1e3.5", ""},
		{"1e99999", ""},
		{"0x10", ""},
		{"1Mi ", ""},
		{"--1", ""},
		{"0." + strings.Repeat("0", 125) + "1", "1/" + "1" + strings.Repeat("0", 126)},
		{strings.Repeat("9", 129), ""},
	}
	for _, c := range cases {
		t.Run(c.in, func(t *testing.T) {
			got, err := parseQuantity(c.in)
			if c.want == "" {
				if err == nil {
					t.Fatalf("parseQuantity(%q) = %v, want an error", c.in, got.RatString())
				}
				return
			}
			if err != nil {
				t.Fatalf("parseQuantity(%q): %v", c.in, err)
			}
			want, _ := new(big.Rat).SetString(c.want)
			if got.Cmp(want) != 0 {
				t.Fatalf("parseQuantity(%q) = %s, want %s", c.in, got.RatString(), c.want)
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
