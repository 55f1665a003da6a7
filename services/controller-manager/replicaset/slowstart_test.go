package replicaset

import (
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
)

func TestSlowStartBatches(t *testing.T) {
	cases := []struct {
		n, initial int
		want       []int
	}{
		{0, 1, nil},
		{1, 1, []int{1}},
		{20, 1, []int{1, 2, 4, 8, 5}},
		{500, 1, []int{1, 2, 4, 8, 16, 32, 64, 128, 245}},
		{7, 0, []int{1, 2, 4}},
		{10, 3, []int{3, 6, 1}},
	}
	for _, tc := range cases {
		if got := slowStartBatches(tc.n, tc.initial); !slices.Equal(got, tc.want) {
			t.Errorf("slowStartBatches(%d, %d) = %v, want %v", tc.n, tc.initial, got, tc.want)
		}
	}
}

func TestSlowStart(t *testing.T) {
	boom := errors.New("boom")
	cases := []struct {
		name       string
		n          int
		failAt     []int // the call numbers (1-based, in start order) that fail
		wantOK     int
		wantCalled int
	}{
		{name: "all succeed", n: 20, wantOK: 20, wantCalled: 20},
		{name: "first call fails: nothing more", n: 20, failAt: []int{1}, wantOK: 0, wantCalled: 1},
		{name: "a failure in the third batch ends it", n: 20, failAt: []int{5}, wantOK: 6, wantCalled: 7},
		{name: "several failures in the last batch", n: 20, failAt: []int{16, 17}, wantOK: 18, wantCalled: 20},
		{name: "large batches are bounded but complete", n: 1000, wantOK: 1000, wantCalled: 1000},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var calls, inFlight, peak atomic.Int64
			var mu sync.Mutex
			ok, err := slowStart(tc.n, 1, func() error {
				cur := inFlight.Add(1)
				defer inFlight.Add(-1)
				mu.Lock()
				peak.Store(max(peak.Load(), cur))
				mu.Unlock()
				if slices.Contains(tc.failAt, int(calls.Add(1))) {
					return boom
				}
				return nil
			})
			if ok != tc.wantOK || int(calls.Load()) != tc.wantCalled {
				t.Errorf("slowStart: %d succeeded of %d calls, want %d of %d", ok, calls.Load(), tc.wantOK, tc.wantCalled)
			}
			if (err != nil) != (len(tc.failAt) > 0) || (err != nil && !errors.Is(err, boom)) {
				t.Errorf("err = %v", err)
			}
			if peak.Load() > maxInFlight {
				t.Errorf("%d calls in flight at once, want at most %d", peak.Load(), maxInFlight)
			}
		})
	}
}
