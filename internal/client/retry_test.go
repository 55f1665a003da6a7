package client

import (
	"context"
	"errors"
	"testing"
	"time"

	"skiff.dev/internal/apierrors"
)

func TestRetryOnConflict(t *testing.T) {
	conflict := apierrors.NewConflict("pods", "p", "the object has been modified")
	other := apierrors.NewNotFound("pods", "p")
	fast := Backoff{Steps: 4, Duration: time.Microsecond, Factor: 2, Jitter: 0.1}
	cases := []struct {
		name      string
		results   []error // what fn returns at each call; nil past the end
		wantCalls int
		wantErr   error
	}{
		{"success at once", []error{nil}, 1, nil},
		{"conflicts then success", []error{conflict, conflict, nil}, 3, nil},
		{"another error is not retried", []error{other}, 1, other},
		{"conflict to the last step", []error{conflict, conflict, conflict, conflict, conflict}, 4, conflict},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			calls := 0
			err := RetryOnConflict(context.Background(), fast, func() error {
				calls++
				if calls <= len(tc.results) {
					return tc.results[calls-1]
				}
				return nil
			})
			if calls != tc.wantCalls || !errors.Is(err, tc.wantErr) {
				t.Errorf("calls = %d, err = %v; want %d, %v", calls, err, tc.wantCalls, tc.wantErr)
			}
		})
	}
}

func TestRetryStopsWithTheContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	calls := 0
	err := RetryOnConflict(ctx, Backoff{Steps: 10, Duration: time.Hour}, func() error {
		calls++
		cancel()
		return apierrors.NewConflict("pods", "p", "modified")
	})
	if calls != 1 || !errors.Is(err, context.Canceled) {
		t.Errorf("calls = %d, err = %v; want 1 call and context.Canceled", calls, err)
	}
}
