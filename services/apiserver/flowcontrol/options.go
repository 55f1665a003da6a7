package flowcontrol

import (
	"flag"
	"fmt"
	"math"
	"runtime"
	"time"
)

// Options are the flow-control flags of skiff-apiserver. The zero value is
// off (no limit); the command's defaults turn it on.
type Options struct {
	// MaxRequestsInflight is the read-only seats of each priority level
	// (a List of many objects takes several); 0 leaves read-only requests
	// unlimited.
	MaxRequestsInflight int
	// MaxMutatingRequestsInflight is the mutating seats of each priority
	// level; 0 leaves mutating requests unlimited.
	MaxMutatingRequestsInflight int
	// QueueLength bounds each user's queue (0: DefaultQueueLength).
	QueueLength int
	// MaxWait bounds the time a request waits for a seat (0: DefaultMaxWait).
	MaxWait time.Duration
	// UserQPS, when positive, is each workload user's request rate (a
	// token bucket of UserBurst, default one second's worth); 0: no rate.
	UserQPS   float64
	UserBurst int
}

// Defaults of the command's flags. The read-only seats are sized to the
// machine (DefaultMaxRequestsInflight); the mutating seats are
// Kubernetes' default, which the scheduler's binds and the ReplicaSet
// controller's creations in flight (128 each, one user each) fit in.
//
// A user's queue holds what one flow may queue in Kubernetes' default
// priority levels (global-default, workload-low): a hand of 6 queues of
// 50 requests each. With 50, a client of 128 concurrent Lists had 77 of
// them refused at once; they all came back a second later (the retry
// hint) together, a burst of work that took the CPU from the other users
// every second, and was refused again.
const (
	DefaultMaxMutatingRequestsInflight = 200
	DefaultQueueLength                 = 6 * 50
	DefaultMaxWait                     = 15 * time.Second
)

// ReadSeatsPerCPU is the default read-only seats of a priority level per
// CPU the process may use.
const ReadSeatsPerCPU = 4

// DefaultMaxRequestsInflight is --max-requests-inflight's default:
// ReadSeatsPerCPU per CPU the process may use (GOMAXPROCS), 8 on 2 cores.
// Read-only requests are mostly CPU (the watch cache, decoding,
// encoding): a few per core keep the cores busy, and more only share them
// out thinner. With Kubernetes' 400 a 2-core server never queued: one
// user's 128 concurrent Lists of 500 objects ran together, and another
// user's small List waited for the CPU behind them (p99 from 9 ms to
// 814 ms). With 8 seats, and 5 for a List of 500, one user runs one such
// List at a time, and the others' requests find seats free.
func DefaultMaxRequestsInflight() int { return ReadSeatsPerCPU * runtime.GOMAXPROCS(0) }

// AddFlags registers the options' flags on fs, with the defaults that turn
// flow control on.
func (o *Options) AddFlags(fs *flag.FlagSet) {
	fs.IntVar(&o.MaxRequestsInflight, "max-requests-inflight", DefaultMaxRequestsInflight(),
		fmt.Sprintf("read-only seats of each priority level (system: node agents, scheduler, controller-manager; workload: everyone else), held by executing read-only requests (get, list, watch establishment, discovery): one each, a list one per %d objects it reads (1 to %d, and no more than one user may hold: all seats but a quarter); default %d per CPU (GOMAXPROCS); 0 = no limit on them", objectsPerSeat, maxSeats, ReadSeatsPerCPU))
	fs.IntVar(&o.MaxMutatingRequestsInflight, "max-mutating-requests-inflight", DefaultMaxMutatingRequestsInflight,
		"mutating requests (create, update, delete) executing at once in each priority level; 0 = no limit on them (both limits 0 turns flow control off)")
	fs.IntVar(&o.QueueLength, "flowcontrol-queue-length", DefaultQueueLength,
		"requests of one user that may wait for a seat in one priority level; more are refused with ResourceExhausted and a retry hint")
	fs.DurationVar(&o.MaxWait, "flowcontrol-max-wait", DefaultMaxWait,
		"longest a request waits in its queue for a seat (or less, when its deadline is nearer) before it is refused with ResourceExhausted")
	fs.Float64Var(&o.UserQPS, "flowcontrol-user-qps", 0,
		"requests per second of each user of priority level workload (not the node agents, scheduler or controller-manager): past it a request waits for its turn, holding no seat, or is refused with ResourceExhausted when the wait would exceed --flowcontrol-max-wait; keeps one user's flood of short requests from taking a small machine's CPU from the others (0 = no rate)")
	fs.IntVar(&o.UserBurst, "flowcontrol-user-burst", 0,
		"requests a user of priority level workload may send at once above --flowcontrol-user-qps (0: one second's worth)")
}

// DefaultOptions are the options of skiff-apiserver without flags: its
// flags' defaults, from AddFlags.
func DefaultOptions() Options {
	var o Options
	fs := flag.NewFlagSet("skiff-apiserver", flag.PanicOnError)
	o.AddFlags(fs)
	_ = fs.Parse(nil)
	return o
}

// Enabled says whether any limit is set.
func (o Options) Enabled() bool {
	return o.MaxRequestsInflight > 0 || o.MaxMutatingRequestsInflight > 0 || o.UserQPS > 0
}

// Validate checks the options, naming the flag at fault.
func (o Options) Validate() error {
	switch {
	case o.MaxRequestsInflight < 0:
		return fmt.Errorf("--max-requests-inflight=%d: must be 0 (no limit) or more", o.MaxRequestsInflight)
	case o.MaxMutatingRequestsInflight < 0:
		return fmt.Errorf("--max-mutating-requests-inflight=%d: must be 0 (no limit) or more", o.MaxMutatingRequestsInflight)
	case o.QueueLength < 0:
		return fmt.Errorf("--flowcontrol-queue-length=%d: must be 0 (the default, %d) or more", o.QueueLength, DefaultQueueLength)
	case o.MaxWait < 0:
		return fmt.Errorf("--flowcontrol-max-wait=%v: must not be negative", o.MaxWait)
	case o.UserQPS < 0 || math.IsNaN(o.UserQPS) || math.IsInf(o.UserQPS, 0):
		return fmt.Errorf("--flowcontrol-user-qps=%v: must be 0 (no rate) or a positive number", o.UserQPS)
	case o.UserBurst < 0:
		return fmt.Errorf("--flowcontrol-user-burst=%d: must be 0 (one second's worth) or more", o.UserBurst)
	}
	return nil
}

func (o Options) withDefaults() Options {
	if o.QueueLength == 0 {
		o.QueueLength = DefaultQueueLength
	}
	if o.MaxWait == 0 {
		o.MaxWait = DefaultMaxWait
	}
	return o
}
