package scenarios

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc"

	"skiff.dev/bench/proc"
	"skiff.dev/internal/client"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
)

// The memory figure: the apiserver's resident memory after large lists,
// against the size of the etcd database it serves them from. The scenario
// runs the skiff-apiserver binary as a process of its own (built with the
// go command), so that its RSS is the apiserver's and its embedded etcd's
// alone, not the benchmark's clients'.
var figMemRatio = Figure{Name: "memory.apiserver_rss_vs_db_ratio", Unit: "ratio", Target: AtMost(3)}

const (
	memoryNamespace = "memory-bench"
	apiserverPkg    = "skiff.dev/services/apiserver/cmd/skiff-apiserver"
)

func memoryScenario() *Scenario {
	return &Scenario{
		Name: "memory",
		Summary: "on a skiff-apiserver process of its own (--insecure, -memory-limit's --memory-limit, defaults otherwise), 65,000 ConfigMaps of 1 KiB created, then 50 Lists of 10,000 (limit 10000, following continue); " +
			"the process's RSS after them / the etcd database size",
		Figures: []Figure{figMemRatio},
		Run:     runMemory,
	}
}

func runMemory(ctx context.Context, env *Env, rs *Results) error {
	cfg := env.Config
	if cfg.MemoryObjects <= 0 || cfg.MemoryLists <= 0 || cfg.MemoryListLimit <= 0 {
		return fmt.Errorf("nothing to measure: %d objects, %d lists of %d", cfg.MemoryObjects, cfg.MemoryLists, cfg.MemoryListLimit)
	}
	dir, err := os.MkdirTemp("", "skiff-bench-memory-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	env.logf("memory: building %s", apiserverPkg)
	bin, err := proc.Build(ctx, dir, apiserverPkg)
	if err != nil {
		return err
	}
	args := []string{"--insecure", "--data-dir", filepath.Join(dir, "data"), "--listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0"}
	if cfg.MemoryLimit != "" {
		args = append(args, "--memory-limit", cfg.MemoryLimit)
	}
	p, err := proc.Start(nil, bin, args...)
	if err != nil {
		return err
	}
	defer p.Stop()
	_, serving, err := p.WaitLog(ctx, "apiserver serving", time.Minute)
	if err != nil {
		return err
	}
	var addrs struct{ GRPC, Metrics string }
	if err := json.Unmarshal(serving, &addrs); err != nil {
		return fmt.Errorf("the apiserver's \"apiserver serving\" line: %w", err)
	}
	limit, err := memoryLimit(ctx, p)
	if err != nil {
		return err
	}
	env.logf("memory: apiserver pid %d on %s, memory limit %s", p.Pid(), addrs.GRPC, limit)

	// A list of 10,000 1 KiB objects is some 11 MB: past gRPC's default
	// 4 MB a client receives.
	conn, err := client.Dial(client.Config{Server: addrs.GRPC, Insecure: true},
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(256<<20)))
	if err != nil {
		return err
	}
	defer conn.Close()
	if _, err := client.Namespaces(conn).Create(ctx, &corev1.Namespace{Metadata: &metav1.ObjectMeta{Name: memoryNamespace}}); err != nil {
		return fmt.Errorf("creating namespace %s: %w", memoryNamespace, err)
	}
	cm := corev1.NewConfigMapsClient(conn)
	env.logf("memory: creating %d ConfigMaps of 1 KiB", cfg.MemoryObjects)
	start := time.Now()
	if err := createMany(ctx, cm, memoryNamespace, "m-", cfg.MemoryObjects, payload(1024)); err != nil {
		return err
	}
	created := time.Since(start)
	rssCreated, err := p.Status("VmRSS")
	if err != nil {
		return err
	}

	env.logf("memory: %d lists of %d", cfg.MemoryLists, cfg.MemoryListLimit)
	start = time.Now()
	cont := ""
	items, pos := 0, 0 // pos: objects before this page
	for range cfg.MemoryLists {
		list, err := cm.List(ctx, &metav1.ListOptions{Namespace: memoryNamespace, Limit: int64(cfg.MemoryListLimit), Continue: cont})
		if err != nil {
			return fmt.Errorf("listing %s (limit %d): %w", memoryNamespace, cfg.MemoryListLimit, err)
		}
		want := min(cfg.MemoryListLimit, cfg.MemoryObjects-pos)
		cont = list.GetMetadata().GetContinue() // "" at the end: start again
		if n := len(list.GetItems()); n != want || (cont == "") != (pos+n == cfg.MemoryObjects) {
			return fmt.Errorf("list of %s from object %d returned %d items and continue %q, want %d items of %d objects", memoryNamespace, pos, n, cont, want, cfg.MemoryObjects)
		}
		items += want
		if pos += want; cont == "" {
			pos = 0
		}
	}
	listed := time.Since(start)
	rssListed, err := p.Status("VmRSS")
	if err != nil {
		return err
	}
	peak, err := p.Status("VmHWM")
	if err != nil {
		return err
	}
	db, err := metric(addrs.Metrics, "etcd_mvcc_db_total_size_in_bytes")
	if err != nil {
		return err
	}
	if db <= 0 {
		return fmt.Errorf("etcd_mvcc_db_total_size_in_bytes = %v", db)
	}
	rs.Add(figMemRatio, float64(rssListed)/db,
		fmt.Sprintf("RSS %.0f MiB after the lists (%.0f MiB after the creates, peak %.0f MiB) / etcd db %.1f MiB; %d creates in %.1fs, %d lists (%d items) in %.1fs; memory limit %s",
			mib(rssListed), mib(rssCreated), mib(peak), db/(1<<20), cfg.MemoryObjects, created.Seconds(), cfg.MemoryLists, items, listed.Seconds(), limit))
	return nil
}

func mib[N int64 | float64](n N) float64 { return float64(n) / (1 << 20) }

// memoryLimit is the memory limit the apiserver logged at start.
func memoryLimit(ctx context.Context, p *proc.Process) (string, error) {
	_, line, err := p.WaitLog(ctx, "runtime", time.Minute)
	if err != nil {
		return "", err
	}
	var rt struct {
		MemoryLimitBytes int64
		MemoryLimitFrom  string
	}
	if err := json.Unmarshal(line, &rt); err != nil || rt.MemoryLimitFrom == "" {
		return "", fmt.Errorf("the apiserver's \"runtime\" line %s: no memoryLimitFrom (%v)", line, err)
	}
	switch {
	case rt.MemoryLimitFrom == "none":
		return "none", nil
	case rt.MemoryLimitBytes == 0:
		return "none (" + rt.MemoryLimitFrom + ")", nil
	}
	return fmt.Sprintf("%.0f MiB (%s)", mib(rt.MemoryLimitBytes), rt.MemoryLimitFrom), nil
}

// metric reads the value of an unlabelled metric from the /metrics at addr.
func metric(addr, name string) (float64, error) {
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	lines := bufio.NewScanner(resp.Body)
	lines.Buffer(nil, 1<<20)
	for lines.Scan() {
		if rest, ok := strings.CutPrefix(lines.Text(), name+" "); ok {
			return strconv.ParseFloat(strings.TrimSpace(rest), 64)
		}
	}
	if err := lines.Err(); err != nil {
		return 0, err
	}
	return 0, errors.New("/metrics has no " + name)
}
