package promutil

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

func counter(help string) *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{Name: "things_total", Help: help}, []string{"kind"})
}

func TestRegisterSharesEqualCollectors(t *testing.T) {
	reg := prometheus.NewRegistry()
	first := MustRegister(reg, counter("Things."))
	second := MustRegister(reg, counter("Things."))
	if first != second {
		t.Fatal("a second equal collector was not replaced by the first")
	}
	if _, err := Register(reg, counter("Other help.")); err == nil {
		t.Error("a different collector under the same name registered without error")
	}
	c := counter("Things.")
	if got := MustRegister(nil, c); got != c {
		t.Error("a nil registerer did not return the collector itself")
	}
}
