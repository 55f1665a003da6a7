package scenarios

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"

	"skiff.dev/bench/proc"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/apiserver/flowcontrol"
)

// The flood of large Lists (issue 16): on an apiserver with the command's
// default flow control, user victim's small Lists alone and while user
// flooder Lists 500 of 1,000 ConfigMaps with 128 goroutines, in the same
// run. The flooder and the victim are processes of their own
// (skiff-flooder), as clients are: they run on the same CPUs, but through
// the kernel's scheduler, not the apiserver's Go scheduler (the victim's
// client in the benchmark's process waited for the apiserver's busy Ps
// where a client would not, and had them free while the floors' loads
// ran: the floors were understated, 3.4-4.9 where the flood measured
// 7.7-8.6); the flooder reads each answer's bytes without decoding them.
var (
	figFloodListsRatio = Figure{Name: "fairness.flood_victim_p99_ratio", Unit: "ratio", Target: AtMost(3)}
	figFloodListsAlone = Figure{Name: "fairness.flood_victim_p99_alone_ms", Unit: "ms"}
	figFloodListsFlood = Figure{Name: "fairness.flood_victim_p99_flood_ms", Unit: "ms"}
	figFloodListsRate  = Figure{Name: "fairness.flood_lists_per_s", Unit: "lists/s"}
	// The floor: the victim's p99 while another process uses as much CPU
	// as the flood did, calling nobody / alone. No flow control in the
	// apiserver can do better than this on the same CPUs.
	figFloodCPUFloor = Figure{Name: "fairness.flood_cpu_floor_ratio", Unit: "ratio"}
	// The traffic floor: the victim's p99 while another process sends
	// itself the flood's bytes a second over TLS on the loopback
	// interface, calling nobody / alone. The flood's answers cross the
	// kernel's TCP as these do (its softirqs on the same two CPUs), which
	// a process that only spins does not.
	figFloodTrafficFloor = Figure{Name: "fairness.flood_traffic_floor_ratio", Unit: "ratio"}
)

const (
	floodListCallers = 128
	floodListObjects = 1000
	floodListLimit   = 500
	floodListNS      = "fairness-lists"
	floodSmallNS     = "fairness-small"
	floodSmallCount  = 10 // the victim's namespace
)

func fairnessFloodScenario() *Scenario {
	return &Scenario{
		Name: "fairness.flood",
		Summary: fmt.Sprintf("on an apiserver of its own with the default flow control, user victim's Lists of %d ConfigMaps (one at a time, at most one per %v) alone, then while user flooder Lists %d of %d ConfigMaps with %d goroutines",
			floodSmallCount, fairVictimInterval, floodListLimit, floodListObjects, floodListCallers),
		Figures: []Figure{figFloodListsRatio, figFloodListsAlone, figFloodListsFlood, figFloodListsRate, figFloodCPUFloor, figFloodTrafficFloor},
		Run:     runFairnessFlood,
	}
}

func runFairnessFlood(ctx context.Context, env *Env, rs *Results) error {
	cfg := env.Config
	fc := flowcontrol.DefaultOptions()
	f, err := startFairServer(env, fc)
	if err != nil {
		return err
	}
	defer f.stop()

	setupConn, err := f.dialAs("setup")
	if err != nil {
		return err
	}
	defer setupConn.Close()
	setup := corev1.NewConfigMapsClient(setupConn)
	data := payload(1024)
	if err := createMany(ctx, setup, floodListNS, "l-", floodListObjects, data); err != nil {
		return err
	}
	if err := createMany(ctx, setup, floodSmallNS, "s-", floodSmallCount, data); err != nil {
		return err
	}
	vp, err := startFloodProcess(ctx, env, f, "victim", "-victim-namespace", floodSmallNS,
		"-victim-items", strconv.Itoa(floodSmallCount), "-victim-interval", fairVictimInterval.String())
	if err != nil {
		return err
	}
	defer vp.close()
	victim := victimProcess{vp}
	fl, err := startFloodProcess(ctx, env, f, "flooder", "-callers", strconv.Itoa(floodListCallers), "-conns", strconv.Itoa(fairFloodConn),
		"-namespace", floodListNS, "-limit", strconv.Itoa(floodListLimit))
	if err != nil {
		return err
	}
	defer fl.close()

	part := cfg.Duration / 2 / fairRounds
	env.logf("fairness.flood: %d rounds of the victim alone for %v, then with %d goroutines of the flooder listing %d of %d ConfigMaps for %v",
		fairRounds, part, floodListCallers, floodListLimit, floodListObjects, part)
	alone, flooded, floodCPU, err := alternate(ctx, victim, fl, fairRounds, part, cfg.Warmup)
	if err != nil {
		return err
	}
	served, refused, elapsed := fl.served, fl.refused, fl.elapsed
	p99Alone, p99Flood := alone.latency.Percentile(99), flooded.latency.Percentile(99)
	rs.Add(figFloodListsRatio, float64(p99Flood)/float64(p99Alone),
		fmt.Sprintf("victim's List p99 during the flood / alone, same server, %d alternating rounds; %d read-only seats (the default on %d CPUs), a List of %d takes %d",
			fairRounds, fc.MaxRequestsInflight, fc.MaxRequestsInflight/flowcontrol.ReadSeatsPerCPU, floodListLimit, floodListLimit/100))
	rs.Add(figFloodListsAlone, ms(p99Alone), latencyNote(&alone.latency, "Lists"))
	rs.Add(figFloodListsFlood, ms(p99Flood), latencyNote(&flooded.latency, "Lists"))
	cpuNote := ""
	if served > 0 {
		cpuNote = fmt.Sprintf("; CPU of both processes (apiserver, etcd and victim; flooder) %.0f µs per List served", float64(floodCPU.Microseconds())/float64(served))
	}
	rs.Add(figFloodListsRate, float64(served)/elapsed.Seconds(),
		fmt.Sprintf("%d Lists of %d served to the flooder in %.1fs of flood, %d refusals (ResourceExhausted, each followed by the client's wait of the retry hint)%s",
			served, floodListLimit, elapsed.Seconds(), refused, cpuNote))

	// The floor, in the same run: as much CPU used by another process.
	cores := min(float64(runtime.NumCPU()), floodCPU.Seconds()/elapsed.Seconds())
	spin, err := startFloodProcess(ctx, env, f, "flooder", "-spin-cores", strconv.FormatFloat(cores, 'f', 2, 64))
	if err != nil {
		return err
	}
	defer spin.close()
	env.logf("fairness.flood: the CPU floor: %d rounds of the victim alone, then while another process keeps %.2f CPUs busy", fairRounds, cores)
	floorAlone, floorLoaded, _, err := alternate(ctx, victim, spin, fairRounds, part, cfg.Warmup)
	if err != nil {
		return err
	}
	rs.Add(figFloodCPUFloor, float64(floorLoaded.latency.Percentile(99))/float64(floorAlone.latency.Percentile(99)),
		fmt.Sprintf("victim's List p99 while another process keeps %.2f CPUs busy (the flood's two processes' CPU), calling nobody, %.2f ms / alone %.2f ms: no apiserver does better on these CPUs without CPU priorities",
			cores, ms(floorLoaded.latency.Percentile(99)), ms(floorAlone.latency.Percentile(99))))

	// The traffic floor, in the same run: the flood's bytes a second.
	page, err := setup.List(ctx, &metav1.ListOptions{Namespace: floodListNS, Limit: floodListLimit})
	if err != nil {
		return err
	}
	answer := proto.Size(page)
	rate := float64(served) / elapsed.Seconds() * float64(answer)
	stream, err := startFloodProcess(ctx, env, f, "flooder", "-stream-bytes-per-s", strconv.FormatFloat(rate, 'f', 0, 64),
		"-stream-message", strconv.Itoa(answer), "-conns", strconv.Itoa(fairFloodConn))
	if err != nil {
		return err
	}
	defer stream.close()
	env.logf("fairness.flood: the traffic floor: %d rounds of the victim alone, then while another process sends itself %.0f MB/s over TLS", fairRounds, rate/1e6)
	trafficAlone, trafficLoaded, trafficCPU, err := alternate(ctx, victim, stream, fairRounds, part, cfg.Warmup)
	if err != nil {
		return err
	}
	sent := float64(stream.served) * float64(answer) / stream.elapsed.Seconds()
	rs.Add(figFloodTrafficFloor, float64(trafficLoaded.latency.Percentile(99))/float64(trafficAlone.latency.Percentile(99)),
		fmt.Sprintf("victim's List p99 while another process sends itself %.0f MB/s over %d TLS connections on the loopback interface (the flood's %.0f: its Lists a second times %d bytes an answer) in messages of an answer's size, calling nobody, %.2f ms / alone %.2f ms; CPU of that load %.2f CPUs (the flood's %.2f)",
			sent/1e6, fairFloodConn, rate/1e6, answer, ms(trafficLoaded.latency.Percentile(99)), ms(trafficAlone.latency.Percentile(99)),
			trafficCPU.Seconds()/stream.elapsed.Seconds(), cores))
	return nil
}

const flooderPkg = "skiff.dev/bench/cmd/skiff-flooder"

// floodProcess is skiff-flooder, started and stopped for each flood
// window through its standard input.
type floodProcess struct {
	dir     string
	cmd     *exec.Cmd
	in      io.WriteCloser
	out     *bufio.Scanner
	stderr  bytes.Buffer
	started time.Time
	cpu     time.Duration // its CPU when last stopped

	served, refused int64         // over all windows
	elapsed         time.Duration // flooding, over all windows
	last            string        // the last stop line
}

// victimProcess is the victim as a process of its own (skiff-flooder
// -victim-namespace), as a client is: its Lists do not wait for the
// apiserver's Go scheduler on the client's side, as they would in the
// benchmark's process.
type victimProcess struct{ *floodProcess }

// window runs the victim for warmup, then part, and returns the Lists
// that began in part.
func (v victimProcess) window(ctx context.Context, warmup, part time.Duration) (*loadResult, error) {
	if err := v.start(ctx); err != nil {
		return nil, err
	}
	t := time.NewTimer(warmup + part)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
	cpu, err := v.stop()
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	res := &loadResult{elapsed: part, cpu: cpu}
	_, lists, _ := strings.Cut(v.last, " lists=")
	for l := range strings.SplitSeq(lists, ",") {
		at, took, ok := strings.Cut(l, ":")
		a, errA := strconv.ParseInt(at, 10, 64)
		d, errD := strconv.ParseInt(took, 10, 64)
		if !ok || errA != nil || errD != nil {
			return nil, fmt.Errorf("skiff-flooder's victim: List %q of its stop line: want <began µs>:<took µs>", l)
		}
		if began := time.Duration(a) * time.Microsecond; began >= warmup && began < warmup+part {
			res.ops++
			res.latency.Record(time.Duration(d) * time.Microsecond)
		}
	}
	if res.ops == 0 {
		return nil, fmt.Errorf("skiff-flooder's victim: no List began in its %v window", part)
	}
	return res, nil
}

// startFloodProcess builds and starts skiff-flooder as user of f, with
// args.
func startFloodProcess(ctx context.Context, env *Env, f *fairServer, user string, args ...string) (*floodProcess, error) {
	dir, err := os.MkdirTemp("", "skiff-bench-flooder-")
	if err != nil {
		return nil, err
	}
	fl := &floodProcess{dir: dir}
	if err := fl.begin(ctx, env, f, user, args); err != nil {
		fl.close()
		return nil, err
	}
	return fl, nil
}

func (fl *floodProcess) begin(ctx context.Context, env *Env, f *fairServer, user string, args []string) error {
	env.logf("fairness.flood: building %s", flooderPkg)
	bin, err := proc.Build(ctx, fl.dir, flooderPkg)
	if err != nil {
		return err
	}
	cfg, err := f.srv.Security.Config(user)
	if err != nil {
		return err
	}
	files := map[string][]byte{"ca.crt": cfg.CAData, "user.crt": cfg.CertData, "user.key": cfg.KeyData}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(fl.dir, name), data, 0o600); err != nil {
			return err
		}
	}
	fl.cmd = exec.Command(bin, append([]string{"-server", cfg.Server,
		"-tls-ca-file", filepath.Join(fl.dir, "ca.crt"), "-tls-cert-file", filepath.Join(fl.dir, "user.crt"), "-tls-key-file", filepath.Join(fl.dir, "user.key")},
		args...)...)
	fl.cmd.Stderr = &fl.stderr
	if fl.in, err = fl.cmd.StdinPipe(); err != nil {
		return err
	}
	out, err := fl.cmd.StdoutPipe()
	if err != nil {
		return err
	}
	fl.out = bufio.NewScanner(out)
	fl.out.Buffer(nil, 16<<20) // a victim's stop line has every List of its window
	return fl.cmd.Start()
}

func (fl *floodProcess) start(context.Context) error {
	fl.started = time.Now()
	_, err := io.WriteString(fl.in, "start\n")
	return fl.failed(err)
}

// stop ends the flood window and takes the flooder's counts and CPU.
func (fl *floodProcess) stop() (time.Duration, error) {
	fl.elapsed += time.Since(fl.started)
	if _, err := io.WriteString(fl.in, "stop\n"); err != nil {
		return 0, fl.failed(err)
	}
	if !fl.out.Scan() {
		return 0, fl.failed(fmt.Errorf("no answer to stop: %v", fl.out.Err()))
	}
	var cpuNS int64
	fl.last = fl.out.Text()
	if _, err := fmt.Sscanf(fl.last, "stopped served=%d refused=%d cpu_ns=%d", &fl.served, &fl.refused, &cpuNS); err != nil {
		return 0, fmt.Errorf("skiff-flooder's answer %q: %w", fl.out.Text(), err)
	}
	used := time.Duration(cpuNS) - fl.cpu
	fl.cpu = time.Duration(cpuNS)
	return used, nil
}

// failed adds what the flooder wrote to its stderr to err.
func (fl *floodProcess) failed(err error) error {
	if err == nil {
		return nil
	}
	_ = fl.cmd.Wait()
	return fmt.Errorf("skiff-flooder: %w: %s", err, bytes.TrimSpace(fl.stderr.Bytes()))
}

// close ends the flooder (end of its input) and removes its files.
func (fl *floodProcess) close() {
	if fl.cmd != nil && fl.cmd.Process != nil {
		_ = fl.in.Close()
		done := make(chan struct{})
		go func() { _ = fl.cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = fl.cmd.Process.Kill()
			<-done
		}
	}
	os.RemoveAll(fl.dir)
}
