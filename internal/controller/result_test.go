package controller

import (
	"errors"
	"fmt"
	"testing"
)

func TestTerminal(t *testing.T) {
	base := errors.New("spec.replicas: must be >= 0")
	cases := []struct {
		name         string
		err          error
		wantTerminal bool
	}{
		{name: "nil", err: nil},
		{name: "plain error", err: base},
		{name: "terminal", err: Terminal(base), wantTerminal: true},
		{name: "terminal, wrapped", err: fmt.Errorf("replicaset %q: %w", "default/web", Terminal(base)), wantTerminal: true},
		{name: "Terminal(nil) is nil", err: Terminal(nil)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := IsTerminal(tc.err); got != tc.wantTerminal {
				t.Fatalf("IsTerminal(%v) = %v, want %v", tc.err, got, tc.wantTerminal)
			}
			if tc.err != nil && !errors.Is(tc.err, base) {
				t.Fatalf("errors.Is(%v, base) = false: Terminal must keep the cause", tc.err)
			}
		})
	}
}
