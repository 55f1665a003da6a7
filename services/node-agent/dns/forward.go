package dns

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"sync/atomic"
	"time"

	"github.com/miekg/dns"
	"go.uber.org/zap"
)

var (
	// errNoUpstream: nothing to forward to.
	errNoUpstream = errors.New("no upstream resolver configured")
	// errOverloaded: MaxConcurrentForwards queries are in flight already.
	errOverloaded = errors.New("too many forwarded queries in flight")
)

// forwarder sends the queries outside the cluster's names to the upstream
// resolvers, in their order (as a stub resolver reads resolv.conf): over
// UDP, again over TCP when the answer is truncated, the next upstream when
// one fails, all within one timeout.
type forwarder struct {
	ups     []netip.AddrPort
	names   []string // ups as strings, for dialing and labels
	timeout time.Duration
	m       *metrics
	log     *zap.Logger
	down    []atomic.Bool // the upstream's last attempt failed (logged on change)
	now     func() time.Time
	slots   chan struct{} // one per forwarded query in flight
}

func newForwarder(ups []netip.AddrPort, timeout time.Duration, maxInFlight int, m *metrics, log *zap.Logger) *forwarder {
	f := &forwarder{ups: ups, timeout: timeout, m: m, log: log, down: make([]atomic.Bool, len(ups)), now: time.Now,
		slots: make(chan struct{}, maxInFlight)}
	for _, u := range ups {
		f.names = append(f.names, u.String())
	}
	return f
}

// forwardError is why a forwarded query failed; reason is the metric's.
type forwardError struct {
	reason string
	err    error
}

func (e *forwardError) Error() string { return e.err.Error() }
func (e *forwardError) Unwrap() error { return e.err }

// exchange forwards req and returns the first upstream answer, with req's
// ID. Each upstream gets an equal share of what is left of the timeout, so
// one that never answers leaves time for the next.
func (f *forwarder) exchange(ctx context.Context, req *dns.Msg) (*dns.Msg, error) {
	f.m.forwarded.Inc()
	if len(f.ups) == 0 {
		return nil, &forwardError{failNone, errNoUpstream}
	}
	select {
	case f.slots <- struct{}{}:
		defer func() { <-f.slots }()
	default:
		return nil, &forwardError{failOverloaded, errOverloaded}
	}
	deadline := f.now().Add(f.timeout)
	ctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	var errs []string
	timedOut := false
	for i := range f.ups {
		share := deadline.Sub(f.now()) / time.Duration(len(f.ups)-i)
		actx, acancel := context.WithTimeout(ctx, share)
		resp, err := f.try(actx, i, req)
		acancel()
		if err == nil {
			if f.down[i].Swap(false) {
				f.log.Info("Upstream resolver answers again", zap.String("upstream", f.names[i]))
			}
			return resp, nil
		}
		f.m.upstream.WithLabelValues(f.names[i]).Inc()
		var ne net.Error
		timedOut = timedOut || (errors.As(err, &ne) && ne.Timeout()) || errors.Is(err, context.DeadlineExceeded)
		errs = append(errs, fmt.Sprintf("%s: %v", f.names[i], err))
		if !f.down[i].Swap(true) {
			f.log.Warn("Upstream resolver failed; queries go to the next one, or get SERVFAIL",
				zap.String("upstream", f.names[i]), zap.Error(err))
		}
		if ctx.Err() != nil {
			break
		}
	}
	reason := failError
	if timedOut || ctx.Err() != nil {
		reason = failTimeout
	}
	return nil, &forwardError{reason, fmt.Errorf("no upstream resolver answered within %v: %s", f.timeout, strings.Join(errs, "; "))}
}

// try asks upstream i, over UDP then, when the answer is truncated, TCP.
func (f *forwarder) try(ctx context.Context, i int, req *dns.Msg) (*dns.Msg, error) {
	q := req.Copy()
	q.Id = dns.Id() // not the client's: an answer must match our question
	resp, err := f.exchangeOver(ctx, "udp", f.names[i], q)
	if err == nil && resp.Truncated {
		resp, err = f.exchangeOver(ctx, "tcp", f.names[i], q)
	}
	if err != nil {
		return nil, err
	}
	if len(resp.Question) != 1 || !strings.EqualFold(resp.Question[0].Name, q.Question[0].Name) ||
		resp.Question[0].Qtype != q.Question[0].Qtype {
		return nil, errors.New("the answer is for another question")
	}
	resp.Id = req.Id
	return resp, nil
}

// exchangeOver sends q to addr over network and reads the answer, until
// ctx's deadline; ctx's end (the server stopping) closes the socket at once.
func (f *forwarder) exchangeOver(ctx context.Context, network, addr string, q *dns.Msg) (*dns.Msg, error) {
	// Timeout: miekg/dns's own default (2 s) must not cut a longer
	// Config.Timeout short; ctx's deadline, earlier, is what counts.
	c := &dns.Client{Net: network, UDPSize: dns.DefaultMsgSize, Timeout: f.timeout}
	conn, err := c.DialContext(ctx, addr)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	resp, _, err := c.ExchangeWithConnContext(ctx, q, conn)
	if err != nil && ctx.Err() != nil {
		return nil, fmt.Errorf("%w (%v)", ctx.Err(), err)
	}
	return resp, err
}
