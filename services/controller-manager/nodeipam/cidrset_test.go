package nodeipam

import (
	"errors"
	"net/netip"
	"strings"
	"testing"
)

func TestNewCIDRSet(t *testing.T) {
	cases := []struct {
		cluster string
		mask    int
		total   int
		wantErr string
	}{
		{"10.244.0.0/16", 24, 256, ""},
		{"10.244.0.0/23", 24, 2, ""},
		{"10.244.7.9/16", 24, 256, ""}, // host bits are dropped
		{"10.0.0.0/8", 24, 65536, ""},
		{"10.0.0.0/8", 25, 0, "too big"},
		{"10.244.0.0/16", 15, 0, "between"},
		{"10.244.0.0/16", 33, 0, "between"},
		{"fd00:10:244::/48", 64, 65536, ""},
		{"fd00:10:244::/56", 64, 256, ""},
	}
	for _, tc := range cases {
		s, err := NewCIDRSet(netip.MustParsePrefix(tc.cluster), tc.mask)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("NewCIDRSet(%s, %d) error = %v, want one containing %q", tc.cluster, tc.mask, err, tc.wantErr)
			}
			continue
		}
		if err != nil || s.Total() != tc.total {
			t.Errorf("NewCIDRSet(%s, %d) = %v subnets, %v; want %d", tc.cluster, tc.mask, s.Total(), err, tc.total)
		}
	}
}

func TestAllocateNextRotates(t *testing.T) {
	s, err := NewCIDRSet(netip.MustParsePrefix("10.244.0.0/22"), 24)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Occupy(netip.MustParsePrefix("10.244.1.0/24")); err != nil {
		t.Fatal(err)
	}
	var got []string
	for range 3 {
		p, err := s.AllocateNext()
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, p.String())
	}
	if want := "10.244.0.0/24 10.244.2.0/24 10.244.3.0/24"; strings.Join(got, " ") != want {
		t.Errorf("allocations %v, want %s", got, want)
	}
	if _, err := s.AllocateNext(); !errors.Is(err, ErrCIDRRangeFull) {
		t.Fatalf("fifth allocation of four: %v, want ErrCIDRRangeFull", err)
	}
	// Freed subnets come back, the one freed last handed out last.
	for _, c := range []string{"10.244.2.0/24", "10.244.0.0/24"} {
		if err := s.Release(netip.MustParsePrefix(c)); err != nil {
			t.Fatal(err)
		}
	}
	if s.Used() != 2 {
		t.Errorf("used = %d after two releases, want 2", s.Used())
	}
	a, _ := s.AllocateNext()
	b, _ := s.AllocateNext()
	if a.String() != "10.244.0.0/24" || b.String() != "10.244.2.0/24" {
		t.Errorf("after releases: %s then %s, want 10.244.0.0/24 then 10.244.2.0/24", a, b)
	}
}

func TestOccupyRanges(t *testing.T) {
	s, err := NewCIDRSet(netip.MustParsePrefix("10.244.0.0/16"), 24)
	if err != nil {
		t.Fatal(err)
	}
	// A /23 takes two subnets, a /25 the one it lies in.
	for _, c := range []string{"10.244.4.0/23", "10.244.9.128/25"} {
		if err := s.Occupy(netip.MustParsePrefix(c)); err != nil {
			t.Fatalf("Occupy(%s): %v", c, err)
		}
	}
	if s.Used() != 3 {
		t.Errorf("used = %d, want 3", s.Used())
	}
	for c, want := range map[string]bool{"10.244.5.0/24": true, "10.244.9.0/24": true, "10.244.6.0/24": false, "10.244.0.0/20": true} {
		if got, err := s.InUse(netip.MustParsePrefix(c)); err != nil || got != want {
			t.Errorf("InUse(%s) = %v, %v; want %v", c, got, err, want)
		}
	}
	for _, c := range []string{"10.245.0.0/24", "10.0.0.0/8", "fd00::/64"} {
		if err := s.Occupy(netip.MustParsePrefix(c)); err == nil || !strings.Contains(err.Error(), "outside the cluster CIDR") {
			t.Errorf("Occupy(%s) error = %v, want outside the cluster CIDR", c, err)
		}
	}
}

func TestIPv6Subnets(t *testing.T) {
	s, err := NewCIDRSet(netip.MustParsePrefix("fd00:10:244::/56"), 64)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Occupy(netip.MustParsePrefix("fd00:10:244::/64")); err != nil {
		t.Fatal(err)
	}
	p, err := s.AllocateNext()
	if err != nil || p.String() != "fd00:10:244:1::/64" {
		t.Errorf("AllocateNext = %v, %v; want fd00:10:244:1::/64", p, err)
	}
}
