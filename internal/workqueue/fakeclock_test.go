package workqueue

import (
	"context"
	"errors"
	"testing"
	"time"
)

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), patience)
	t.Cleanup(cancel)
	return ctx
}

func fired(tm Timer) bool {
	select {
	case <-tm.C():
		return true
	default:
		return false
	}
}

func TestFakeClock(t *testing.T) {
	clk := NewFakeClock(epoch)
	if !clk.Now().Equal(epoch) {
		t.Fatalf("Now = %v, want %v", clk.Now(), epoch)
	}
	short := clk.NewTimer(time.Second)
	long := clk.NewTimer(time.Minute)
	stopped := clk.NewTimer(time.Second)
	now := clk.NewTimer(0)

	if !fired(now) {
		t.Error("a timer of 0 has not fired at once")
	}
	if n := clk.Waiters(); n != 3 {
		t.Fatalf("Waiters = %d, want 3", n)
	}
	if !stopped.Stop() {
		t.Error("Stop of a pending timer = false")
	}
	if stopped.Stop() {
		t.Error("second Stop = true")
	}

	clk.Step(999 * time.Millisecond)
	if fired(short) {
		t.Error("fired 1ms early")
	}
	clk.Step(time.Millisecond)
	if !fired(short) {
		t.Error("not fired at its deadline")
	}
	if fired(stopped) {
		t.Error("a stopped timer fired")
	}
	if short.Stop() {
		t.Error("Stop of a fired timer = true")
	}
	if n := clk.Waiters(); n != 1 || !clk.HasWaiters() {
		t.Fatalf("Waiters = %d, want 1", n)
	}

	clk.SetTime(epoch) // backwards: fires nothing
	if fired(long) {
		t.Error("fired when time went backwards")
	}
	clk.SetTime(epoch.Add(time.Hour))
	if !fired(long) {
		t.Error("not fired by SetTime past its deadline")
	}
	if clk.HasWaiters() {
		t.Error("HasWaiters after every timer fired")
	}
}

func TestFakeClockBlockUntilWaiters(t *testing.T) {
	clk := NewFakeClock(epoch)
	armed := make(chan error, 1)
	go func() { armed <- clk.BlockUntilWaiters(testContext(t), 2) }()
	clk.NewTimer(time.Second)
	clk.NewTimer(time.Second)
	select {
	case err := <-armed:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(patience):
		t.Fatal("BlockUntilWaiters(2) still blocked with 2 timers armed")
	}

	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := clk.BlockUntilWaiters(ctx, 3); !errors.Is(err, context.Canceled) {
		t.Fatalf("BlockUntilWaiters with a cancelled context = %v, want context.Canceled", err)
	}
}
