//go:build !linux

package proxy

import (
	"errors"

	"sigs.k8s.io/knftables"
)

// openNetns: nftables is Linux's.
func openNetns(string) (knftables.Interface, ConntrackCleaner, func(), error) {
	return nil, nil, nil, errors.New("nftables needs Linux (set Config.NFTables)")
}
