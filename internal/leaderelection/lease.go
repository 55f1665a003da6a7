package leaderelection

import (
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	coordinationv1 "skiff.dev/proto/coordination/v1"
)

// The decisions on a Lease record are pure functions of the record read and
// of this process's clock; elector.go does the reads and writes.

// leaseDuration is the record's duration, or fallback when it has none.
func leaseDuration(spec *coordinationv1.LeaseSpec, fallback time.Duration) time.Duration {
	if s := spec.GetLeaseDurationSeconds(); s > 0 {
		return time.Duration(s) * time.Second
	}
	return fallback
}

// heldByOther reports whether spec names another holder whose lease is
// still valid: the record last changed, as this process saw it, at
// observedAt, less than its duration before now. An empty holder is a
// released lease.
func heldByOther(spec *coordinationv1.LeaseSpec, observedAt time.Time, identity string, fallback time.Duration, now time.Time) bool {
	holder := spec.GetHolderIdentity()
	return holder != "" && holder != identity && now.Before(observedAt.Add(leaseDuration(spec, fallback)))
}

// claim returns the spec that makes identity the holder at now: a renewal
// keeps acquireTime and leaseTransitions, a change of holder sets
// acquireTime and counts a transition. The caller has checked heldByOther.
func claim(cur *coordinationv1.LeaseSpec, identity string, d time.Duration, now time.Time) *coordinationv1.LeaseSpec {
	ts := timestamppb.New(now)
	next := &coordinationv1.LeaseSpec{
		HolderIdentity:       identity,
		LeaseDurationSeconds: proto.Int32(seconds(d)),
		AcquireTime:          cur.GetAcquireTime(),
		RenewTime:            ts,
		LeaseTransitions:     proto.Int32(cur.GetLeaseTransitions()),
	}
	if cur == nil {
		next.AcquireTime = ts
		return next
	}
	if cur.GetHolderIdentity() != identity {
		next.AcquireTime = ts
		next.LeaseTransitions = proto.Int32(cur.GetLeaseTransitions() + 1)
	}
	return next
}

// released returns the spec a leader writes when it steps down: no holder,
// so that any candidate may take the lease at once.
func released(cur *coordinationv1.LeaseSpec, now time.Time) *coordinationv1.LeaseSpec {
	ts := timestamppb.New(now)
	return &coordinationv1.LeaseSpec{
		HolderIdentity:       "",
		LeaseDurationSeconds: proto.Int32(1),
		AcquireTime:          ts,
		RenewTime:            ts,
		LeaseTransitions:     proto.Int32(cur.GetLeaseTransitions()),
	}
}

// seconds rounds d up to whole seconds: a longer lease is the safe side.
func seconds(d time.Duration) int32 {
	return int32((d + time.Second - 1) / time.Second)
}
