package client

import (
	"context"
	"math/rand/v2"
	"time"

	"skiff.dev/internal/apierrors"
)

// Backoff says how often and how fast to retry.
type Backoff struct {
	Steps    int           // attempts in all
	Duration time.Duration // the first wait
	Factor   float64       // each wait is the previous one times Factor
	Jitter   float64       // each wait grows by up to Jitter times itself, at random
	Cap      time.Duration // no wait is longer (0: no cap)
}

// DefaultRetry is client-go's retry.DefaultRetry: for conflicts between
// writers of the same object, which resolve quickly.
var DefaultRetry = Backoff{Steps: 5, Duration: 10 * time.Millisecond, Factor: 1.0, Jitter: 0.1}

// DefaultBackoff is for a server that is busy or briefly away.
var DefaultBackoff = Backoff{Steps: 4, Duration: 10 * time.Millisecond, Factor: 5.0, Jitter: 0.1}

// RetryOnConflict runs fn until it returns something other than a Conflict
// error, at most b.Steps times, waiting between attempts. fn should read the
// object afresh (from the API or an informer) each time. It returns fn's last
// error, or ctx's error if ctx ends while waiting.
func RetryOnConflict(ctx context.Context, b Backoff, fn func() error) error {
	return OnError(ctx, b, apierrors.IsConflict, fn)
}

// OnError runs fn until it succeeds or fails with an error retriable does not
// accept, at most b.Steps times.
func OnError(ctx context.Context, b Backoff, retriable func(error) bool, fn func() error) error {
	wait := b.Duration
	var err error
	for i := 0; i < max(b.Steps, 1); i++ {
		if i > 0 {
			d := wait
			if b.Jitter > 0 {
				d += time.Duration(rand.Float64() * b.Jitter * float64(d))
			}
			t := time.NewTimer(d)
			select {
			case <-ctx.Done():
				t.Stop()
				return ctx.Err()
			case <-t.C:
			}
			if b.Factor > 0 {
				wait = time.Duration(float64(wait) * b.Factor)
			}
			if b.Cap > 0 && wait > b.Cap {
				wait = b.Cap
			}
		}
		if err = fn(); err == nil || !retriable(err) {
			return err
		}
	}
	return err
}
