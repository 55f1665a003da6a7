package leaderelection

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"google.golang.org/grpc"

	"skiff.dev/internal/workqueue"
	coordinationv1 "skiff.dev/proto/coordination/v1"
)

// LeaseClient is what an elector needs of the Leases API;
// *client.Resource[*coordinationv1.Lease, *coordinationv1.LeaseList]
// (client.Leases(conn)) satisfies it.
type LeaseClient interface {
	Get(ctx context.Context, namespace, name string, opts ...grpc.CallOption) (*coordinationv1.Lease, error)
	Create(ctx context.Context, lease *coordinationv1.Lease, opts ...grpc.CallOption) (*coordinationv1.Lease, error)
	Update(ctx context.Context, lease *coordinationv1.Lease, opts ...grpc.CallOption) (*coordinationv1.Lease, error)
}

// LeaseLock names the Lease the candidates compete for.
type LeaseLock struct {
	Namespace string // e.g. "kube-system"
	Name      string // e.g. "skiff-controller-manager"
}

func (l LeaseLock) String() string { return l.Namespace + "/" + l.Name }

// ErrInvalidConfig is returned by Run for a config it cannot use; the
// message names every bad field.
var ErrInvalidConfig = errors.New("leaderelection: invalid config")

// Defaults for zero durations, as in Kubernetes' components.
const (
	DefaultLeaseDuration = 15 * time.Second
	DefaultRenewDeadline = 10 * time.Second
	DefaultRetryPeriod   = 2 * time.Second
)

// DefaultIdentity is the identity of a candidate given none: the host's
// name ("" when the system cannot tell it). It stays the same when the
// process restarts on its host, so the restarted process finds the Lease
// its previous run held as its own and leads at once. Two candidates
// running under one identity would both lead: run at most one member per
// host, or give each its own identity.
func DefaultIdentity() string {
	host, _ := os.Hostname()
	return host
}

// Config configures Run.
type Config struct {
	Lock LeaseLock
	// Identity names this member in the Lease. It must be unique among the
	// candidates and stable across restarts of the same member (the host
	// name, DefaultIdentity, is both when one member runs per host): a
	// candidate that finds the Lease held by its own identity takes it as
	// its own at once, as a restart of the same member, so two processes
	// sharing an identity would both lead.
	Identity string
	Client   LeaseClient

	// LeaseDuration is how long standbys wait, after they last saw the Lease
	// change, before taking it over. It is written to the Lease in whole
	// seconds (rounded up), so it must be at least one second.
	LeaseDuration time.Duration
	// RenewDeadline is how long after its last successful renewal the leader
	// keeps working without another success; then it stops at once.
	RenewDeadline time.Duration
	// RetryPeriod is the interval between attempts to acquire or renew.
	RetryPeriod time.Duration

	Clock      workqueue.Clock       // nil: the real clock
	Logger     *zap.Logger           // nil: no logs
	Registerer prometheus.Registerer // nil: metrics not registered
}

// withDefaults returns c with zero fields defaulted.
func (c Config) withDefaults() Config {
	if c.LeaseDuration == 0 {
		c.LeaseDuration = DefaultLeaseDuration
	}
	if c.RenewDeadline == 0 {
		c.RenewDeadline = DefaultRenewDeadline
	}
	if c.RetryPeriod == 0 {
		c.RetryPeriod = DefaultRetryPeriod
	}
	if c.Clock == nil {
		c.Clock = workqueue.RealClock()
	}
	if c.Logger == nil {
		c.Logger = zap.NewNop()
	}
	return c
}

// validate reports every bad field of a defaulted config.
func (c Config) validate() error {
	var errs []string
	bad := func(format string, args ...any) { errs = append(errs, fmt.Sprintf(format, args...)) }
	if c.Lock.Namespace == "" {
		bad("Lock.Namespace: required")
	}
	if c.Lock.Name == "" {
		bad("Lock.Name: required")
	}
	if c.Identity == "" {
		bad("Identity: required")
	}
	if c.Client == nil {
		bad("Client: required")
	}
	if c.LeaseDuration < time.Second {
		bad("LeaseDuration: %v is less than 1s (the Lease stores whole seconds)", c.LeaseDuration)
	}
	if c.RenewDeadline <= 0 {
		bad("RenewDeadline: %v must be positive", c.RenewDeadline)
	}
	if c.RetryPeriod <= 0 {
		bad("RetryPeriod: %v must be positive", c.RetryPeriod)
	}
	if c.RenewDeadline >= c.LeaseDuration {
		bad("RenewDeadline: %v must be less than LeaseDuration (%v)", c.RenewDeadline, c.LeaseDuration)
	}
	if c.RetryPeriod >= c.RenewDeadline {
		bad("RetryPeriod: %v must be less than RenewDeadline (%v)", c.RetryPeriod, c.RenewDeadline)
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w: %s", ErrInvalidConfig, strings.Join(errs, "; "))
	}
	return nil
}
