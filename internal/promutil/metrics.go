// Package promutil holds what every package's metrics.go shares: registering
// a collector on an injected registerer so that several users in one
// process (two controllers, two tests, a second term of leadership) share
// one series instead of failing. It owns no metric itself.
package promutil

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// Register registers c on reg and returns it or, when an equal collector
// (same name, labels and help) is registered there already, that one. A
// nil reg registers nothing and returns c. A different collector under the
// same name is an error.
func Register[C prometheus.Collector](reg prometheus.Registerer, c C) (C, error) {
	if reg == nil {
		return c, nil
	}
	err := reg.Register(c)
	if err == nil {
		return c, nil
	}
	var are prometheus.AlreadyRegisteredError
	if errors.As(err, &are) {
		if existing, ok := are.ExistingCollector.(C); ok {
			return existing, nil
		}
	}
	var zero C
	return zero, err
}

// MustRegister is Register for collectors whose definition is fixed in the
// code: an error there is a programming error, and it panics.
func MustRegister[C prometheus.Collector](reg prometheus.Registerer, c C) C {
	c, err := Register(reg, c)
	if err != nil {
		panic(err)
	}
	return c
}
