//go:build !linux

package network

import (
	"errors"
	"runtime"
)

// DefaultOverlay fails: the VXLAN backend is only for Linux.
func DefaultOverlay() (Overlay, error) {
	return nil, errors.New("a VXLAN device needs Linux, not " + runtime.GOOS)
}

// DefaultRouter fails: routes are only managed on Linux.
func DefaultRouter() (Router, error) {
	return nil, errors.New("managing pod routes needs Linux, not " + runtime.GOOS)
}
