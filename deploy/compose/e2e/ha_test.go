package e2e

import (
	"context"
	"fmt"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// member is a control-plane member of the HA profile: its compose
// service and its API address on the host.
type member struct{ service, addr string }

// haMembers are the members of SKIFF_E2E_MEMBERS (service=addr,...), set
// by scripts/compose.sh e2e-ha (fromRunner: a single apiserver's cluster
// has none).
func haMembers(t *testing.T) []member {
	env := fromRunner(t, "SKIFF_E2E_MEMBERS", "scripts/compose.sh e2e-ha (make e2e-ha)")
	var ms []member
	for _, kv := range strings.Split(env, ",") {
		service, addr, ok := strings.Cut(kv, "=")
		if !ok {
			t.Fatalf("SKIFF_E2E_MEMBERS: %q is not service=address", kv)
		}
		ms = append(ms, member{service, addr})
	}
	return ms
}

// TestHA is the HA profile's story (make e2e-ha, issue 23): under a write
// load through skiffctl given all three members, and during a rolling
// update, the member holding etcd's leadership is SIGKILLed; writes
// resume, no acknowledged write is lost, the rollout completes; the member
// started again catches up (asked alone); then each member is restarted in
// turn, the next once the last is healthy, with no write failing after
// its retries.
func TestHA(t *testing.T) {
	members := haMembers(t)
	c := newCluster(t)
	began := time.Now()
	defer func() { t.Logf("whole HA story: %v", time.Since(began).Round(time.Second)) }()
	step := func(name string, f func(t *testing.T)) {
		if !t.Run(name, func(t *testing.T) {
			c.t = t
			f(t)
		}) {
			t.FailNow()
		}
		c.t = t
	}

	var leader member
	step("every member serves, one holds etcd's leadership", func(t *testing.T) {
		for _, m := range members {
			if _, err := c.list("nodes", "--server", m.addr); err != nil {
				t.Fatalf("%s (%s) asked alone: %v", m.service, m.addr, err)
			}
		}
		leader = c.waitLeader(members)
	})

	step("Prometheus scrapes every member", func(t *testing.T) {
		c.eventually("three apiserver targets up", time.Minute, func() error {
			up, err := promQuery(`up{job="apiserver"} == 1`)
			if err != nil {
				return err
			}
			if len(up) != len(members) {
				return fmt.Errorf("%d of %d members' targets up", len(up), len(members))
			}
			return nil
		})
	})

	step("a deployment of 4 demo v1 pods", func(t *testing.T) {
		c.applyManifest(manifest(4, demoV1))
		c.waitRolledOut(4, demoV1)
	})

	const ns = "ha-load"
	c.applyManifest("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: " + ns + "\n")
	load := startWriteLoad(c, ns, 3)
	defer load.stop()

	var killedAt time.Time
	step("SIGKILL of the etcd leader's member during a rolling update, under writes", func(t *testing.T) {
		load.waitAcks(t, 20, time.Minute)
		c.applyManifest(manifest(4, demoV2))
		// The restart policy (unless-stopped) is set aside: the member
		// stays down until the test starts it.
		id := c.container(leader.service)
		if _, err := c.docker("update", "--restart=no", id); err != nil {
			t.Fatal(err)
		}
		if _, err := c.docker("kill", "-s", "KILL", id); err != nil {
			t.Fatal(err)
		}
		killedAt = time.Now()
		load.mark("killed " + leader.service)
		t.Logf("killed %s, etcd's leader, at %s", leader.service, killedAt.Format("15:04:05.000"))
		c.eventually(leader.service+" exited", 30*time.Second, func() error {
			if st := c.state(id); st != "exited" {
				return fmt.Errorf("%s", st)
			}
			return nil
		})
		var rest []member
		for _, m := range members {
			if m != leader {
				rest = append(rest, m)
			}
		}
		next := c.waitLeader(rest)
		t.Logf("new leader %s %v after the kill", next.service, time.Since(killedAt).Round(10*time.Millisecond))
		resumed := load.waitAckAfter(t, killedAt, time.Minute)
		t.Logf("writes resumed: first write begun after the kill acknowledged %v after it; longest time without an acknowledged write around the kill: %v",
			resumed.Sub(killedAt).Round(time.Millisecond), load.longestGap(killedAt.Add(-5*time.Second), resumed).Round(time.Millisecond))
		if gap := load.longestGap(killedAt.Add(-5*time.Second), resumed); gap > 15*time.Second {
			t.Errorf("no write acknowledged for %v around the kill", gap)
		}
		c.waitRolledOut(4, demoV2)
		if st := c.state(id); st != "exited" {
			t.Fatalf("%s restarted by itself (%s): the test starts it", leader.service, st)
		}
	})

	step("the killed member, started again, catches up", func(t *testing.T) {
		id := c.container(leader.service)
		if _, err := c.docker("update", "--restart=unless-stopped", id); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		if _, err := c.docker("start", id); err != nil {
			t.Fatal(err)
		}
		load.mark("started " + leader.service)
		c.waitHealthy(leader.service)
		acked := load.acked()
		c.eventually(fmt.Sprintf("%s, asked alone, has the %d writes acknowledged", leader.service, len(acked)), time.Minute, func() error {
			return c.hasAll(leader.addr, ns, acked)
		})
		t.Logf("%s healthy and caught up %v after its start", leader.service, time.Since(start).Round(100*time.Millisecond))
	})

	step("each member restarted in turn, the next once it is healthy", func(t *testing.T) {
		began := time.Now()
		for _, m := range members {
			start := time.Now()
			load.mark("restart " + m.service)
			if _, err := c.docker("restart", "-t", "15", c.container(m.service)); err != nil {
				t.Fatal(err)
			}
			c.waitHealthy(m.service)
			t.Logf("%s restarted and healthy in %v", m.service, time.Since(start).Round(100*time.Millisecond))
		}
		load.waitAcks(t, load.count()+20, time.Minute)
		t.Logf("longest time without an acknowledged write during the restarts: %v", load.longestGap(began, time.Now()).Round(time.Millisecond))
	})

	load.stop()
	step("no write failed after its retries, and every member has every acknowledged write", func(t *testing.T) {
		t.Log(load.summary())
		if f := load.failures(); len(f) > 0 {
			t.Errorf("%d writes failed after their retries:\n%s", len(f), strings.Join(f, "\n"))
		}
		acked := load.acked()
		for _, m := range members {
			c.eventually(fmt.Sprintf("%s, asked alone, has the %d writes acknowledged", m.service, len(acked)), time.Minute, func() error {
				return c.hasAll(m.addr, ns, acked)
			})
		}
		c.waitRolledOut(4, demoV2)
	})
}

// waitLeader waits until exactly one of members says (etcd's
// etcd_server_is_leader on its /metrics) it leads, and returns it.
func (c *cluster) waitLeader(members []member) member {
	c.t.Helper()
	var leader member
	c.eventually("one etcd leader among "+servicesOf(members), time.Minute, func() error {
		var leaders []member
		for _, m := range members {
			v, err := c.metric(m.service, "etcd_server_is_leader")
			if err != nil {
				return err
			}
			if v == 1 {
				leaders = append(leaders, m)
			}
		}
		if len(leaders) != 1 {
			return fmt.Errorf("leaders: %s", servicesOf(leaders))
		}
		leader = leaders[0]
		return nil
	})
	return leader
}

func servicesOf(ms []member) string {
	var s []string
	for _, m := range ms {
		s = append(s, m.service)
	}
	return "[" + strings.Join(s, " ") + "]"
}

// metric is the value of an unlabelled series on the apiserver's
// /metrics, read inside its container (skiff-probe: the image has no
// curl, and the metrics port is not published).
func (c *cluster) metric(service, name string) (float64, error) {
	body, err := c.docker("exec", c.container(service), "skiff-probe", "-body", "-timeout", "5s", "http://127.0.0.1:6444/metrics")
	if err != nil {
		return 0, err
	}
	for l := range strings.Lines(body) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), name+" "); ok {
			return strconv.ParseFloat(v, 64)
		}
	}
	return 0, fmt.Errorf("%s: no %s on /metrics", service, name)
}

// state is the container's state (running, exited, restarting...).
func (c *cluster) state(id string) string {
	c.t.Helper()
	out, err := c.docker("inspect", "-f", "{{.State.Status}}", id)
	if err != nil {
		c.t.Fatal(err)
	}
	return strings.TrimSpace(out)
}

// waitHealthy waits until the service's healthcheck says healthy (its
// /healthz: etcd and the watch caches up).
func (c *cluster) waitHealthy(service string) {
	c.t.Helper()
	id := c.container(service)
	c.eventually(service+" healthy", 2*time.Minute, func() error {
		out, err := c.docker("inspect", "-f", "{{.State.Status}} {{.State.Health.Status}}", id)
		if err != nil {
			return err
		}
		if s := strings.TrimSpace(out); s != "running healthy" {
			return fmt.Errorf("%s", s)
		}
		return nil
	})
}

// hasAll says which of names the member at addr, asked alone, does not
// have among the ConfigMaps of ns.
func (c *cluster) hasAll(addr, ns string, names []string) error {
	out, err := c.tryCtl("get", "configmaps", "-n", ns, "-o", "name", "--server", addr)
	if err != nil {
		return err
	}
	have := map[string]bool{}
	for _, n := range strings.Fields(string(out)) {
		have[strings.TrimPrefix(n, "configmap/")] = true
	}
	var missing []string
	for _, n := range names {
		if !have[n] {
			missing = append(missing, n)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%d of %d missing, e.g. %v", len(missing), len(names), missing[:min(5, len(missing))])
	}
	return nil
}

// writeLoad creates ConfigMaps from several goroutines, each with
// skiffctl (a process per write) given the cluster's config, i.e. every
// member's address: the client HA users have. A write is retried for up
// to retryFor while it fails for another reason than a refusal; it is
// acknowledged once a create succeeds, or answers AlreadyExists on a
// retry (an earlier attempt was committed though its answer was lost).
type writeLoad struct {
	c      *cluster
	ns     string
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.Mutex
	acks    []ack
	failed  []string
	retried int
	marks   []string
	newAck  chan struct{}
}

type ack struct {
	name      string
	began, at time.Time
	attempts  int
	// errs are the failed attempts' errors, with when each ended.
	errs []string
}

const retryFor = 30 * time.Second

func startWriteLoad(c *cluster, ns string, workers int) *writeLoad {
	ctx, cancel := context.WithCancel(context.Background())
	l := &writeLoad{c: c, ns: ns, ctx: ctx, cancel: cancel, newAck: make(chan struct{})}
	for w := range workers {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			for i := 0; ctx.Err() == nil; i++ {
				l.write(fmt.Sprintf("w%d-%05d", w, i))
			}
		}()
	}
	return l
}

func (l *writeLoad) write(name string) {
	manifest := fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\ndata:\n  written: %q\n", name, time.Now().Format(time.RFC3339Nano))
	began := time.Now()
	var errs []string
	for attempt := 1; ; attempt++ {
		if l.ctx.Err() != nil && attempt == 1 {
			return // stopped: never begun
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		cmd := exec.CommandContext(ctx, l.c.skiffctl, "create", "-n", l.ns, "-f", "-")
		cmd.Stdin = strings.NewReader(manifest)
		out, err := cmd.CombinedOutput()
		cancel()
		msg := strings.TrimSpace(string(out))
		if err == nil || (attempt > 1 && strings.Contains(msg, "AlreadyExists")) {
			l.mu.Lock()
			l.acks = append(l.acks, ack{name: name, began: began, at: time.Now(), attempts: attempt, errs: errs})
			if attempt > 1 {
				l.retried++
			}
			close(l.newAck)
			l.newAck = make(chan struct{})
			l.mu.Unlock()
			return
		}
		errs = append(errs, fmt.Sprintf("+%v: %s", time.Since(began).Round(time.Millisecond), firstLine(msg, err)))
		if time.Since(began) > retryFor || l.refused(msg) {
			l.mu.Lock()
			l.failed = append(l.failed, fmt.Sprintf("%s (begun %s, %d attempts): %s", name, began.Format("15:04:05.000"), attempt, strings.Join(errs, "; ")))
			l.mu.Unlock()
			return
		}
		// A write begun is settled, acknowledged or failed, even when
		// the load is stopped meanwhile.
		<-time.After(min(time.Duration(attempt)*200*time.Millisecond, time.Second))
	}
}

// refused: the apiserver answered and said no (not worth retrying).
func (l *writeLoad) refused(msg string) bool {
	for _, r := range []string{"(Forbidden)", "(Invalid)", "(BadRequest)", "(Unauthorized)"} {
		if strings.Contains(msg, r) {
			return true
		}
	}
	return false
}

func firstLine(msg string, err error) string {
	if msg == "" {
		return err.Error()
	}
	l, _, _ := strings.Cut(msg, "\n")
	return l
}

func (l *writeLoad) stop() {
	l.cancel()
	l.wg.Wait()
}

func (l *writeLoad) mark(what string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.marks = append(l.marks, fmt.Sprintf("%s at ack %d", what, len(l.acks)))
}

func (l *writeLoad) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.acks)
}

// acked are the names of the acknowledged writes so far.
func (l *writeLoad) acked() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	names := make([]string, len(l.acks))
	for i, a := range l.acks {
		names[i] = a.name
	}
	return names
}

func (l *writeLoad) failures() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.failed)
}

// waitFor waits (on the acknowledgements, with a deadline) until ok says
// the acknowledgements so far are enough.
func (l *writeLoad) waitFor(t *testing.T, what string, timeout time.Duration, ok func([]ack) bool) {
	t.Helper()
	deadline := time.After(timeout)
	for {
		l.mu.Lock()
		done, next := ok(l.acks), l.newAck
		n := len(l.acks)
		l.mu.Unlock()
		if done {
			return
		}
		select {
		case <-next:
		case <-deadline:
			t.Fatalf("%s: not after %v (%d writes acknowledged; failed: %v)", what, timeout, n, l.failures())
		}
	}
}

func (l *writeLoad) waitAcks(t *testing.T, n int, timeout time.Duration) {
	t.Helper()
	l.waitFor(t, fmt.Sprintf("%d writes acknowledged", n), timeout, func(a []ack) bool { return len(a) >= n })
}

// waitAckAfter waits for the first acknowledged write begun after t0 and
// returns when it was acknowledged.
func (l *writeLoad) waitAckAfter(t *testing.T, t0 time.Time, timeout time.Duration) time.Time {
	t.Helper()
	var at time.Time
	l.waitFor(t, "a write begun after "+t0.Format("15:04:05.000")+" acknowledged", timeout, func(as []ack) bool {
		for _, a := range as {
			if a.began.After(t0) {
				at = a.at
				return true
			}
		}
		return false
	})
	return at
}

// longestGap is the longest time between from and to without an
// acknowledgement.
func (l *writeLoad) longestGap(from, to time.Time) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	var times []time.Time
	for _, a := range l.acks {
		if a.at.After(from) && a.at.Before(to.Add(time.Nanosecond)) {
			times = append(times, a.at)
		}
	}
	slices.SortFunc(times, func(a, b time.Time) int { return a.Compare(b) })
	prev, gap := from, time.Duration(0)
	for _, at := range append(times, to) {
		gap = max(gap, at.Sub(prev))
		prev = at
	}
	return gap
}

// summary says how many writes were acknowledged, how many needed a
// retry, the slowest, and the marks.
func (l *writeLoad) summary() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var slowest ack
	var retried []string
	for _, a := range l.acks {
		if a.at.Sub(a.began) > slowest.at.Sub(slowest.began) {
			slowest = a
		}
		if len(a.errs) > 0 {
			retried = append(retried, fmt.Sprintf("%s (begun %s): %s", a.name, a.began.Format("15:04:05.000"), strings.Join(a.errs, "; ")))
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "write load: %d acknowledged, %d of them after a retry, %d failed; slowest %s (begun %s) in %v, %d attempts",
		len(l.acks), l.retried, len(l.failed), slowest.name, slowest.began.Format("15:04:05.000"), slowest.at.Sub(slowest.began).Round(time.Millisecond), slowest.attempts)
	if len(l.acks) > 1 {
		span := l.acks[len(l.acks)-1].at.Sub(l.acks[0].at)
		fmt.Fprintf(&b, "; %.1f writes/s over %v", float64(len(l.acks)-1)/span.Seconds(), span.Round(time.Second))
	}
	fmt.Fprintf(&b, "; %s", strings.Join(l.marks, ", "))
	if len(retried) > 0 {
		fmt.Fprintf(&b, "\nretried writes:\n%s", strings.Join(retried, "\n"))
	}
	return b.String()
}
