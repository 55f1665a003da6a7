package scenarios

import (
	"context"
	"testing"
	"time"
)

// TestHAScenario runs the ha scenario tiny on real skiff-apiserver
// processes (built by the go command): creates on three members and on
// one alone, then one failover of the leading member; runHA fails if a
// write acknowledged is lost or no write is acknowledged after the kill.
// The targets are not checked: a test machine's speed is not the
// benchmark's.
func TestHAScenario(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs skiff-apiserver processes")
	}
	env := &Env{Config: Config{Warmup: 100 * time.Millisecond, Duration: 600 * time.Millisecond, Rounds: 2, Clients: 4}}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	rs := &Results{}
	if err := runHA(ctx, env, rs, haOptions{failovers: 1}); err != nil {
		t.Fatal(err)
	}
	for _, f := range haScenario().Figures {
		v, ok := rs.Get(f.Name)
		if !ok || v <= 0 {
			t.Errorf("%s = %v (measured %v), want a positive value", f.Name, v, ok)
		}
	}
	// No write is committed without a leader, and etcd's followers wait
	// at least their election timeout (1,000 ms, less the time since the
	// last heartbeat, 100 ms at most) before they elect one: a shorter
	// gap counted a write the dead leader had taken.
	if gap, _ := rs.Get(figHAGap.Name); gap < 800 {
		t.Errorf("%s = %v ms, below etcd's election timeout", figHAGap.Name, gap)
	}
	for _, r := range rs.List() {
		t.Logf("%s %.1f %s: %s", r.Name, r.Value, r.Unit, r.Note)
	}
}
