//go:build !linux

package network

import (
	"errors"
	"runtime"
)

// DefaultRouter fails: routes are only managed on Linux.
func DefaultRouter() (Router, error) {
	return nil, errors.New("managing pod routes needs Linux, not " + runtime.GOOS)
}
