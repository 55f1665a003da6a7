package allocator_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"skiff.dev/services/apiserver/allocator"
	"skiff.dev/services/apiserver/apiservertest"
)

func mustIPRange(t *testing.T, cidr string) *allocator.IPRange {
	t.Helper()
	r, err := allocator.ParseIPRange(cidr)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestConcurrentAllocationsNeverTwice: two pools (two apiservers) over one
// etcd hand out every address of a /26 exactly once under 62 concurrent
// allocations, then say the range is full; a pool started afterwards (a
// restart) sees the allocations.
func TestConcurrentAllocationsNeverTwice(t *testing.T) {
	s := apiservertest.Start(t)
	ctx := context.Background()
	r := mustIPRange(t, "10.100.0.0/26") // 62 addresses
	pools := []*allocator.Pool{
		allocator.NewPool(s.EtcdClient(), "/test/ips/", r),
		allocator.NewPool(s.EtcdClient(), "/test/ips/", r),
	}
	var mu sync.Mutex
	got := map[string]string{}
	var wg sync.WaitGroup
	for i := range r.Size() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			owner := fmt.Sprint("owner-", i)
			ip, err := pools[i%2].Allocate(ctx, owner)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				t.Errorf("%s: %v", owner, err)
				return
			}
			if prev, ok := got[ip]; ok {
				t.Errorf("%s allocated to %s and %s", ip, prev, owner)
			}
			got[ip] = owner
		}()
	}
	wg.Wait()
	if len(got) != r.Size() {
		t.Fatalf("%d addresses allocated, want %d", len(got), r.Size())
	}
	for _, edge := range []string{"10.100.0.0", "10.100.0.63"} {
		if _, ok := got[edge]; ok {
			t.Errorf("allocated %s, the network or broadcast address", edge)
		}
	}
	if _, err := pools[0].Allocate(ctx, "late"); !errors.Is(err, allocator.ErrFull) {
		t.Fatalf("allocating from a full range: %v, want ErrFull", err)
	}
	restarted := allocator.NewPool(s.EtcdClient(), "/test/ips/", r)
	if _, err := restarted.Allocate(ctx, "late"); !errors.Is(err, allocator.ErrFull) {
		t.Fatalf("after a restart: %v, want ErrFull", err)
	}
	stored, err := restarted.Allocated(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for ip, owner := range got {
		if stored[ip] != owner {
			t.Errorf("%s: stored owner %q, allocated to %q", ip, stored[ip], owner)
		}
	}
	// A release frees the address for the next allocation, on any pool.
	if err := pools[1].Release(ctx, "10.100.0.7", got["10.100.0.7"]); err != nil {
		t.Fatal(err)
	}
	if ip, err := restarted.Allocate(ctx, "next"); err != nil || ip != "10.100.0.7" {
		t.Fatalf("after a release: %q, %v; want 10.100.0.7", ip, err)
	}
}

func TestAllocateItemAndRelease(t *testing.T) {
	s := apiservertest.Start(t)
	ctx := context.Background()
	pool := allocator.NewPool(s.EtcdClient(), "/test/ports/", &allocator.PortRange{Base: 30000, Max: 30009})
	if err := pool.AllocateItem(ctx, "30005", "a"); err != nil {
		t.Fatal(err)
	}
	if err := pool.AllocateItem(ctx, "30005", "a"); err != nil {
		t.Fatalf("the owner asking again: %v", err)
	}
	if err := pool.AllocateItem(ctx, "30005", "b"); !errors.Is(err, allocator.ErrAllocated) {
		t.Fatalf("another owner: %v, want ErrAllocated", err)
	}
	var nr *allocator.ErrNotInRange
	if err := pool.AllocateItem(ctx, "8080", "b"); !errors.As(err, &nr) || nr.Error() != "8080 is not in the valid range 30000-30009" {
		t.Fatalf("out of range: %v", err)
	}
	if err := pool.Release(ctx, "30005", "b"); err != nil {
		t.Fatal(err)
	}
	if err := pool.AllocateItem(ctx, "30005", "b"); !errors.Is(err, allocator.ErrAllocated) {
		t.Fatalf("released by another owner, then: %v; want still allocated", err)
	}
	if err := pool.Release(ctx, "30005", "a"); err != nil {
		t.Fatal(err)
	}
	if err := pool.AllocateItem(ctx, "30005", "b"); err != nil {
		t.Fatalf("released by its owner, then: %v", err)
	}
}

// TestReservedItemsAreNotHandedOut: Allocate never picks a reserved item
// (a service range's first address is the kubernetes Service's).
func TestReservedItemsAreNotHandedOut(t *testing.T) {
	s := apiservertest.Start(t)
	ctx := context.Background()
	r := mustIPRange(t, "10.100.0.0/29") // 6 addresses
	pool := allocator.NewPool(s.EtcdClient(), "/test/res/", r, 0)
	for range r.Size() - 1 {
		ip, err := pool.Allocate(ctx, "x")
		if err != nil || ip == "10.100.0.1" {
			t.Fatalf("allocated %q, %v", ip, err)
		}
	}
	if _, err := pool.Allocate(ctx, "x"); !errors.Is(err, allocator.ErrFull) {
		t.Fatalf("got %v, want ErrFull with only the reserved address left", err)
	}
	if err := pool.AllocateItem(ctx, "10.100.0.1", "kubernetes"); err != nil {
		t.Fatalf("asking for the reserved address: %v", err)
	}
}

// TestRepairFreesWhatNoOwnerHoldsOnTheSecondPass: a leaked allocation is
// freed only when two passes in a row find it unheld; an owner's item the
// pool lacks is recorded; an item two owners claim is a conflict.
func TestRepairFreesWhatNoOwnerHoldsOnTheSecondPass(t *testing.T) {
	s := apiservertest.Start(t)
	ctx := context.Background()
	pool := allocator.NewPool(s.EtcdClient(), "/test/repair/", &allocator.PortRange{Base: 30000, Max: 30009})
	for item, owner := range map[string]string{"30000": "svc-a", "30001": "leaked", "30002": "svc-b"} {
		if err := pool.AllocateItem(ctx, item, owner); err != nil {
			t.Fatal(err)
		}
	}
	held := map[string]string{"30000": "svc-a", "30002": "svc-c", "30003": "svc-d"}
	rep := allocator.NewRepairer(pool)
	pass := func() allocator.Report {
		t.Helper()
		allocated, err := pool.Allocated(ctx)
		if err != nil {
			t.Fatal(err)
		}
		r, err := rep.Repair(ctx, allocated, held)
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(r.Freed)
		return r
	}
	first := pass()
	if len(first.Freed) != 0 || !slices.Equal(first.Recorded, []string{"30003"}) || !slices.Equal(first.Conflicts, []string{"30002"}) {
		t.Fatalf("first pass: %+v; want nothing freed, 30003 recorded, 30002 a conflict", first)
	}
	second := pass()
	// 30002 is held by svc-b in the pool while svc-c claims it: svc-b's
	// allocation is unheld, so it is freed on the second pass, and the
	// third records svc-c's.
	if !slices.Equal(second.Freed, []string{"30001", "30002"}) {
		t.Fatalf("second pass freed %v, want 30001 and 30002", second.Freed)
	}
	third := pass()
	if !slices.Equal(third.Recorded, []string{"30002"}) || len(third.Freed) != 0 || len(third.Conflicts) != 0 {
		t.Fatalf("third pass: %+v", third)
	}
	got, _ := pool.Allocated(ctx)
	want := map[string]string{"30000": "svc-a", "30002": "svc-c", "30003": "svc-d"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("allocations %v, want %v", got, want)
	}
}

func TestRanges(t *testing.T) {
	r := mustIPRange(t, "10.96.0.0/16")
	if r.Size() != 65534 || r.Item(0) != "10.96.0.1" || r.Item(65533) != "10.96.255.254" {
		t.Fatalf("10.96.0.0/16: size %d, first %s, last %s", r.Size(), r.Item(0), r.Item(r.Size()-1))
	}
	if i, ok := r.Index("10.96.1.0"); !ok || i != 255 {
		t.Fatalf("Index(10.96.1.0) = %d, %v", i, ok)
	}
	for _, out := range []string{"10.96.0.0", "10.96.255.255", "10.97.0.1", "fd00::1", "x"} {
		if _, ok := r.Index(out); ok {
			t.Errorf("%s in range", out)
		}
	}
	for _, bad := range []string{"10.0.0.0/8", "fd00::/112", "10.96.0.0/31", "10.96.0.0"} {
		if _, err := allocator.ParseIPRange(bad); err == nil {
			t.Errorf("ParseIPRange(%q) accepted", bad)
		}
	}
	for _, bad := range []string{"32767-30000", "0-10", "30000-70000", "a-b"} {
		if _, err := allocator.ParsePortRange(bad); err == nil {
			t.Errorf("ParsePortRange(%q) accepted", bad)
		}
	}
}
