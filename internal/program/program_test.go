package program

import (
	"context"
	"errors"
	"flag"
	"testing"

	"go.uber.org/zap"
)

func TestExitCodes(t *testing.T) {
	spec := func(parseErr, runErr error) Spec[string] {
		return Spec[string]{
			Name: "skiff-test", Component: "test",
			Parse:    func([]string) (string, error) { return "info", parseErr },
			LogLevel: func(o string) string { return o },
			Run:      func(context.Context, string, *zap.Logger) error { return runErr },
		}
	}
	cases := []struct {
		name            string
		parseErr, runEr error
		want            int
	}{
		{"clean stop", nil, nil, 0},
		{"--help", flag.ErrHelp, nil, 0},
		{"bad flags", errors.New("--x: bad"), nil, 2},
		{"failure", nil, errors.New("lost the lease"), 1},
	}
	for _, tc := range cases {
		if got := run(spec(tc.parseErr, tc.runEr), nil); got != tc.want {
			t.Errorf("%s: exit %d, want %d", tc.name, got, tc.want)
		}
	}
}
