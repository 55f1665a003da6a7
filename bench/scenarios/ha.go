package scenarios

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	"skiff.dev/bench/proc"
	"skiff.dev/internal/apierrors"
	"skiff.dev/internal/client"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
)

// The high-availability figures (issue 23): skiff-apiserver processes
// (the real binary, --insecure, fsync on as always) as control-plane
// members of one embedded etcd cluster, against one apiserver alone.
var (
	figHASinglePerS = Figure{Name: "ha.create_single_per_s", Unit: "objects/s"}
	figHASingleCPU  = Figure{Name: "ha.create_single_cpu_us_per_object", Unit: "us CPU/object"}
	figHAThreePerS  = Figure{Name: "ha.create_three_per_s", Unit: "objects/s"}
	figHAThreeCPU   = Figure{Name: "ha.create_three_cpu_us_per_object", Unit: "us CPU/object"}
	// Replication is the cost: every write is appended and fsynced by a
	// quorum (two of the three) before it is acknowledged, and every
	// member applies it to its store and its watch caches.
	figHARatio = Figure{Name: "ha.create_vs_single_ratio", Unit: "ratio", Target: AtLeast(0.6)}
	// From the SIGKILL of the member whose etcd leads to the first
	// acknowledged write started after it, through a client given all
	// three addresses: the slowest of the rounds, and their median.
	figHAGap    = Figure{Name: "ha.failover_write_gap_ms", Unit: "ms", Target: AtMost(3000)}
	figHAGapP50 = Figure{Name: "ha.failover_write_gap_p50_ms", Unit: "ms"}
	// The floor under the gap: from the kill until a surviving etcd member
	// reports a new leader (etcd's election timeout, 1,000 ms, and a
	// randomized part of as much again), the slowest of the rounds.
	figHAElection = Figure{Name: "ha.failover_election_ms", Unit: "ms"}
	// ha.etcd_three_vs_single_ratio is the ratio's ceiling on this
	// machine: the same puts straight to the members' etcd cluster and to
	// the single apiserver's etcd, without the apiservers' own work.
	figHAEtcdRatio = Figure{Name: "ha.etcd_three_vs_single_ratio", Unit: "ratio"}
	// The same puts' CPU: the server processes' (etcd's, the apiservers
	// idle) per put, on three members and on one, and the ceiling of the
	// ratio they set were an apiserver's own work per create on three
	// members what it is on one (the creates being CPU-bound, as
	// http.create_vs_grpc_ceiling reasons).
	figHAEtcdSingleCPU = Figure{Name: "ha.etcd_single_cpu_us_per_put", Unit: "us CPU/put"}
	figHAEtcdThreeCPU  = Figure{Name: "ha.etcd_three_cpu_us_per_put", Unit: "us CPU/put"}
	figHACPUCeiling    = Figure{Name: "ha.create_vs_single_ceiling", Unit: "ratio"}
)

const (
	haNamespace = "ha-bench"
	// The failover writes go apart from the creates, to be listed back.
	haFailoverNamespace = "ha-failover"
	// haConns is how many connections (client processes, as it were)
	// spread the creates over the members: each picks one member of the
	// shuffled list (pick_first), as a real client does.
	haConns = 8
	// haWriters write one at a time each through the failover client.
	haWriters = 4
	// haWriteTimeout bounds each of the failover writers' calls, as a
	// safety net only: beyond etcd's request timeout (5 s + 2 election
	// timeouts: 7 s), so that etcd's own answer shows; the client library
	// (internal/client) puts no deadline on a call. A write a follower had
	// forwarded to the leader just before it died may be lost with it:
	// the follower's etcd answers it only at that timeout ("etcdserver:
	// request timed out, possibly due to previous leader failure",
	// Internal), and the notes count such calls. A deadline of 1 s was
	// tried and made the gap worse (docs/operations.md): it gives up
	// calls the new leader would have committed, and their retries,
	// made before the followers knew the leader was gone, wait a second
	// whole too.
	haWriteTimeout = 10 * time.Second
	// haRetryPause is a writer's pause after a failed write.
	haRetryPause = 10 * time.Millisecond
)

func haScenario() *Scenario {
	return &Scenario{
		Name: "ha",
		Summary: "skiff-apiserver processes (--insecure, fsync on): API creates on three control-plane members of one etcd cluster against one apiserver alone, same clients, alternating rounds; " +
			"then the member whose etcd leads SIGKILLed under writes through a client given the three addresses, restarted, three times",
		Figures: []Figure{figHASinglePerS, figHASingleCPU, figHAThreePerS, figHAThreeCPU, figHARatio, figHAEtcdRatio, figHAEtcdSingleCPU, figHAEtcdThreeCPU, figHACPUCeiling, figHAGap, figHAGapP50, figHAElection},
		Run: func(ctx context.Context, env *Env, rs *Results) error {
			return runHA(ctx, env, rs, haOptions{failovers: 3})
		},
	}
}

// haOptions size the scenario beyond Config (the test's tiny run).
type haOptions struct {
	failovers int
}

func runHA(ctx context.Context, env *Env, rs *Results, o haOptions) error {
	began := time.Now()
	dir, err := os.MkdirTemp("", "skiff-bench-ha-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	env.logf("ha: building %s", apiserverPkg)
	bin, err := proc.Build(ctx, dir, apiserverPkg)
	if err != nil {
		return err
	}
	single, err := startSingle(ctx, bin, dir)
	if err != nil {
		return err
	}
	defer single.stop()
	env.logf("ha: starting three members")
	three, err := startMembers(ctx, bin, dir, 3)
	if err != nil {
		return err
	}
	defer three.stop()
	if err := haCreates(ctx, env, rs, single, three); err != nil {
		return err
	}
	single.stop() // no part in the failovers: its CPU is not spent there
	if err := haFailovers(ctx, env, rs, three, o.failovers); err != nil {
		return err
	}
	env.logf("ha: %.0f s (the build and the starts included)", time.Since(began).Seconds())
	return nil
}

// haMember is one skiff-apiserver process of the scenario.
type haMember struct {
	name, bin string
	args      []string
	addr      string // the API address, fixed across restarts
	etcd      string // the embedded etcd's client URL, from the last start
	dir       string // its --data-dir
	// etcdCli reaches the member's etcd (its Status says which member
	// leads), from the last start: the URL changes with each.
	etcdCli *clientv3.Client
	etcdTLS *tls.Config // the client TLS etcdCli has
	p       *proc.Process
}

func (m *haMember) start(ctx context.Context) error {
	p, err := proc.Start(nil, m.bin, m.args...)
	if err != nil {
		return err
	}
	m.p = p
	_, line, err := p.WaitLog(ctx, "apiserver serving", 2*time.Minute)
	if err != nil {
		p.Kill()
		m.p = nil
		return fmt.Errorf("member %s: %w", m.name, err)
	}
	var serving struct{ GRPC, Etcd string }
	if err := json.Unmarshal(line, &serving); err != nil || serving.Etcd == "" || serving.GRPC == "" {
		return fmt.Errorf("member %s: the \"apiserver serving\" line names no address: %s", m.name, line)
	}
	// The API address is fixed (--listen): written once, before the
	// writers that read it run; a restart must come back on it.
	switch {
	case m.addr == "":
		m.addr = serving.GRPC
	case m.addr != serving.GRPC:
		return fmt.Errorf("member %s restarted on %s, not its address %s", m.name, serving.GRPC, m.addr)
	}
	m.etcd = serving.Etcd
	if m.etcdCli != nil {
		m.etcdCli.Close()
	}
	tlsCfg, err := etcdTLSIn(m.dir)
	if err == nil {
		m.etcdCli, err = newEtcdClient(etcdTarget{m.etcd, tlsCfg})
	}
	if err != nil {
		return fmt.Errorf("member %s's etcd: %w", m.name, err)
	}
	m.etcdTLS = tlsCfg
	return nil
}

// targets are the members' etcds, for a putter.
func (c *haCluster) targets() []etcdTarget {
	var ts []etcdTarget
	for _, m := range c.members {
		ts = append(ts, etcdTarget{m.etcd, m.etcdTLS})
	}
	return ts
}

// cpu is the CPU the process has used so far (user + system).
func (m *haMember) cpu() (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", m.p.Pid()))
	if err != nil {
		return 0, fmt.Errorf("a process's CPU (Linux /proc needed): %w", err)
	}
	// The fields after the command's "(name)": state is field 3, utime
	// and stime 14 and 15, in clock ticks (USER_HZ, 100 on Linux).
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %q", m.p.Pid(), s)
	}
	var ticks int64
	for _, v := range f[11:13] {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/%d/stat: %w", m.p.Pid(), err)
		}
		ticks += n
	}
	return time.Duration(ticks) * 10 * time.Millisecond, nil
}

// haCluster is one apiserver alone or the members of one etcd cluster.
type haCluster struct {
	members []*haMember
}

func (c *haCluster) addrs() string {
	var out []string
	for _, m := range c.members {
		out = append(out, m.addr)
	}
	return strings.Join(out, ",")
}

// cpu is the CPU each of its running processes has used so far.
func (c *haCluster) cpu() ([]time.Duration, error) {
	out := make([]time.Duration, len(c.members))
	for i, m := range c.members {
		if m.p == nil {
			continue
		}
		d, err := m.cpu()
		if err != nil {
			return nil, err
		}
		out[i] = d
	}
	return out, nil
}

func (c *haCluster) stop() {
	for _, m := range c.members {
		if m.p != nil {
			m.p.Stop()
			m.p = nil
		}
		if m.etcdCli != nil {
			m.etcdCli.Close()
			m.etcdCli = nil
		}
	}
}

// startSingle starts one apiserver as skiff-apiserver starts with no
// cluster flag: an etcd cluster of one.
func startSingle(ctx context.Context, bin, dir string) (*haCluster, error) {
	m := &haMember{name: "single", bin: bin, dir: filepath.Join(dir, "single")}
	m.args = []string{"--insecure", "--data-dir", m.dir, "--listen", "127.0.0.1:0", "--metrics-listen", ""}
	if err := m.start(ctx); err != nil {
		return nil, err
	}
	return &haCluster{members: []*haMember{m}}, nil
}

// startMembers starts n members on loopback: the first with
// --cluster-init, each other joining it, one at a time. Their API and
// peer ports are fixed, so that a member restarts where it was.
func startMembers(ctx context.Context, bin, dir string, n int) (*haCluster, error) {
	token := filepath.Join(dir, "cluster-token")
	if err := os.WriteFile(token, []byte("skiff-bench-ha\n"), 0o600); err != nil {
		return nil, err
	}
	c := &haCluster{}
	for i := range n {
		api, err := freeLoopbackAddr()
		if err != nil {
			c.stop()
			return nil, err
		}
		peerAddr, err := freeLoopbackAddr()
		if err != nil {
			c.stop()
			return nil, err
		}
		m := &haMember{name: fmt.Sprintf("m%d", i+1), bin: bin, addr: api}
		m.dir = filepath.Join(dir, m.name)
		m.args = []string{"--insecure", "--data-dir", m.dir, "--listen", api, "--metrics-listen", "",
			"--etcd-name", m.name, "--etcd-peer-url", "http://" + peerAddr, "--cluster-token-file", token}
		if i == 0 {
			m.args = append(m.args, "--cluster-init")
		} else {
			// A restarted member has its data and does not join again.
			m.args = append(m.args, "--join", c.members[0].addr)
		}
		c.members = append(c.members, m)
		if err := m.start(ctx); err != nil {
			c.stop()
			return nil, err
		}
	}
	return c, nil
}

// freeLoopbackAddr is a loopback address whose port is free now.
func freeLoopbackAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// haTarget creates ConfigMaps on a cluster over haConns connections, each
// given every member's address, and sums the members' CPU over its runs.
type haTarget struct {
	cluster *haCluster
	conns   []*grpc.ClientConn
	clients []corev1.ConfigMapsClient
	data    string
	// Over every run, warmups included: the creates acknowledged, the
	// members' CPU and the benchmark process's (its clients').
	creates   int64
	serverCPU []time.Duration // by member
	clientCPU time.Duration
}

func newHATarget(c *haCluster, conns int) (*haTarget, error) {
	t := &haTarget{cluster: c, data: string(payload(1024)), serverCPU: make([]time.Duration, len(c.members))}
	for range conns {
		conn, err := client.Dial(client.Config{Server: c.addrs(), Insecure: true})
		if err != nil {
			t.close()
			return nil, err
		}
		t.conns = append(t.conns, conn)
		t.clients = append(t.clients, corev1.NewConfigMapsClient(conn))
	}
	return t, nil
}

func (t *haTarget) close() { closeAll(t.conns) }

// spread says how many connections went to each member: a call on each
// (a Get of nothing) connects it, and its peer is the member.
func (t *haTarget) spread(ctx context.Context) (string, error) {
	count := map[string]int{}
	for _, cm := range t.clients {
		var p peer.Peer
		_, err := cm.Get(ctx, &metav1.GetRequest{Namespace: haNamespace, Name: "nothing"}, grpc.Peer(&p))
		if err != nil && !apierrors.IsNotFound(err) {
			return "", err
		}
		count[memberOf(t.cluster, p.Addr)]++
	}
	var parts []string
	for _, m := range t.cluster.members {
		parts = append(parts, fmt.Sprintf("%s %d", m.name, count[m.name]))
	}
	return strings.Join(parts, ", "), nil
}

// memberOf names the member at addr ("?" for none).
func memberOf(c *haCluster, addr net.Addr) string {
	if addr != nil {
		for _, m := range c.members {
			if m.addr == addr.String() {
				return m.name
			}
		}
	}
	return "?"
}

func (t *haTarget) run(ctx context.Context, cfg Config, window time.Duration, round int) (*loadResult, error) {
	cpu0, err := t.cluster.cpu()
	if err != nil {
		return nil, err
	}
	client0 := cpuTime()
	var acked atomic.Int64
	res, err := load{
		clients:  cfg.Clients,
		warmup:   cfg.Warmup,
		duration: window,
		op: func(ctx context.Context, client, seq int) error {
			name := fmt.Sprintf("c-%d-%03d-%09d", round, client, seq)
			if _, err := t.clients[client%len(t.clients)].Create(ctx, configMap(haNamespace, name, t.data)); err != nil {
				return err
			}
			acked.Add(1)
			return nil
		},
	}.run(ctx)
	if err != nil {
		return nil, fmt.Errorf("creating ConfigMaps: %w", err)
	}
	cpu1, err := t.cluster.cpu()
	if err != nil {
		return nil, err
	}
	t.creates += acked.Load()
	for i := range cpu1 {
		t.serverCPU[i] += cpu1[i] - cpu0[i]
	}
	t.clientCPU += cpuTime() - client0
	return res, nil
}

// cpuPerCreate is the members' CPU per create, in microseconds: theirs
// together, each one's ("m1 120, m2 110, ...") and the benchmark's clients'.
func (t *haTarget) cpuPerCreate() (server float64, each string, client float64) {
	if t.creates == 0 {
		return 0, "", 0
	}
	per := func(d time.Duration) float64 { return float64(d.Microseconds()) / float64(t.creates) }
	var parts []string
	for i, d := range t.serverCPU {
		server += per(d)
		parts = append(parts, fmt.Sprintf("%s %.0f", t.cluster.members[i].name, per(d)))
	}
	return server, strings.Join(parts, ", "), per(t.clientCPU)
}

// haCreates measures the creates on three members against one alone, in
// rounds alternating which goes first.
func haCreates(ctx context.Context, env *Env, rs *Results, single, three *haCluster) error {
	cfg := env.Config
	conns := min(haConns, max(cfg.Clients, 1))
	one, err := newHATarget(single, conns)
	if err != nil {
		return err
	}
	defer one.close()
	all, err := newHATarget(three, conns)
	if err != nil {
		return err
	}
	defer all.close()
	for _, t := range []*haTarget{one, all} {
		if err := createNamespaces(ctx, t.conns[0], haNamespace); err != nil {
			return err
		}
	}
	spread, err := all.spread(ctx)
	if err != nil {
		return err
	}
	env.logf("ha: creates, %d clients over %d connections; on the members: %s", cfg.Clients, conns, spread)
	rounds := max(cfg.Rounds, 1)
	window := cfg.Duration / time.Duration(rounds)
	threeTotal, singleTotal, ratios, err := pairedRounds(rounds, true,
		func(r int) (*loadResult, error) { return all.run(ctx, cfg, window, 2*r) },
		func(r int) (*loadResult, error) { return one.run(ctx, cfg, window, 2*r+1) })
	if err != nil {
		return err
	}
	lead, _, err := leader(ctx, three)
	if err != nil {
		return err
	}
	leaderName := lead.name
	singleCPU, _, singleClient := one.cpuPerCreate()
	threeCPU, threeEach, threeClient := all.cpuPerCreate()
	how := fmt.Sprintf("%d clients over %d gRPC conns", cfg.Clients, conns)
	rs.Add(figHASinglePerS, singleTotal.perSecond(), fmt.Sprintf("one skiff-apiserver (an etcd cluster of one); %s; %d creates in %.1fs over %d rounds; p99 %.1f ms",
		how, singleTotal.ops, singleTotal.elapsed.Seconds(), rounds, ms(singleTotal.latency.Percentile(99))))
	rs.Add(figHASingleCPU, singleCPU, fmt.Sprintf("the apiserver process's CPU / creates, warmups included (the benchmark's clients: %.0f us more)", singleClient))
	rs.Add(figHAThreePerS, threeTotal.perSecond(), fmt.Sprintf("three members; %s, each conn given the three addresses (pick_first over a shuffled list, as every client): conns on %s; %d creates in %.1fs over %d rounds; p99 %.1f ms",
		how, spread, threeTotal.ops, threeTotal.elapsed.Seconds(), rounds, ms(threeTotal.latency.Percentile(99))))
	rs.Add(figHAThreeCPU, threeCPU, fmt.Sprintf("the three processes' CPU / creates, warmups included: %s (the etcd leader: %s); the benchmark's clients: %.0f us more", threeEach, leaderName, threeClient))
	rs.Add(figHARatio, threeTotal.perSecond()/singleTotal.perSecond(),
		fmt.Sprintf("ha.create_three_per_s / ha.create_single_per_s, rounds alternating which goes first; per round %s", strings.Join(ratios, " ")))
	return haEtcdCeiling(ctx, rs, cfg, rounds, window, single, three, haCreateCPU{server: singleCPU, client: singleClient, threeServer: threeCPU})
}

// haCreateCPU is what the creates cost (us CPU a create): the single
// apiserver's process, the benchmark's clients of it, and the three
// members' processes together.
type haCreateCPU struct{ server, client, threeServer float64 }

// haEtcdCeiling measures the ratio's ceilings: 1 KiB puts of the same
// clients straight to the three members' etcd (the clients spread over
// the members, followers forwarding to the leader as the apiservers' do)
// and to the single apiserver's, while the apiservers idle; their
// throughput, and the server processes' CPU per put against the creates'
// (creates).
func haEtcdCeiling(ctx context.Context, rs *Results, cfg Config, rounds int, window time.Duration, single, three *haCluster, creates haCreateCPU) error {
	all, err := newHAPutter(three)
	if err != nil {
		return err
	}
	defer all.close()
	one, err := newHAPutter(single)
	if err != nil {
		return err
	}
	defer one.close()
	threeTotal, singleTotal, ratios, err := pairedRounds(rounds, true,
		func(r int) (*loadResult, error) { return all.run(ctx, cfg, window, 2*r) },
		func(r int) (*loadResult, error) { return one.run(ctx, cfg, window, 2*r+1) })
	if err != nil {
		return err
	}
	rs.Add(figHAEtcdRatio, threeTotal.perSecond()/singleTotal.perSecond(),
		fmt.Sprintf("etcd puts of 1 KiB, %d clients: %.0f/s to the three members' etcd, %.0f/s to one; per round %s: the ceiling of ha.create_vs_single_ratio on this machine (the members share its cores and disk)",
			cfg.Clients, threeTotal.perSecond(), singleTotal.perSecond(), strings.Join(ratios, " ")))
	oneCPU, threeCPU := one.cpuPerPut(), all.cpuPerPut()
	rs.Add(figHAEtcdSingleCPU, oneCPU, fmt.Sprintf("the single apiserver process's CPU / puts to its etcd, warmups included (a put arrives over etcd's TLS client port, an apiserver's create reaches its etcd in-process: a create through the apiserver cost %.0f us)", creates.server))
	rs.Add(figHAEtcdThreeCPU, threeCPU, fmt.Sprintf("the three processes' CPU / puts to their etcd, warmups included: etcd's replication to three members costs %.0f us a write more than to one (a create through the three apiservers cost %.0f us, %.0f more than through one)",
		threeCPU-oneCPU, creates.threeServer, creates.threeServer-creates.server))
	best := creates.server + threeCPU - oneCPU + creates.client
	rs.Add(figHACPUCeiling, (creates.server+creates.client)/best, fmt.Sprintf("the ratio were a create on three members to cost what it costs on one plus etcd's replication (the creates CPU-bound): (single create %.0f + its clients %.0f) / (%.0f + (etcd on three %.0f - on one %.0f) + %.0f)",
		creates.server, creates.client, creates.server, threeCPU, oneCPU, creates.client))
	return nil
}

// haPutter is an etcdPutter at a cluster's members that counts the
// members' CPU and the puts acknowledged over its runs, warmups included.
type haPutter struct {
	*etcdPutter
	cluster *haCluster
	puts    int64
	cpu     time.Duration
}

func newHAPutter(c *haCluster) (*haPutter, error) {
	p, err := etcdPutterAt(c.targets()...)
	if err != nil {
		return nil, err
	}
	return &haPutter{etcdPutter: p, cluster: c}, nil
}

func (p *haPutter) run(ctx context.Context, cfg Config, window time.Duration, round int) (*loadResult, error) {
	cpu0, err := p.cluster.cpu()
	if err != nil {
		return nil, err
	}
	puts0 := p.acked.Load()
	res, err := p.etcdPutter.run(ctx, cfg, window, round)
	if err != nil {
		return nil, err
	}
	cpu1, err := p.cluster.cpu()
	if err != nil {
		return nil, err
	}
	for i := range cpu1 {
		p.cpu += cpu1[i] - cpu0[i]
	}
	p.puts += p.acked.Load() - puts0
	return res, nil
}

// cpuPerPut is the members' CPU per put, in microseconds.
func (p *haPutter) cpuPerPut() float64 {
	if p.puts == 0 {
		return 0
	}
	return float64(p.cpu.Microseconds()) / float64(p.puts)
}

// haCall is one call of the failover writers: a write acknowledged (err
// "") or failed.
type haCall struct {
	writer     int
	name       string
	start, end time.Time
	member     string // the member that answered, if one did
	err        string
}

// haWriterSet is the failover writers: haWriters goroutines creating
// ConfigMaps one at a time each through one connection given every
// member's address, each call bounded by haWriteTimeout and retried
// (under a new name) haRetryPause after a failure.
type haWriterSet struct {
	cluster *haCluster
	cm      corev1.ConfigMapsClient
	mu      sync.Mutex
	acks    []haCall
	fails   []haCall
	// firstMsg is the first message of each code that failed a call.
	firstMsg map[string]string
	changed  chan struct{} // closed and replaced at each ack
}

func (w *haWriterSet) run(ctx context.Context, writer int) {
	data := string(payload(1024))
	for seq := 0; ctx.Err() == nil; seq++ {
		name := fmt.Sprintf("w-%d-%09d", writer, seq)
		callCtx, cancel := context.WithTimeout(ctx, haWriteTimeout)
		var p peer.Peer
		start := time.Now()
		_, err := w.cm.Create(callCtx, configMap(haFailoverNamespace, name, data), grpc.Peer(&p))
		call := haCall{writer: writer, name: name, start: start, end: time.Now(), member: memberOf(w.cluster, p.Addr)}
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			call.err = status.Code(err).String()
			w.mu.Lock()
			w.fails = append(w.fails, call)
			if _, ok := w.firstMsg[call.err]; !ok {
				w.firstMsg[call.err] = status.Convert(err).Message()
			}
			w.mu.Unlock()
			pause := time.NewTimer(haRetryPause)
			select {
			case <-ctx.Done():
			case <-pause.C:
			}
			pause.Stop()
			continue
		}
		w.mu.Lock()
		w.acks = append(w.acks, call)
		close(w.changed)
		w.changed = make(chan struct{})
		w.mu.Unlock()
	}
}

// firstAck is the ack of the write started at or after t that ended
// first, if there is one yet.
func (w *haWriterSet) firstAck(t time.Time) (haCall, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	var found *haCall
	for i := range w.acks {
		if a := &w.acks[i]; !a.start.Before(t) && (found == nil || a.end.Before(found.end)) {
			found = a
		}
	}
	if found == nil {
		return haCall{}, false
	}
	return *found, true
}

// waitAck waits for firstAck(t).
func (w *haWriterSet) waitAck(ctx context.Context, t time.Time, timeout time.Duration) (haCall, error) {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		w.mu.Lock()
		changed := w.changed
		w.mu.Unlock()
		if a, ok := w.firstAck(t); ok {
			return a, nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return haCall{}, ctx.Err()
		case <-deadline.C:
			return haCall{}, fmt.Errorf("no write acknowledged within %v", timeout)
		}
	}
}

// waitEach waits until each writer has had a write started at or after
// t acknowledged.
func (w *haWriterSet) waitEach(ctx context.Context, t time.Time, timeout time.Duration) error {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		w.mu.Lock()
		changed := w.changed
		done := map[int]bool{}
		for _, a := range w.acks {
			if !a.start.Before(t) {
				done[a.writer] = true
			}
		}
		w.mu.Unlock()
		if len(done) == haWriters {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		case <-deadline.C:
			return fmt.Errorf("%d of %d writers had a write acknowledged within %v", len(done), haWriters, timeout)
		}
	}
}

// failedSince counts the failed calls that ended in [from, to), by code.
func (w *haWriterSet) failedSince(from, to time.Time) map[string]int {
	w.mu.Lock()
	defer w.mu.Unlock()
	byCode := map[string]int{}
	for _, f := range w.fails {
		if !f.end.Before(from) && f.end.Before(to) {
			byCode[f.err]++
		}
	}
	return byCode
}

// caughtAt counts the calls started before t that were still waiting at
// t, and returns the latest end among them.
func (w *haWriterSet) caughtAt(t time.Time) (n int, last time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, calls := range [][]haCall{w.acks, w.fails} {
		for _, c := range calls {
			if c.start.Before(t) && c.end.After(t) {
				n++
				if c.end.After(last) {
					last = c.end
				}
			}
		}
	}
	return n, last
}

// haRound is one failover: the member killed, the member the writers'
// client was on, when the kill was, when a new etcd leader was seen, and
// the first write acknowledged after.
type haRound struct {
	killed, client string
	t0, elected    time.Time
	ack            haCall
}

// note says where the round's gap went: the election, the calls that
// failed meanwhile, the calls still waiting when writes resumed (caught
// by the kill), and, when the client was on the killed member, when it
// moved to another.
func (r haRound) note(w *haWriterSet) string {
	at := func(t time.Time) float64 { return ms(t.Sub(r.t0)) }
	s := fmt.Sprintf("%s killed, client on %s: new etcd leader seen at %.0f ms, first write acked at %.0f ms (started at %.0f ms, through %s); failed calls meanwhile: %s",
		r.killed, r.client, at(r.elected), at(r.ack.end), at(r.ack.start), r.ack.member, countsString(w.failedSince(r.t0, r.ack.end)))
	if n, last := w.caughtAt(r.ack.end); n > 0 {
		s += fmt.Sprintf("; %d calls still waiting then, the last answered at %.0f ms", n, at(last))
	}
	if r.client == r.killed {
		if m, t := w.movedTo(r.killed, r.t0); m != "" {
			s += fmt.Sprintf("; the client's first call to another member (%s) started at %.0f ms", m, at(t))
		}
	}
	return s
}

// movedTo is the member other than gone of the first call started at or
// after t that reached one (acknowledged or not), and when it started.
func (w *haWriterSet) movedTo(gone string, t time.Time) (string, time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	var first *haCall
	for _, calls := range [][]haCall{w.acks, w.fails} {
		for i := range calls {
			c := &calls[i]
			if c.member != gone && c.member != "?" && !c.start.Before(t) && (first == nil || c.start.Before(first.start)) {
				first = c
			}
		}
	}
	if first == nil {
		return "", time.Time{}
	}
	return first.member, first.start
}

func countsString(m map[string]int) string {
	var parts []string
	for k, n := range m {
		parts = append(parts, fmt.Sprintf("%d %s", n, k))
	}
	slices.Sort(parts)
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// leader is the member whose etcd leads, by etcd's Status of each
// running member, and the leader's etcd member id.
func leader(ctx context.Context, c *haCluster) (*haMember, uint64, error) {
	for _, m := range c.members {
		if m.p == nil {
			continue
		}
		st, err := m.etcdCli.Status(ctx, m.etcd)
		if err != nil {
			continue
		}
		if st.Leader != 0 && st.Leader == st.Header.GetMemberId() {
			return m, st.Leader, nil
		}
	}
	return nil, 0, errors.New("no member's etcd leads")
}

// newLeader polls the running members' etcd Status every few
// milliseconds until one names a leader other than old, and returns when.
func newLeader(ctx context.Context, c *haCluster, old uint64, timeout time.Duration) (time.Time, error) {
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		for _, m := range c.members {
			if m.p == nil {
				continue
			}
			sctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
			st, err := m.etcdCli.Status(sctx, m.etcd)
			cancel()
			if err == nil && st.Leader != 0 && st.Leader != old {
				return time.Now(), nil
			}
		}
		select {
		case <-ctx.Done():
			return time.Time{}, ctx.Err()
		case <-tick.C:
		}
	}
	return time.Time{}, fmt.Errorf("no new etcd leader within %v", timeout)
}

// haFailovers kills the leading member n times under the writers,
// restarting it between rounds, then checks every acknowledged write.
func haFailovers(ctx context.Context, env *Env, rs *Results, c *haCluster, n int) error {
	conn, err := client.Dial(client.Config{Server: c.addrs(), Insecure: true})
	if err != nil {
		return err
	}
	defer conn.Close()
	if err := createNamespaces(ctx, conn, haFailoverNamespace); err != nil {
		return err
	}
	w := &haWriterSet{cluster: c, cm: corev1.NewConfigMapsClient(conn), firstMsg: map[string]string{}, changed: make(chan struct{})}
	wctx, stopWriters := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for i := range haWriters {
		wg.Go(func() { w.run(wctx, i) })
	}
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			stopWriters()
			wg.Wait()
		}
	}
	defer stop()

	const timeout = 30 * time.Second
	var gaps, elections []time.Duration
	var rounds []haRound
	for r := range n {
		// Every writer writes before each kill: none is still caught by
		// the previous one.
		if err := w.waitEach(ctx, time.Now(), timeout); err != nil {
			return fmt.Errorf("before failover %d: %w", r+1, err)
		}
		lead, leadID, err := leader(ctx, c)
		if err != nil {
			return err
		}
		var onMember string
		w.mu.Lock()
		onMember = w.acks[len(w.acks)-1].member
		w.mu.Unlock()
		env.logf("ha: failover %d: SIGKILL of %s (etcd leader), the writers' client on %s", r+1, lead.name, onMember)
		t0 := time.Now()
		lead.p.Kill()
		lead.p = nil
		elected := make(chan struct{})
		var electedAt time.Time
		var electErr error
		go func() {
			defer close(elected)
			electedAt, electErr = newLeader(ctx, c, leadID, timeout)
		}()
		ack, err := w.waitAck(ctx, t0, timeout)
		<-elected
		if err != nil {
			return fmt.Errorf("failover %d: %w", r+1, err)
		}
		if electErr != nil {
			return fmt.Errorf("failover %d: %w", r+1, electErr)
		}
		round := haRound{killed: lead.name, client: onMember, t0: t0, elected: electedAt, ack: ack}
		gaps, elections = append(gaps, round.ack.end.Sub(t0)), append(elections, electedAt.Sub(t0))
		rounds = append(rounds, round)
		env.logf("ha: failover %d: %s", r+1, round.note(w))

		// The member comes back with its data and catches up: it serves
		// the last write acknowledged so far.
		if err := lead.start(ctx); err != nil {
			return err
		}
		if err := caughtUp(ctx, lead, w, timeout); err != nil {
			return fmt.Errorf("after failover %d: %w", r+1, err)
		}
	}
	stop()
	var notes []string
	for _, r := range rounds {
		notes = append(notes, r.note(w))
	}
	var msgs []string
	for code, msg := range w.firstMsg {
		msgs = append(msgs, fmt.Sprintf("%s %q", code, msg))
	}
	slices.Sort(msgs)

	// Every acknowledged write is there.
	have, err := listNames(ctx, conn, haFailoverNamespace)
	if err != nil {
		return err
	}
	var lost []string
	for _, a := range w.acks {
		if !have[a.name] {
			lost = append(lost, a.name)
		}
	}
	if len(lost) > 0 {
		return fmt.Errorf("%d of %d acknowledged writes lost: %s", len(lost), len(w.acks), strings.Join(lost[:min(len(lost), 10)], ", "))
	}
	sorted := slices.Clone(gaps)
	slices.Sort(sorted)
	rs.Add(figHAGap, ms(sorted[len(sorted)-1]), fmt.Sprintf("%d writers, one write at a time each (no deadline but a %v safety net; a failed write written again under a new name after %v), through one client given the three addresses; %d writes acknowledged, none lost (all listed after), %d calls failed (the first of each code: %s); rounds: %s",
		haWriters, haWriteTimeout, haRetryPause, len(w.acks), len(w.fails), strings.Join(msgs, ", "), strings.Join(notes, "; ")))
	rs.Add(figHAGapP50, ms(sorted[(len(sorted)-1)/2]), "the median of the rounds' gaps")
	slices.Sort(elections)
	rs.Add(figHAElection, ms(elections[len(elections)-1]), fmt.Sprintf("from the kill until a surviving member's etcd Status names a new leader (polled every 5 ms), the slowest round; etcd's election timeout is 1,000 ms; median %.0f ms", ms(elections[(len(elections)-1)/2])))
	return nil
}

// listNames lists the names of the ConfigMaps in ns, 500 at a time.
func listNames(ctx context.Context, conn *grpc.ClientConn, ns string) (map[string]bool, error) {
	cm := corev1.NewConfigMapsClient(conn)
	names := map[string]bool{}
	for cont := ""; ; {
		list, err := cm.List(ctx, &metav1.ListOptions{Namespace: ns, Limit: 500, Continue: cont})
		if err != nil {
			return nil, fmt.Errorf("listing %s: %w", ns, err)
		}
		for _, item := range list.GetItems() {
			names[item.GetMetadata().GetName()] = true
		}
		if cont = list.GetMetadata().GetContinue(); cont == "" {
			return names, nil
		}
	}
}

// caughtUp waits until m, alone, serves the last write acknowledged so far.
func caughtUp(ctx context.Context, m *haMember, w *haWriterSet, timeout time.Duration) error {
	w.mu.Lock()
	last := w.acks[len(w.acks)-1].name
	w.mu.Unlock()
	conn, err := client.Dial(client.Config{Server: m.addr, Insecure: true})
	if err != nil {
		return err
	}
	defer conn.Close()
	cm := corev1.NewConfigMapsClient(conn)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	deadline := time.Now().Add(timeout)
	for {
		_, err := cm.Get(ctx, &metav1.GetRequest{Namespace: haFailoverNamespace, Name: last})
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("member %s restarted does not serve %s: %w", m.name, last, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}
