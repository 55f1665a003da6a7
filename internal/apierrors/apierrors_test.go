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

func TestHTTPStatusCode(t *testing.T) {
	// A status as it comes back over the wire: the gRPC code and the
	// Status detail.
	wire := func(e *StatusError) error { return e.GRPCStatus().Err() }
	for _, tc := range []struct {
		name string
		err  error
		want int
	}{
		{"no error", nil, 200},
		{"not found", NewNotFound("pods", "a"), 404},
		{"not found, from the wire", wire(NewNotFound("pods", "a")), 404},
		{"wrapped already exists", fmt.Errorf("create: %w", NewAlreadyExists("pods", "a")), 409},
		{"conflict", wire(NewConflict("pods", "a", "changed")), 409},
		{"invalid", wire(NewInvalid("Pod", "a", nil)), 422},
		{"bad request", wire(NewBadRequest("no")), 400},
		{"too large", wire(NewTooLarge("pods", "a", 2, 1)), 413},
		{"expired", NewExpired("compacted"), 410},
		{"method not allowed", NewMethodNotAllowed("pods", "patch"), 405},
		{"too many requests", wire(NewTooManyRequests("later", 1)), 429},
		{"timeout", NewTimeout("slow"), 504},
		{"deadline", context.DeadlineExceeded, 504},
		{"unavailable", NewServiceUnavailable("shutting down"), 503},
		{"unauthorized", NewUnauthorized("who"), 401},
		{"forbidden", NewForbidden("pods", "a", "no"), 403},
		{"internal", NewInternal(errors.New("boom")), 500},
		{"not an API error", errors.New("boom"), 500},
		// Statuses without a Status detail (grpc-go's own, other servers'):
		// by their code, as the table reads.
		{"bare NOT_FOUND", status.Error(codes.NotFound, "x"), 404},
		{"bare RESOURCE_EXHAUSTED", status.Error(codes.ResourceExhausted, "x"), 429},
		{"bare UNAVAILABLE", status.Error(codes.Unavailable, "x"), 503},
		{"bare UNKNOWN", status.Error(codes.Unknown, "x"), 500},
		{"bare DATA_LOSS", status.Error(codes.DataLoss, "x"), 500},
		// The client went away: no HTTP status says it; nginx's 499.
		{"client canceled", status.Error(codes.Canceled, "x"), 499},
		{"context canceled", context.Canceled, 499},
	} {
		if got := HTTPStatusCode(tc.err); got != tc.want {
			t.Errorf("%s: HTTPStatusCode(%v) = %d, want %d", tc.name, tc.err, got, tc.want)
		}
	}
}
