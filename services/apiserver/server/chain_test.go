package server

import (
	"context"
	"errors"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"skiff.dev/internal/apierrors"
)

func TestRoutes(t *testing.T) {
	rs := Routes{}
	rs.Add("skiff.core.v1.Pods", "pods")
	cases := []struct {
		method string
		want   route
	}{
		{"/skiff.core.v1.Pods/Create", route{"pods", "", "create"}},
		{"/skiff.core.v1.Pods/UpdateStatus", route{"pods", "status", "update"}},
		{"/skiff.core.v1.Pods/Bind", route{"pods", "binding", "create"}},
		{"/skiff.core.v1.Pods/Watch", route{"pods", "", "watch"}},
		{"/grpc.health.v1.Health/Check", route{"", "grpc.health.v1.Health", "check"}},
	}
	for _, c := range cases {
		if got := rs.info(c.method); got != c.want {
			t.Errorf("info(%s) = %+v, want %+v", c.method, got, c.want)
		}
	}
}

func TestToStatus(t *testing.T) {
	cases := []struct {
		name string
		err  error
		code codes.Code
	}{
		{"api error keeps its code", apierrors.NewNotFound("pods", "x"), codes.NotFound},
		{"conflict", apierrors.NewConflict("pods", "x", "stale"), codes.Aborted},
		{"client went away", context.Canceled, codes.Canceled},
		{"deadline", context.DeadlineExceeded, codes.DeadlineExceeded},
		{"grpc status passes", status.Error(codes.Unavailable, "x"), codes.Unavailable},
		{"anything else is internal", errors.New("boom"), codes.Internal},
	}
	for _, c := range cases {
		if got := status.Code(toStatus(c.err)); got != c.code {
			t.Errorf("%s: code %v, want %v", c.name, got, c.code)
		}
	}
	if toStatus(nil) != nil {
		t.Error("toStatus(nil) != nil")
	}
}
