// Command skiff-chaos runs Skiff's chaos suite (make chaos): the real
// binaries on simulated nodes, put through SIGKILLs, a paused agent, a
// node that stays away and is deleted, a forced compaction and an
// apiserver killed during writes, with invariants checked every 100 ms.
// It prints the figures and every violation, and exits 1 on any.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"skiff.dev/bench/chaos"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("skiff-chaos", flag.ContinueOnError)
	fs.SetOutput(stderr)
	short := fs.Bool("short", false, "the short form (CI): 30 replicas, maxSurge 3, 300 writes")
	runs := fs.Int("runs", 1, "run the suite this many times in a row, each on a fresh cluster; fails if any run fails")
	logFile := fs.String("log-file", "", "where the programs' log lines go (default: a new file in the temporary directory)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	cfg := chaos.DefaultConfig()
	if *short {
		cfg = chaos.ShortConfig()
	}
	cfg.Progress = stderr
	if *logFile == "" {
		*logFile = fmt.Sprintf("%s/skiff-chaos-%s.log", os.TempDir(), time.Now().Format("20060102-150405"))
	}
	logs, err := os.Create(*logFile)
	if err != nil {
		fmt.Fprintln(stderr, "skiff-chaos:", err)
		return 1
	}
	defer logs.Close()
	fmt.Fprintf(stderr, "skiff-chaos: the programs' logs go to %s\n", *logFile)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	failed := 0
	for i := 1; i <= *runs; i++ {
		t0 := time.Now()
		fmt.Fprintf(stdout, "== chaos run %d of %d (%d replicas, maxSurge %d, maxUnavailable %d, %d nodes, %d writes)\n",
			i, *runs, cfg.Replicas, cfg.MaxSurge, cfg.MaxUnavailable, cfg.Nodes, cfg.Writes)
		rep, err := chaos.Run(ctx, cfg, logs)
		if err != nil {
			fmt.Fprintln(stderr, "skiff-chaos: the cluster could not be run:", err)
			return 1
		}
		rep.Write(stdout)
		verdict := "PASS"
		if rep.Failed() {
			verdict = "FAIL"
			failed++
		}
		fmt.Fprintf(stdout, "== chaos run %d: %s in %.0f s\n", i, verdict, time.Since(t0).Seconds())
	}
	if failed > 0 {
		fmt.Fprintf(stdout, "skiff-chaos: %d of %d runs FAILED (the programs' logs: %s)\n", failed, *runs, *logFile)
		return 1
	}
	return 0
}
