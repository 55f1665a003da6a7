package workqueue

import "time"

// Clock is the source of time of a queue and its rate limiters. Production
// code uses RealClock; tests use a FakeClock and step it.
type Clock interface {
	Now() time.Time
	NewTimer(d time.Duration) Timer
}

// Timer is the part of *time.Timer a queue needs.
type Timer interface {
	// C delivers the time once the timer fires.
	C() <-chan time.Time
	// Stop prevents the timer from firing. It reports whether the timer was
	// still pending.
	Stop() bool
}

// deadlineClock is a Clock that can arm a timer for an instant rather than
// a duration. Both clocks of this package are.
type deadlineClock interface {
	newTimerAt(t time.Time) Timer
}

// NewTimerAt returns a timer of c that fires when c reaches t. Unlike
// c.NewTimer(t.Sub(now)) with a now read earlier, the deadline does not
// drift when the clock moves in between (a test stepping a FakeClock
// there would otherwise leave the timer armed past where it stops).
func NewTimerAt(c Clock, t time.Time) Timer {
	if dc, ok := c.(deadlineClock); ok {
		return dc.newTimerAt(t)
	}
	return c.NewTimer(t.Sub(c.Now()))
}

// RealClock returns the wall clock.
func RealClock() Clock { return realClock{} }

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

func (realClock) NewTimer(d time.Duration) Timer { return realTimer{time.NewTimer(d)} }

// newTimerAt implements deadlineClock.
func (realClock) newTimerAt(t time.Time) Timer { return realTimer{time.NewTimer(time.Until(t))} }

type realTimer struct{ t *time.Timer }

func (r realTimer) C() <-chan time.Time { return r.t.C }

func (r realTimer) Stop() bool { return r.t.Stop() }
