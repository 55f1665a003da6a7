package storage

import (
	"context"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"skiff.dev/internal/apierrors"
	corev1 "skiff.dev/proto/core/v1"
)

// leaderlessKV answers reads with etcd's leader-change errors a number of
// times, then that the key does not exist. (A leader change cannot be made to happen on
// cue in a real etcd: the storage's answer to it is what is tested here;
// the bench's ha scenario kills real leaders.)
type leaderlessKV struct {
	clientv3.KV
	failures int
	calls    int
}

func (kv *leaderlessKV) Get(ctx context.Context, key string, _ ...clientv3.OpOption) (*clientv3.GetResponse, error) {
	kv.calls++
	if kv.calls <= kv.failures {
		if kv.calls%2 == 0 {
			return nil, rpctypes.ErrLeaderChanged
		}
		return nil, rpctypes.ErrNoLeader
	}
	return &clientv3.GetResponse{}, nil // no such key
}

// TestReadsWaitForALeader: a read that meets an election is asked again
// until etcd has a leader; one that still has none after leaderWait is
// ServiceUnavailable (a client retries it), not Internal.
func TestReadsWaitForALeader(t *testing.T) {
	kv := &leaderlessKV{failures: 3}
	s := New(&clientv3.Client{KV: kv}, ClientWatcher{}, "", "configmaps", func() *corev1.ConfigMap { return &corev1.ConfigMap{} }, nil)
	if _, err := s.Get(context.Background(), s.Prefix()+"default/a", "a"); !apierrors.IsNotFound(err) || kv.calls != 4 {
		t.Fatalf("a get through an election: %v after %d calls, want etcd's answer (not found) on the 4th", err, kv.calls)
	}
	kv = &leaderlessKV{failures: 1 << 30}
	s = New(&clientv3.Client{KV: kv}, ClientWatcher{}, "", "configmaps", func() *corev1.ConfigMap { return &corev1.ConfigMap{} }, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if _, err := s.Get(ctx, s.Prefix()+"default/a", "a"); !apierrors.IsServiceUnavailable(err) {
		t.Fatalf("a get without a leader: %v, want ServiceUnavailable", err)
	}
}
