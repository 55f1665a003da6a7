package flowcontrol

import (
	"flag"
	"fmt"
	"math"
	"time"
)

// Options are the flow-control flags of skiff-apiserver. The zero value is
// off (no limit); the command's defaults turn it on.
type Options struct {
	// MaxRequestsInflight is the read-only seats of each priority level;
	// 0 leaves read-only requests unlimited.
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

// Defaults of the command's flags.
const (
	DefaultMaxRequestsInflight         = 400
	DefaultMaxMutatingRequestsInflight = 200
	DefaultQueueLength                 = 50
	DefaultMaxWait                     = 15 * time.Second
)

// AddFlags registers the options' flags on fs, with the defaults that turn
// flow control on.
func (o *Options) AddFlags(fs *flag.FlagSet) {
	fs.IntVar(&o.MaxRequestsInflight, "max-requests-inflight", DefaultMaxRequestsInflight,
		"read-only requests (get, list, watch establishment, discovery) executing at once in each priority level (system: node agents, scheduler, controller-manager; workload: everyone else); 0 = no limit on them")
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
