package main

import (
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
)

// held keeps what alloc allocated reachable, so the garbage collector
// never returns it.
var held [][]byte

// allocTool is "alloc SIZE": it allocates SIZE bytes ("64Mi", "1Gi",
// "4096") a MiB at a time, writing every page so that the memory is
// really used (and charged to the container's cgroup), says so, and then
// waits for SIGTERM: memory limit and OOMKilled tests.
func allocTool(args []string, stdout, stderr io.Writer) int {
	if len(args) != 1 {
		fmt.Fprintln(stderr, "usage: alloc SIZE (bytes, or with Ki, Mi, Gi)")
		return 2
	}
	size, err := parseSize(args[0])
	if err != nil {
		fmt.Fprintln(stderr, "alloc:", err)
		return 2
	}
	const chunk, page = 1 << 20, 4096
	for n := int64(0); n < size; n += chunk {
		b := make([]byte, min(chunk, size-n))
		for i := 0; i < len(b); i += page {
			b[i] = 1
		}
		held = append(held, b)
	}
	fmt.Fprintf(stdout, "allocated %d bytes\n", size)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	<-sig
	return 0
}

func parseSize(s string) (int64, error) {
	mult := int64(1)
	for suffix, m := range map[string]int64{"Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30} {
		if v, ok := strings.CutSuffix(s, suffix); ok {
			s, mult = v, m
			break
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("bad size %q", s)
	}
	return n * mult, nil
}
