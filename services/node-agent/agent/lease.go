package agent

import (
	"context"
	"fmt"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"skiff.dev/internal/apierrors"
	coordinationv1 "skiff.dev/proto/coordination/v1"
	metav1 "skiff.dev/proto/meta/v1"
)

// renewLease writes the node's heartbeat: the Lease kube-node-lease/<node>
// with renewTime now, created (owned by the Node, so that it goes with it)
// when missing. The Lease last written is kept, so a renewal is one
// Update; a conflict reads it again.
func (a *Agent) renewLease(ctx context.Context) error {
	now := timestamppb.New(a.cfg.Clock.Now())
	seconds := int32((a.cfg.LeaseDuration + 999_999_999) / 1_000_000_000)
	spec := func(cur *coordinationv1.LeaseSpec) *coordinationv1.LeaseSpec {
		s := &coordinationv1.LeaseSpec{HolderIdentity: a.cfg.NodeName, LeaseDurationSeconds: proto.Int32(seconds), RenewTime: now}
		if cur != nil {
			s.AcquireTime, s.LeaseTransitions = cur.GetAcquireTime(), cur.LeaseTransitions
		}
		return s
	}
	for attempt := 0; attempt < 3; attempt++ {
		a.mu.Lock()
		cur := a.lease
		a.mu.Unlock()
		if cur == nil {
			got, err := a.leases.Get(ctx, NodeLeaseNamespace, a.cfg.NodeName)
			switch {
			case apierrors.IsNotFound(err):
				l := &coordinationv1.Lease{
					Metadata: &metav1.ObjectMeta{Name: a.cfg.NodeName, Namespace: NodeLeaseNamespace, OwnerReferences: a.nodeOwner()},
					Spec:     spec(nil),
				}
				l.Spec.AcquireTime = now
				created, err := a.leases.Create(ctx, l)
				if apierrors.IsAlreadyExists(err) {
					continue
				}
				if err != nil {
					return fmt.Errorf("creating lease: %w", err)
				}
				a.setLease(created)
				return nil
			case err != nil:
				return fmt.Errorf("reading lease: %w", err)
			}
			cur = got
		}
		next := proto.Clone(cur).(*coordinationv1.Lease)
		next.Spec = spec(cur.GetSpec())
		if len(next.GetMetadata().GetOwnerReferences()) == 0 {
			next.Metadata.OwnerReferences = a.nodeOwner()
		}
		written, err := a.leases.Update(ctx, next)
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			a.setLease(nil)
			continue
		}
		if err != nil {
			return fmt.Errorf("renewing lease: %w", err)
		}
		a.setLease(written)
		return nil
	}
	return fmt.Errorf("renewing lease: it kept changing under the agent")
}

func (a *Agent) setLease(l *coordinationv1.Lease) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.lease = l
}

func (a *Agent) nodeOwner() []*metav1.OwnerReference {
	a.mu.Lock()
	uid := a.nodeUID
	a.mu.Unlock()
	if uid == "" {
		return nil
	}
	return []*metav1.OwnerReference{{ApiVersion: "v1", Kind: "Node", Name: a.cfg.NodeName, Uid: uid}}
}
