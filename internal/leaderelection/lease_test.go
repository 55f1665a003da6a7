package leaderelection

import (
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	coordinationv1 "skiff.dev/proto/coordination/v1"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func spec(holder string, seconds int32, transitions int32) *coordinationv1.LeaseSpec {
	s := &coordinationv1.LeaseSpec{
		HolderIdentity:   holder,
		AcquireTime:      timestamppb.New(t0.Add(-time.Hour)),
		RenewTime:        timestamppb.New(t0.Add(-time.Hour)), // the remote clock: never trusted
		LeaseTransitions: proto.Int32(transitions),
	}
	if seconds > 0 {
		s.LeaseDurationSeconds = proto.Int32(seconds)
	}
	return s
}

func TestHeldByOther(t *testing.T) {
	cases := []struct {
		name       string
		spec       *coordinationv1.LeaseSpec
		observedAt time.Time
		now        time.Time
		want       bool
	}{
		{"no lease", nil, t0, t0, false},
		{"released (no holder)", spec("", 15, 1), t0, t0, false},
		{"ours", spec("me", 15, 1), t0, t0, false},
		{"other, seen changing just now", spec("other", 15, 1), t0, t0, true},
		{"other, unchanged for less than its duration", spec("other", 15, 1), t0, t0.Add(14 * time.Second), true},
		{"other, unchanged for its duration", spec("other", 15, 1), t0, t0.Add(15 * time.Second), false},
		{"other, no duration in the record: ours (10s) applies", spec("other", 0, 1), t0, t0.Add(9 * time.Second), true},
		{"other, no duration in the record, expired by ours", spec("other", 0, 1), t0, t0.Add(10 * time.Second), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := heldByOther(tc.spec, tc.observedAt, "me", 10*time.Second, tc.now); got != tc.want {
				t.Errorf("heldByOther() = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestClaim(t *testing.T) {
	cases := []struct {
		name            string
		cur             *coordinationv1.LeaseSpec
		wantAcquire     time.Time
		wantTransitions int32
	}{
		{"new lease", nil, t0, 0},
		{"renewal keeps acquireTime and transitions", spec("me", 2, 3), t0.Add(-time.Hour), 3},
		{"takeover from another holder counts a transition", spec("other", 2, 3), t0, 4},
		{"taking a released lease counts a transition", spec("", 1, 3), t0, 4},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := claim(tc.cur, "me", 1500*time.Millisecond, t0)
			want := &coordinationv1.LeaseSpec{
				HolderIdentity:       "me",
				LeaseDurationSeconds: proto.Int32(2), // 1.5s rounded up
				AcquireTime:          timestamppb.New(tc.wantAcquire),
				RenewTime:            timestamppb.New(t0),
				LeaseTransitions:     proto.Int32(tc.wantTransitions),
			}
			if !proto.Equal(got, want) {
				t.Errorf("claim() = %v, want %v", got, want)
			}
		})
	}
}

func TestReleased(t *testing.T) {
	got := released(spec("me", 15, 3), t0)
	want := &coordinationv1.LeaseSpec{
		LeaseDurationSeconds: proto.Int32(1),
		AcquireTime:          timestamppb.New(t0),
		RenewTime:            timestamppb.New(t0),
		LeaseTransitions:     proto.Int32(3),
	}
	if !proto.Equal(got, want) {
		t.Errorf("released() = %v, want %v", got, want)
	}
}
