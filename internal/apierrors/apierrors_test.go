package apierrors

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func TestMayHaveHappened(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"no error", nil, false},
		{"connection lost", status.Error(codes.Unavailable, "connection reset"), true},
		{"deadline", context.DeadlineExceeded, true},
		{"server failed", NewInternal(errors.New("boom")), true},
		{"not an API error", errors.New("something"), true},
		{"wrapped refusal", fmt.Errorf("create: %w", NewAlreadyExists("pods", "a")), false},
		{"invalid", NewBadRequest("no"), false},
		{"forbidden", NewForbidden("pods", "a", "no"), false},
		{"flow control refused it", NewTooManyRequests("later", 1), false},
		{"conflict", NewConflict("pods", "a", "changed"), false},
	} {
		if got := MayHaveHappened(tc.err); got != tc.want {
			t.Errorf("%s: MayHaveHappened(%v) = %v, want %v", tc.name, tc.err, got, tc.want)
		}
	}
}
