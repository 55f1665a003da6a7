package apiserver

import (
	"os"
	"runtime/debug"
)

// DefaultGCPercent is the apiserver's GOGC. Its watch cache keeps every
// object in memory, so the live heap is large and Go's default (100) spends
// a large share of the CPU re-marking it; 200 halves that for twice the
// heap headroom. The GOGC environment variable, when set, wins.
const DefaultGCPercent = 200

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
