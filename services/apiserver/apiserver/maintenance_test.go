package apiserver

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	clientv3 "go.etcd.io/etcd/client/v3"

	"skiff.dev/services/apiserver/storage"
)

// TestCompactionAndDefragmentation drives the maintenance steps the
// periodic loop runs: the first tick notes the revision, the next compacts
// everything older than it and defragments.
func TestCompactionAndDefragmentation(t *testing.T) {
	s, err := New(Config{DataDir: t.TempDir(), Listen: "127.0.0.1:0", EtcdUnsafeNoFsync: true, DefragThreshold: -1})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- s.Run(runCtx) }()
	defer func() { stop(); <-done }()

	put := func(v string) int64 {
		resp, err := s.client.Put(ctx, "/registry/test/x", v)
		if err != nil {
			t.Fatal(err)
		}
		return resp.Header.Revision
	}
	first := put("1")
	put("1b")
	noted := s.compact(ctx, 0) // first tick: nothing compacted yet
	if n := testutil.ToFloat64(s.maint.compactions); n != 0 {
		t.Fatalf("first tick compacted (%v)", n)
	}
	put("2")
	s.compact(ctx, noted)
	if n := testutil.ToFloat64(s.maint.compactions); n != 1 {
		t.Fatalf("compactions = %v, want 1", n)
	}
	if _, err := s.client.Get(ctx, "/registry/test/x", clientv3.WithRev(first)); !storage.IsCompacted(err) {
		t.Fatalf("revision %d still readable after compaction to %d: %v", first, noted, err)
	}
	if n := testutil.ToFloat64(s.maint.defrags); n != 1 {
		t.Fatalf("defragmentations = %v, want 1 (threshold: always)", n)
	}
	s.measure(ctx)
	if size := testutil.ToFloat64(s.maint.dbSize.WithLabelValues("allocated")); size <= 0 {
		t.Fatalf("database size metric = %v", size)
	}
}

func TestShouldDefrag(t *testing.T) {
	cases := []struct {
		name            string
		free, threshold int64
		want            bool
	}{
		{"enough free", 64 << 20, 64 << 20, true},
		{"not enough free", 1 << 20, 64 << 20, false},
		{"nothing free", 0, 1, false},
		{"always", 0, -1, true},
	}
	for _, c := range cases {
		if got := shouldDefrag(c.free, c.threshold); got != c.want {
			t.Errorf("%s: shouldDefrag(%d, %d) = %v, want %v", c.name, c.free, c.threshold, got, c.want)
		}
	}
}
