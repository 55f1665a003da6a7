package program

import (
	"context"
	"errors"
	"flag"
	"strings"
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

// --version prints the program's name and version and exits 0, before
// its flags are parsed (the apiserver has it; the other daemons did not).
func TestVersionFlag(t *testing.T) {
	for _, arg := range []string{"--version", "-version"} {
		parsed := false
		s := Spec[string]{
			Name: "skiff-test", Component: "test",
			Parse: func([]string) (string, error) {
				parsed = true
				return "", errors.New("flag provided but not defined: -version")
			},
			LogLevel: func(o string) string { return o },
			Run:      func(context.Context, string, *zap.Logger) error { return nil },
		}
		var out strings.Builder
		if got := runTo(s, []string{arg}, &out); got != 0 || parsed {
			t.Errorf("%s: exit %d, flags parsed %t", arg, got, parsed)
		}
		if !strings.HasPrefix(out.String(), "skiff-test ") {
			t.Errorf("%s printed %q", arg, out.String())
		}
	}
}
