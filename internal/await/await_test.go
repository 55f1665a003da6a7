package await

import (
	"sync/atomic"
	"testing"
	"time"
)

func TestUntilWakesOnPoke(t *testing.T) {
	var s Signal
	var n atomic.Int32
	go func() {
		for n.Load() < 3 {
			n.Add(1)
			s.Poke()
		}
	}()
	start := time.Now()
	s.Until(t, 10*time.Second, "three pokes", nil, func() (bool, string) { return n.Load() >= 3, "fewer" })
	if time.Since(start) > 5*time.Second {
		t.Errorf("Until took %v", time.Since(start))
	}
}
