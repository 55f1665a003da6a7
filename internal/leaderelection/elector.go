package leaderelection

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"
	"google.golang.org/protobuf/proto"

	"skiff.dev/internal/apierrors"
	"skiff.dev/internal/workqueue"
	coordinationv1 "skiff.dev/proto/coordination/v1"
	metav1 "skiff.dev/proto/meta/v1"
)

// ErrLeaderLost is returned by Run when this process stopped being the
// leader without being asked to: it could not renew the lease in time, or
// another candidate took it.
var ErrLeaderLost = errors.New("leaderelection: leadership lost")

// heldError says another candidate holds a valid lease.
type heldError struct{ holder string }

func (e *heldError) Error() string { return fmt.Sprintf("the lease is held by %q", e.holder) }

// Run campaigns for the lease in cfg.Lock and, while it holds it, runs lead;
// see the package documentation for when it returns and what it returns.
func Run(ctx context.Context, cfg Config, lead func(ctx context.Context)) error {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return err
	}
	if lead == nil {
		return fmt.Errorf("%w: lead: required", ErrInvalidConfig)
	}
	m, err := newMetrics(cfg.Registerer, cfg.Lock.Name)
	if err != nil {
		return fmt.Errorf("leaderelection: registering metrics: %w", err)
	}
	e := &elector{
		cfg:     cfg,
		log:     cfg.Logger.With(zap.Stringer("lease", cfg.Lock), zap.String("identity", cfg.Identity)),
		metrics: m,
	}
	renewedAt, ok := e.acquire(ctx)
	if !ok {
		return nil
	}
	return e.lead(ctx, renewedAt, lead)
}

// elector is one candidate's state.
type elector struct {
	cfg     Config
	log     *zap.Logger
	metrics *metrics

	// observed is the last Lease record read or written; observedAt is when,
	// on this process's clock, its resourceVersion last changed. Only one
	// attempt runs at a time, and the loops read these only between attempts.
	observed   *coordinationv1.Lease
	observedAt time.Time
}

// acquire retries until this candidate holds the lease (it returns the
// start of the successful attempt) or ctx is done (ok false).
func (e *elector) acquire(ctx context.Context) (renewedAt time.Time, ok bool) {
	e.log.Info("waiting to acquire the lease")
	for {
		now := e.cfg.Clock.Now()
		actx, cancel := context.WithTimeout(ctx, e.cfg.RenewDeadline)
		err := e.tryAcquireOrRenew(actx, now)
		cancel()
		var held *heldError
		switch {
		case err == nil:
			return now, true
		case errors.As(err, &held):
			e.log.Debug("the lease is held by another candidate", zap.String("holder", held.holder))
		case ctx.Err() == nil:
			e.log.Warn("acquiring the lease failed; retrying", zap.Error(err))
		}
		retry := e.cfg.Clock.NewTimer(e.cfg.RetryPeriod)
		select {
		case <-ctx.Done():
			retry.Stop()
			return time.Time{}, false
		case <-retry.C():
		}
	}
}

// lead runs work while renewing the lease every RetryPeriod. The last
// successful attempt started at renewedAt; when RenewDeadline has passed
// since, the work is cancelled at once.
func (e *elector) lead(ctx context.Context, renewedAt time.Time, work func(context.Context)) error {
	clock := e.cfg.Clock
	leaderCtx, stopWork := context.WithCancel(ctx)
	defer stopWork()
	workDone := make(chan struct{})
	e.log.Info("became leader")
	e.metrics.leading(true)
	defer e.metrics.leading(false)
	go func() {
		defer close(workDone)
		work(leaderCtx)
	}()

	// Attempts do not end with ctx: while the work winds down after ctx
	// is cancelled, the lease is still renewed, then released.
	base := context.WithoutCancel(ctx)
	var (
		ctxDone  = ctx.Done()
		retry    = clock.NewTimer(e.cfg.RetryPeriod) // nil while an attempt is in flight
		deadline = workqueue.NewTimerAt(clock, renewedAt.Add(e.cfg.RenewDeadline))
		inFlight *attempt // nil when none
	)
	defer func() {
		deadline.Stop()
		if retry != nil {
			retry.Stop()
		}
	}()
	abort := func() {
		if inFlight != nil {
			inFlight.cancel()
			<-inFlight.result
			inFlight = nil
		}
	}
	lost := func(why error) error {
		stopWork() // first: losing the lease stops all work at once
		e.log.Error("leadership lost; work stopped", zap.Error(why))
		abort()
		<-workDone
		return why
	}
	for {
		select {
		case <-ctxDone:
			ctxDone = nil // leaderCtx is cancelled with ctx; keep renewing until the work has returned
			e.log.Info("stopping: releasing the lease once the work has returned")
		case <-workDone:
			abort()
			e.release(base)
			return nil
		case <-deadline.C():
			return lost(fmt.Errorf("%w: lease %s not renewed within %v", ErrLeaderLost, e.cfg.Lock, e.cfg.RenewDeadline))
		case <-timerChan(retry):
			retry = nil
			inFlight = e.startAttempt(base, clock.Now())
		case err := <-inFlight.resultChan():
			at := inFlight.at
			inFlight.cancel()
			inFlight = nil
			retry = clock.NewTimer(e.cfg.RetryPeriod)
			var held *heldError
			switch {
			case err == nil:
				deadline.Stop()
				deadline = workqueue.NewTimerAt(clock, at.Add(e.cfg.RenewDeadline))
			case errors.As(err, &held):
				return lost(fmt.Errorf("%w: lease %s: %w", ErrLeaderLost, e.cfg.Lock, err))
			default:
				e.log.Warn("renewing the lease failed; retrying", zap.Error(err))
			}
		}
	}
}

// attempt is one tryAcquireOrRenew running in its own goroutine, so that
// the leader loop can give up on it when the renew deadline passes.
type attempt struct {
	at     time.Time
	result chan error
	cancel context.CancelFunc
}

func (e *elector) startAttempt(ctx context.Context, at time.Time) *attempt {
	ctx, cancel := context.WithCancel(ctx)
	a := &attempt{at: at, result: make(chan error, 1), cancel: cancel}
	go func() { a.result <- e.tryAcquireOrRenew(ctx, at) }()
	return a
}

// timerChan is t's channel, nil (never ready in a select) without a timer.
func timerChan(t workqueue.Timer) <-chan time.Time {
	if t == nil {
		return nil
	}
	return t.C()
}

// resultChan is nil (never ready in a select) when there is no attempt.
func (a *attempt) resultChan() <-chan error {
	if a == nil {
		return nil
	}
	return a.result
}

// tryAcquireOrRenew makes this candidate the holder, as of now, unless
// another holds a valid lease (*heldError). Every write is conditional on
// the resourceVersion read.
func (e *elector) tryAcquireOrRenew(ctx context.Context, now time.Time) error {
	lock := e.cfg.Lock
	// The holder renews the record it last wrote without reading it first;
	// a conflict means someone else wrote since, so read.
	if e.observed.GetSpec().GetHolderIdentity() == e.cfg.Identity {
		if err := e.write(ctx, e.observed, now); err == nil || !apierrors.IsConflict(err) {
			return err
		}
	}
	cur, err := e.cfg.Client.Get(ctx, lock.Namespace, lock.Name)
	if apierrors.IsNotFound(err) {
		l := &coordinationv1.Lease{
			Metadata: &metav1.ObjectMeta{Namespace: lock.Namespace, Name: lock.Name},
			Spec:     claim(nil, e.cfg.Identity, e.cfg.LeaseDuration, now),
		}
		created, err := e.cfg.Client.Create(ctx, l)
		if err != nil {
			return fmt.Errorf("creating lease %s: %w", lock, err)
		}
		e.observe(created, now)
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading lease %s: %w", lock, err)
	}
	restarted := e.observed == nil && cur.GetSpec().GetHolderIdentity() == e.cfg.Identity
	e.observe(cur, now)
	if restarted {
		// Nothing of this process wrote it: an earlier run of this member
		// did (or, if identities were not unique, another process now does).
		e.log.Info("the lease names this identity from an earlier run of this member; taking it back at once (identities must be unique per member: two processes with one identity would both lead)")
	}
	if heldByOther(cur.GetSpec(), e.observedAt, e.cfg.Identity, e.cfg.LeaseDuration, now) {
		return &heldError{holder: cur.GetSpec().GetHolderIdentity()}
	}
	return e.write(ctx, cur, now)
}

// write updates cur (at its resourceVersion) to name this candidate holder.
func (e *elector) write(ctx context.Context, cur *coordinationv1.Lease, now time.Time) error {
	l := proto.Clone(cur).(*coordinationv1.Lease)
	l.Spec = claim(cur.GetSpec(), e.cfg.Identity, e.cfg.LeaseDuration, now)
	stored, err := e.cfg.Client.Update(ctx, l)
	if err != nil {
		return fmt.Errorf("updating lease %s: %w", e.cfg.Lock, err)
	}
	e.observe(stored, now)
	return nil
}

// observe records l as the last record seen; its clock starts when its
// resourceVersion differs from the previous one.
func (e *elector) observe(l *coordinationv1.Lease, now time.Time) {
	if e.observed != nil && l.GetMetadata().GetResourceVersion() == e.observed.GetMetadata().GetResourceVersion() {
		return
	}
	if h := l.GetSpec().GetHolderIdentity(); h != e.observed.GetSpec().GetHolderIdentity() && h != "" && h != e.cfg.Identity {
		e.log.Info("new leader observed", zap.String("holder", h))
	}
	e.observed, e.observedAt = l, now
}

// release empties the holder of the lease this candidate holds, so that a
// standby takes over at its next retry instead of after the lease expires.
// A conflict is read again: a renewal abandoned when the work returned may
// have been stored without its reply reaching here, and then the record
// still names this candidate at a newer resourceVersion. Only when another
// holder is named is there nothing to release.
func (e *elector) release(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, e.cfg.RenewDeadline)
	defer cancel()
	cur := e.observed
	for attempt := 0; ; attempt++ {
		if cur.GetSpec().GetHolderIdentity() != e.cfg.Identity {
			return
		}
		l := proto.Clone(cur).(*coordinationv1.Lease)
		l.Spec = released(l.GetSpec(), e.cfg.Clock.Now())
		stored, err := e.cfg.Client.Update(ctx, l)
		if err == nil {
			e.observe(stored, e.cfg.Clock.Now())
			e.log.Info("released the lease")
			return
		}
		if apierrors.IsConflict(err) && attempt < 2 {
			if cur, err = e.cfg.Client.Get(ctx, e.cfg.Lock.Namespace, e.cfg.Lock.Name); err == nil {
				continue
			}
		}
		e.log.Warn("releasing the lease failed; standbys take over when it expires", zap.Error(err))
		return
	}
}
