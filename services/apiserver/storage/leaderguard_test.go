package storage

import (
	"context"
	"errors"
	"testing"
	"time"

	"skiff.dev/internal/apierrors"
	corev1 "skiff.dev/proto/core/v1"
)

// TestLeaderGuard: a write in flight when the leader changes is ended
// Grace later, with the cause the store answers as Timeout; a write that
// finished, and one sent after the change, are not touched.
func TestLeaderGuard(t *testing.T) {
	g := &LeaderGuard{Grace: 10 * time.Millisecond}
	lost, doneLost := g.begin(context.Background())
	finished, doneFinished := g.begin(context.Background())
	doneFinished()
	g.LeaderChanged()
	after, doneAfter := g.begin(context.Background())
	defer doneAfter()
	select {
	case <-lost.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the write in flight at the change was not ended")
	}
	doneLost()
	if !errors.Is(context.Cause(lost), errLeaderLost) {
		t.Errorf("cause %v, want errLeaderLost", context.Cause(lost))
	}
	if after.Err() != nil {
		t.Error("a write sent after the change was ended")
	}
	if errors.Is(context.Cause(finished), errLeaderLost) {
		t.Error("a finished write was ended as lost")
	}
	s := New[*corev1.ConfigMap](nil, ClientWatcher{}, "", "configmaps", nil, nil)
	if err := s.writeError(lost, errors.New("etcdserver: request cancelled")); apierrors.ReasonForError(err) != apierrors.ReasonTimeout {
		t.Errorf("the store's answer: %v, want Timeout", err)
	}
	// Without a guard nothing is registered.
	var none *LeaderGuard
	ctx := context.Background()
	if got, done := none.begin(ctx); got != ctx {
		t.Error("a nil guard wrapped the context")
	} else {
		done()
	}
}
