package app

import (
	"io"
	"strings"
	"testing"
	"time"
)

func TestEvictionFlags(t *testing.T) {
	o, err := ParseFlags([]string{"--node-name", "n1"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if len(o.EvictionHard) != 1 || o.EvictionHard[0].String() != "memory.available<100Mi" ||
		o.EvictionMonitoringInterval != 10*time.Second || o.EvictionPressureTransitionPeriod != 5*time.Minute {
		t.Errorf("defaults: %v every %v, transition %v", o.EvictionHard, o.EvictionMonitoringInterval, o.EvictionPressureTransitionPeriod)
	}
	o, err = ParseFlags([]string{"--node-name", "n1", "--eviction-hard", "memory.available<5%", "--eviction-monitoring-interval", "2s"}, io.Discard)
	if err != nil || len(o.EvictionHard) != 1 || o.EvictionHard[0].String() != "memory.available<5%" || o.EvictionMonitoringInterval != 2*time.Second {
		t.Errorf("set: %v every %v (%v)", o.EvictionHard, o.EvictionMonitoringInterval, err)
	}
	if o, err := ParseFlags([]string{"--node-name", "n1", "--eviction-hard="}, io.Discard); err != nil || len(o.EvictionHard) != 0 {
		t.Errorf("empty: %v (%v), want no thresholds", o.EvictionHard, err)
	}
	_, err = ParseFlags([]string{"--node-name", "n1", "--eviction-hard", "nodefs.available<10%"}, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "eviction signal nodefs.available is not supported by Skiff") {
		t.Errorf("nodefs: %v", err)
	}
}
