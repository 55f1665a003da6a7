package flowcontrol

import (
	"context"
	"errors"
	"math"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/time/rate"
)

// userRates is the optional per-user request rate of the workload level
// (--flowcontrol-user-qps): a token bucket per user. Seats and fair queues
// bound what runs at once, but on a small machine a user sending many
// short requests still takes most of the CPU (a request's TLS, HTTP/2 and
// encoding happen outside its seat), and every other user's latency grows
// with it. A request over its user's rate waits for its token, holding no
// seat and no CPU; one that would wait longer than the request may is
// refused with a retry hint. The cluster's components (priority level
// system) and the loopback are not rate-limited.
type userRates struct {
	qps   rate.Limit
	burst int
	mu    sync.Mutex
	users map[string]*rate.Limiter

	delayed, refused prometheus.Counter
}

// maxRateUsers bounds the buckets kept; past it, full (idle) buckets are dropped.
const maxRateUsers = 4096

func newUserRates(qps float64, burst int, reg prometheus.Registerer) *userRates {
	if burst <= 0 {
		burst = max(1, int(math.Ceil(qps)))
	}
	v := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "apiserver_flowcontrol_user_rate_limited_requests_total",
		Help: "Requests of the workload level over their user's --flowcontrol-user-qps: delayed until their token, or refused (the wait would exceed the request's limit).",
	}, []string{"result"})
	if reg != nil {
		reg.MustRegister(v)
	}
	return &userRates{qps: rate.Limit(qps), burst: burst, users: map[string]*rate.Limiter{},
		delayed: v.WithLabelValues("delayed"), refused: v.WithLabelValues("refused")}
}

func (u *userRates) limiter(name string) *rate.Limiter {
	u.mu.Lock()
	defer u.mu.Unlock()
	l := u.users[name]
	if l == nil {
		if len(u.users) >= maxRateUsers {
			now := time.Now()
			for n, b := range u.users {
				if b.TokensAt(now) >= float64(u.burst) {
					delete(u.users, n)
				}
			}
		}
		l = rate.NewLimiter(u.qps, u.burst)
		u.users[name] = l
	}
	return l
}

// errRateWait says the request would wait for its token longer than it may.
var errRateWait = errors.New("over the user's request rate")

// wait takes a token of name's bucket, waiting for it up to maxWait (or the
// request's deadline). It returns the wait it would have needed when it
// refuses.
func (u *userRates) wait(ctx context.Context, name string, maxWait time.Duration) (time.Duration, error) {
	r := u.limiter(name).Reserve()
	d := r.Delay()
	if d == 0 {
		return 0, nil
	}
	limit := maxWait
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) < limit {
		limit = time.Until(dl)
	}
	if d > limit {
		r.Cancel()
		u.refused.Inc()
		return d, errRateWait
	}
	u.delayed.Inc()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return 0, nil
	case <-ctx.Done():
		r.Cancel()
		return 0, ctx.Err()
	}
}
