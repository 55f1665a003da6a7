package scenarios

import (
	"context"
	"testing"
	"time"
)

// TestDNSScenario runs the dns scenario briefly: every query is answered
// (NOERROR with its record; runDNS fails otherwise) and each figure is
// there. Its target is not checked: a test machine's latency is not the
// benchmark's.
func TestDNSScenario(t *testing.T) {
	env := &Env{Config: Config{Warmup: 100 * time.Millisecond, Duration: 500 * time.Millisecond}}
	rs := &Results{}
	if err := runDNS(context.Background(), env, rs); err != nil {
		t.Fatal(err)
	}
	for _, f := range dnsScenario().Figures {
		v, ok := rs.Get(f.Name)
		if !ok || v <= 0 {
			t.Errorf("%s = %v (measured %v), want a positive value", f.Name, v, ok)
		}
	}
	for _, r := range rs.List() {
		t.Logf("%s %.1f %s: %s", r.Name, r.Value, r.Unit, r.Note)
	}
}
