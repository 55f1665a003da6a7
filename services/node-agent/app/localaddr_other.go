//go:build !linux

package app

import (
	"errors"
	"net/netip"
	"runtime"
)

func ensureLocalAddress(netip.Addr) error {
	return errors.New("adding a local address needs Linux, not " + runtime.GOOS + " (give --dns-listen an address the machine has)")
}
