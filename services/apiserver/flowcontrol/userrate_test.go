package flowcontrol

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"skiff.dev/internal/apierrors"
	"skiff.dev/services/apiserver/user"
)

// TestUserRate: a workload user over --flowcontrol-user-qps waits for its
// token (another user does not), a wait longer than the request may is
// refused with a hint of that wait, and the cluster's components are not
// rate-limited.
func TestUserRate(t *testing.T) {
	// 10/s, burst 2, at most 300 ms of wait: the third request at once
	// waits about 100 ms; requests that would wait past 300 ms are refused.
	l, reg, _ := newTestLimiter(t, Options{UserQPS: 10, UserBurst: 2, MaxWait: 300 * time.Millisecond})
	ctx := context.Background()
	mustAcquire(t, l, request("flooder", "get"))()
	mustAcquire(t, l, request("flooder", "get"))()
	start := time.Now()
	mustAcquire(t, l, request("flooder", "get"))()
	if waited := time.Since(start); waited < 50*time.Millisecond {
		t.Errorf("third request over a burst of 2 at 10/s waited %v, want about 100 ms", waited)
	}
	// Another user has its own bucket: no wait.
	start = time.Now()
	mustAcquire(t, l, request("victim", "get"))()
	if waited := time.Since(start); waited > 50*time.Millisecond {
		t.Errorf("another user's first request waited %v", waited)
	}
	// Take tokens until a wait would exceed 300 ms: that one is refused.
	var err error
	for i := 0; i < 10 && err == nil; i++ {
		rctx, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
		_, err = l.Acquire(rctx, request("flooder", "create"))
		cancel()
		if apierrors.IsTooManyRequests(err) {
			break
		}
		err = nil // a delayed request ran out of its 20 ms: try again
	}
	if !apierrors.IsTooManyRequests(err) {
		t.Fatalf("a request that would wait past its deadline: %v, want TooManyRequests", err)
	}
	for _, want := range []string{`user "flooder"`, "requests/s", "retry after 1 s"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if got := apierrors.FromError(err).Status.GetDetails().GetRetryAfterSeconds(); got < 1 {
		t.Errorf("retryAfterSeconds = %d, want >= 1", got)
	}
	// The scheduler (priority level system) is not rate-limited.
	sched := request(user.Scheduler, "get")
	start = time.Now()
	for range 20 {
		mustAcquire(t, l, sched)()
	}
	if waited := time.Since(start); waited > 100*time.Millisecond {
		t.Errorf("20 scheduler requests took %v: the system level must not be rate-limited", waited)
	}
	if testutil.ToFloat64(l.rates.delayed) < 1 || testutil.ToFloat64(l.rates.refused) < 1 {
		t.Errorf("delayed %v, refused %v: want both counted", testutil.ToFloat64(l.rates.delayed), testutil.ToFloat64(l.rates.refused))
	}
	if problems, err := testutil.GatherAndLint(reg); err != nil || len(problems) > 0 {
		t.Errorf("metric lint: %v %v", problems, err)
	}
}

func TestUserRateOptions(t *testing.T) {
	for _, o := range []Options{{UserQPS: -1}, {UserQPS: 1, UserBurst: -1}} {
		if err := o.Validate(); err == nil || !strings.Contains(err.Error(), "--flowcontrol-user-") {
			t.Errorf("Validate(%+v) = %v, want an error naming the flag", o, err)
		}
	}
	if !(Options{UserQPS: 5}).Enabled() {
		t.Error("a user rate alone must turn flow control on")
	}
}
