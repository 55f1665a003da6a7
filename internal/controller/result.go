package controller

import (
	"context"
	"errors"
	"time"
)

// Result tells the runner what to do with a key that reconciled without
// error. The zero Result means done: the key's backoff is reset and it is
// not queued again until someone enqueues it.
type Result struct {
	// Requeue queues the key again after its rate-limited backoff, as an
	// error would, but without logging one. Ignored if RequeueAfter > 0.
	Requeue bool
	// RequeueAfter queues the key again after this delay (resetting its
	// backoff), for work that is due at a known time.
	RequeueAfter time.Duration
}

// Reconciler makes the world match the desired state of one object, named
// by its key.
//
// A returned error retries the key with exponential backoff, unless it is
// Terminal. If err != nil the Result is ignored. ctx is cancelled when the
// controller stops; Reconcile should then return promptly.
type Reconciler interface {
	Reconcile(ctx context.Context, key string) (Result, error)
}

// ReconcileFunc adapts a function to a Reconciler.
type ReconcileFunc func(ctx context.Context, key string) (Result, error)

// Reconcile calls f.
func (f ReconcileFunc) Reconcile(ctx context.Context, key string) (Result, error) {
	return f(ctx, key)
}

// Terminal marks err as not worth retrying (an invalid object, say, that
// only a user's change can fix; the change enqueues the key anew). The
// runner logs it, counts it and forgets the key. Terminal(nil) is nil.
func Terminal(err error) error {
	if err == nil {
		return nil
	}
	return &terminalError{err: err}
}

// IsTerminal reports whether err, or an error it wraps, was made by Terminal.
func IsTerminal(err error) bool {
	var t *terminalError
	return errors.As(err, &t)
}

type terminalError struct{ err error }

func (e *terminalError) Error() string { return "terminal error: " + e.err.Error() }

func (e *terminalError) Unwrap() error { return e.err }
