package flowcontrol

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"skiff.dev/internal/apierrors"
	"skiff.dev/services/apiserver/server"
)

// RetryAfterSeconds is the retry hint of a refused request, as Kubernetes'
// max-in-flight filter gives it: soon, since a seat frees within a request's
// time, but not at once.
const RetryAfterSeconds = 1

// RetryAfterTrailer is the trailer that repeats the hint for clients that
// do not read the status details.
const RetryAfterTrailer = "retry-after"

// Limiter is the apiserver's flow control (a server.Limiter).
type Limiter struct {
	series  [numSchemas][numKinds]*series // nil: that kind is not limited
	exempt  prometheus.Counter
	maxWait time.Duration
	rates   *userRates    // nil: no per-user rate
	objects ObjectCounter // nil: every request takes one seat
}

var _ server.Limiter = (*Limiter)(nil)

func noRelease() {}

// New builds the limiter of o, registering its metrics on reg; it returns
// nil when o sets no limit. objects counts what a List would read, for
// its work estimate (nil: every request takes one seat).
func New(o Options, objects ObjectCounter, reg prometheus.Registerer) (*Limiter, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if !o.Enabled() {
		return nil, nil
	}
	o = o.withDefaults()
	m := newMetrics(reg)
	var rates *userRates
	if o.UserQPS > 0 {
		rates = newUserRates(o.UserQPS, o.UserBurst, reg)
	}
	l := &Limiter{
		maxWait: o.MaxWait,
		rates:   rates,
		objects: objects,
		exempt:  m.dispatched.WithLabelValues(schemas[exempt].level, schemas[exempt].name, kindNames[readOnly]),
	}
	limits := [numKinds]int{readOnly: o.MaxRequestsInflight, mutating: o.MaxMutatingRequestsInflight}
	for _, level := range []string{levelSystem, levelWorkload} {
		for k, limit := range limits {
			m.nominal.WithLabelValues(level, kindNames[k]).Set(float64(limit))
			if limit == 0 {
				continue
			}
			p := newSeats(limit, o.QueueLength) // shared by the level's flow schemas
			for sc := range numSchemas {
				if schemas[sc].level == level {
					l.series[sc][k] = m.series(sc, kind(k), p)
				}
			}
		}
	}
	return l, nil
}

// Acquire waits for the request's seats (one, or more for a List of many
// objects: estimate.go) and returns their release, or refuses the request
// with TooManyRequests (ResourceExhausted with a retry hint). With its
// seats free it takes one short lock and allocates nothing (a List also
// counts its objects in the watch cache).
func (l *Limiter) Acquire(ctx context.Context, ri *server.RequestInfo) (func(), error) {
	sc := classify(ri.User)
	if sc == exempt {
		l.exempt.Inc()
		return noRelease, nil
	}
	name := ri.User.String()
	if l.rates != nil && schemas[sc].level == levelWorkload {
		if need, err := l.rates.wait(ctx, name, l.maxWait); err != nil {
			if !errors.Is(err, errRateWait) {
				return noRelease, err
			}
			retry := int32(max(RetryAfterSeconds, math.Ceil(need.Seconds())))
			_ = grpc.SetTrailer(ctx, metadata.Pairs(RetryAfterTrailer, strconv.Itoa(int(retry))))
			return noRelease, apierrors.NewTooManyRequests(
				fmt.Sprintf("too many requests from user %q (over its %v requests/s for %v), retry after %d s", name, float64(l.rates.qps), need.Round(time.Millisecond), retry), retry)
		}
	}
	s := l.series[sc][kindOf(ri.Verb)]
	if s == nil {
		return noRelease, nil
	}
	width := s.seats.width(l.estimate(ri))
	s.estimatedSeats.Observe(float64(width))
	release, res, queued, waited := s.seats.acquire(ctx, name, s, width, l.maxWait)
	if res == dispatched {
		return release, nil
	}
	s.rejected[res].Inc()
	if res == cancelled {
		return noRelease, ctx.Err()
	}
	var why string
	if res == queueFull {
		why = fmt.Sprintf("%d of its %s requests already wait for a seat of priority level %s", queued, s.kind, s.level)
	} else {
		seats := "a " + s.kind + " seat"
		if width > 1 {
			seats = fmt.Sprintf("%d %s seats", width, s.kind)
		}
		why = fmt.Sprintf("it waited %v for %s of priority level %s", waited.Round(time.Millisecond), seats, s.level)
	}
	_ = grpc.SetTrailer(ctx, metadata.Pairs(RetryAfterTrailer, strconv.Itoa(RetryAfterSeconds)))
	return noRelease, apierrors.NewTooManyRequests(
		fmt.Sprintf("too many requests from user %q (%s), retry after %d s", name, why, RetryAfterSeconds), RetryAfterSeconds)
}
