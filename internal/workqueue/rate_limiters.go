package workqueue

import (
	"math"
	"sync"
	"time"
)

// AddRateLimited adds k after the delay the rate limiter gives it, and counts
// a retry.
func (q *Queue[K]) AddRateLimited(k K) {
	if q.ShuttingDown() {
		return
	}
	q.m.retries.Inc()
	q.AddAfter(k, q.limiter.When(k))
}

// Forget clears k's rate-limiter history: call it when k succeeded or will
// not be retried. It does not remove k from the queue.
func (q *Queue[K]) Forget(k K) { q.limiter.Forget(k) }

// NumRequeues returns how many times k was rate-limited since it was last
// forgotten.
func (q *Queue[K]) NumRequeues(k K) int { return q.limiter.NumRequeues(k) }

// RateLimiter decides how long a key waits before it is retried.
type RateLimiter[K comparable] interface {
	// When records a failure of k and returns how long to wait before
	// retrying it.
	When(k K) time.Duration
	// Forget clears k's failure history: k succeeded, or was given up on.
	Forget(k K)
	// NumRequeues returns how many failures of k are recorded.
	NumRequeues(k K) int
}

// DefaultRateLimiter is the limiter of Kubernetes controllers: the larger
// of a per-key exponential backoff (5ms doubling to 1000s) and an overall
// token bucket (10 retries a second, bursts of 100) that stops a storm of
// failing keys from hammering the apiserver. The bucket reads the wall
// clock: with a FakeClock queue, only its bursts of 100 are deterministic.
func DefaultRateLimiter[K comparable]() RateLimiter[K] {
	return NewMaxOfRateLimiter(
		NewItemExponentialFailureRateLimiter[K](5*time.Millisecond, 1000*time.Second),
		NewBucketRateLimiter[K](10, 100),
	)
}

// NewItemExponentialFailureRateLimiter waits base*2^n after a key's n-th
// consecutive failure (counting from 0), capped at maxDelay.
func NewItemExponentialFailureRateLimiter[K comparable](base, maxDelay time.Duration) RateLimiter[K] {
	return &itemExponentialLimiter[K]{base: base, max: maxDelay, failures: make(map[K]int)}
}

type itemExponentialLimiter[K comparable] struct {
	base, max time.Duration

	mu       sync.Mutex
	failures map[K]int
}

func (r *itemExponentialLimiter[K]) When(k K) time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := r.failures[k]
	r.failures[k] = n + 1
	// In float64, so that a large n saturates instead of overflowing.
	backoff := float64(r.base.Nanoseconds()) * math.Pow(2, float64(n))
	if backoff > float64(r.max.Nanoseconds()) {
		return r.max
	}
	return time.Duration(backoff)
}

func (r *itemExponentialLimiter[K]) Forget(k K) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.failures, k)
}

func (r *itemExponentialLimiter[K]) NumRequeues(k K) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.failures[k]
}

// NewBucketRateLimiter limits retries of all keys together with a token
// bucket holding burst tokens, refilled at qps tokens a second. When takes a
// token, and returns how long until that token is there. It keeps no
// per-key state: Forget does nothing and NumRequeues is always 0.
func NewBucketRateLimiter[K comparable](qps float64, burst int) RateLimiter[K] {
	return newBucketRateLimiter[K](qps, burst, RealClock())
}

func newBucketRateLimiter[K comparable](qps float64, burst int, clock Clock) *bucketLimiter[K] {
	return &bucketLimiter[K]{qps: qps, burst: float64(burst), tokens: float64(burst), clock: clock}
}

type bucketLimiter[K comparable] struct {
	qps   float64
	burst float64
	clock Clock

	mu     sync.Mutex
	tokens float64 // negative: tokens already promised to waiting callers
	last   time.Time
}

func (r *bucketLimiter[K]) When(K) time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.clock.Now()
	if now.After(r.last) {
		if !r.last.IsZero() {
			r.tokens = math.Min(r.burst, r.tokens+now.Sub(r.last).Seconds()*r.qps)
		}
		r.last = now
	}
	r.tokens--
	if r.tokens >= 0 {
		return 0
	}
	if r.qps <= 0 {
		return math.MaxInt64 // no refill: the token never comes
	}
	return time.Duration(-r.tokens / r.qps * float64(time.Second))
}

func (r *bucketLimiter[K]) Forget(K) {}

func (r *bucketLimiter[K]) NumRequeues(K) int { return 0 }

// NewMaxOfRateLimiter waits as long as the slowest of limiters. Forget
// forgets in all of them; NumRequeues is the largest count.
func NewMaxOfRateLimiter[K comparable](limiters ...RateLimiter[K]) RateLimiter[K] {
	return &maxOfLimiter[K]{limiters: limiters}
}

type maxOfLimiter[K comparable] struct {
	limiters []RateLimiter[K]
}

func (r *maxOfLimiter[K]) When(k K) time.Duration {
	var d time.Duration
	for _, l := range r.limiters {
		d = max(d, l.When(k))
	}
	return d
}

func (r *maxOfLimiter[K]) Forget(k K) {
	for _, l := range r.limiters {
		l.Forget(k)
	}
}

func (r *maxOfLimiter[K]) NumRequeues(k K) int {
	var n int
	for _, l := range r.limiters {
		n = max(n, l.NumRequeues(k))
	}
	return n
}
