package apiserver

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"

	"skiff.dev/internal/quantity"
)

// DefaultGCPercent is the apiserver's GOGC. Its watch cache keeps every
// object in memory, once, as its encoding: plain bytes the collector does
// not scan, so a collection costs little more with a large cache, and the
// heap's headroom is what RSS is made of. 120 (the heap grows to 2.2x
// what is live between collections) keeps RSS within 3x the etcd database
// after large lists (memory.apiserver_rss_vs_db_ratio on 2026-11-26: 2.55
// at 120, 3.02 at 150 once timestamps lost their nanoseconds and the
// database shrank by 9%); api.create_vs_etcd_ratio was the same at 120 and
// 150 within its run-to-run noise (0.73, 0.73 against 0.72, 0.68; some
// 200 us CPU per create either way). The GOGC environment variable, when
// set, wins.
const DefaultGCPercent = 120

// TuneRuntime applies the garbage collector setting of the apiserver
// process (the binary, and the benchmark that stands in for it). It
// returns the GOGC in effect.
func TuneRuntime(gcPercent int) int {
	if env := os.Getenv("GOGC"); env != "" {
		// Already applied by the runtime at start; report it unchanged.
		old := debug.SetGCPercent(100)
		debug.SetGCPercent(old)
		return old
	}
	debug.SetGCPercent(gcPercent)
	return gcPercent
}

// MemoryLimitAuto asks TuneMemory for the limit of the environment:
// GOMEMLIMIT, else the container's.
const MemoryLimitAuto = -1

// memoryLimitShare is the share of a cgroup's (a container's) memory limit
// that the apiserver takes as its Go runtime's soft memory limit; the rest
// is for what the runtime does not count: the pages of etcd's
// memory-mapped database the process touched, stacks, the runtime's own.
const memoryLimitShare = 0.9

// ParseMemoryLimit parses --memory-limit: "" is MemoryLimitAuto, "0" no
// limit, else a size in bytes as a quantity ("2Gi", "1500M").
func ParseMemoryLimit(s string) (int64, error) {
	if s == "" {
		return MemoryLimitAuto, nil
	}
	q, err := quantity.Parse(s)
	if err == nil && (q.Sign() < 0 || q.MilliValue()%1000 != 0) {
		err = errors.New("not a whole number of bytes")
	}
	if err != nil {
		return 0, fmt.Errorf("--memory-limit %q: %v; want a size such as 2Gi or 1500M, 0 for no limit, or nothing for GOMEMLIMIT or the container's limit", s, err)
	}
	return q.Value(), nil
}

// TuneMemory applies the soft memory limit of the apiserver process
// (debug.SetMemoryLimit: the garbage collector works harder as the heap
// nears it, and memory freed is returned to the system to stay under it):
// limit when not MemoryLimitAuto (0: none); else GOMEMLIMIT when set (the
// runtime applied it at start); else 90% of the memory limit of the
// process's cgroup (a container's), read from root (the file system's
// root: "/" but in tests), when it has one; else none. It returns the
// limit in effect (0: none) and where it comes from.
func TuneMemory(limit int64, root fs.FS) (int64, string) {
	switch {
	case limit > 0:
		debug.SetMemoryLimit(limit)
		return limit, "--memory-limit"
	case limit == 0:
		debug.SetMemoryLimit(math.MaxInt64)
		return 0, "--memory-limit"
	case os.Getenv("GOMEMLIMIT") != "":
		if cur := debug.SetMemoryLimit(-1); cur != math.MaxInt64 {
			return cur, "GOMEMLIMIT"
		}
		return 0, "GOMEMLIMIT"
	}
	if max, file, ok := cgroupMemoryMax(root); ok {
		limit = int64(float64(max) * memoryLimitShare)
		debug.SetMemoryLimit(limit)
		return limit, fmt.Sprintf("90%% of %s (%d)", file, max)
	}
	return 0, "none"
}

// cgroupMemoryMax is the memory limit of the process's cgroup and the
// file it is in: cgroup v2's memory.max or v1's memory.limit_in_bytes, in
// the process's own cgroup or, in a container's cgroup namespace where
// that path is not mounted, at the hierarchy's root.
func cgroupMemoryMax(root fs.FS) (int64, string, bool) {
	self, err := fs.ReadFile(root, "proc/self/cgroup")
	if err != nil {
		return 0, "", false
	}
	var files []string
	for line := range strings.Lines(string(self)) {
		// hierarchy-ID:controllers:path
		parts := strings.SplitN(strings.TrimSpace(line), ":", 3)
		if len(parts) != 3 {
			continue
		}
		dir := strings.Trim(parts[2], "/")
		switch {
		case parts[0] == "0" && parts[1] == "":
			files = append(files, path.Join("sys/fs/cgroup", dir, "memory.max"), "sys/fs/cgroup/memory.max")
		case slices.Contains(strings.Split(parts[1], ","), "memory"):
			files = append(files, path.Join("sys/fs/cgroup/memory", dir, "memory.limit_in_bytes"), "sys/fs/cgroup/memory/memory.limit_in_bytes")
		}
	}
	for _, f := range files {
		b, err := fs.ReadFile(root, f)
		if err != nil {
			continue
		}
		v := strings.TrimSpace(string(b))
		n, err := strconv.ParseInt(v, 10, 64)
		if v == "max" || err != nil || n <= 0 || n >= 1<<62 {
			return 0, "", false // unlimited (v1 says so with a huge number)
		}
		return n, "/" + f, true
	}
	return 0, "", false
}
