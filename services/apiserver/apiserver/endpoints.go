package apiserver

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net"
	"slices"
	"strconv"
	"time"

	"go.uber.org/zap"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"skiff.dev/internal/apierrors"
	"skiff.dev/internal/client"
	coordinationv1 "skiff.dev/proto/coordination/v1"
	discoveryv1 "skiff.dev/proto/discovery/v1"
	metav1 "skiff.dev/proto/meta/v1"
)

// The kubernetes Service's endpoints list the live control-plane members,
// as Kubernetes' lease endpoint reconciler (--endpoint-reconciler-type=
// lease) does: each apiserver holds a Lease in kube-system (named
// apiserver-<hash of its advertised address>, label
// apiserver.kubernetes.io/identity=kube-apiserver, holderIdentity its
// advertised "ip:port"), renews it every two thirds of its duration
// (EndpointLeaseDuration, 15 s as Kubernetes' master leases' TTL), and at
// each renewal writes the EndpointSlice default/kubernetes with the
// addresses of the leases still live. A member that dies leaves the
// endpoints within a lease duration; one that shuts down removes its lease
// and itself at once. Kubernetes' members all serve on one port: a lease
// on another port than this member's is left out (and logged).

const (
	// DefaultEndpointLeaseDuration is a member's lease's duration.
	DefaultEndpointLeaseDuration = 15 * time.Second
	apiserverIdentityLabel       = "apiserver.kubernetes.io/identity"
	apiserverIdentity            = "kube-apiserver"
)

// endpointLease is this member's lease: its name and holder identity.
func (s *Server) endpointLease() (name, holder string, port int32, err error) {
	addr, port, err := s.advertised()
	if err != nil {
		return "", "", 0, err
	}
	holder = net.JoinHostPort(addr, strconv.Itoa(int(port)))
	sum := sha256.Sum256([]byte(holder))
	return "apiserver-" + hex.EncodeToString(sum[:8]), holder, port, nil
}

func (s *Server) leaseDuration() time.Duration {
	if d := s.cfg.EndpointLeaseDuration; d > 0 {
		return d
	}
	return DefaultEndpointLeaseDuration
}

// reconcileEndpointsLoop renews this member's lease and rewrites the
// kubernetes Service's endpoints until ctx ends, then, unless the
// shutdown is abrupt, removes this member from both.
func (s *Server) reconcileEndpointsLoop(ctx context.Context) {
	t := time.NewTicker(s.leaseDuration() * 2 / 3)
	defer t.Stop()
	for {
		if err := s.reconcileEndpoints(ctx, true); err != nil && ctx.Err() == nil {
			s.log.Warn("renewing the apiserver's endpoint lease", zap.Error(err))
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// reconcileEndpoints renews (live) or deletes (!live) this member's lease,
// then writes the endpoints of the live leases.
func (s *Server) reconcileEndpoints(ctx context.Context, live bool) error {
	name, holder, port, err := s.endpointLease()
	if err != nil {
		return err
	}
	leases := client.Leases(s.loopback)
	now := s.now()
	if live {
		dur := int32(s.leaseDuration() / time.Second)
		lease := &coordinationv1.Lease{
			Metadata: &metav1.ObjectMeta{Namespace: "kube-system", Name: name, Labels: map[string]string{apiserverIdentityLabel: apiserverIdentity}},
			Spec:     &coordinationv1.LeaseSpec{HolderIdentity: holder, LeaseDurationSeconds: &dur, RenewTime: timestamppb.New(now)},
		}
		// A renewal (every tick but the first) reads and updates; a
		// lease not there yet is created.
		err := client.RetryOnConflict(ctx, client.DefaultRetry, func() error {
			cur, err := leases.Get(ctx, "kube-system", name)
			if apierrors.IsNotFound(err) {
				_, err = leases.Create(ctx, lease)
				return err
			}
			if err != nil {
				return err
			}
			cur.Spec = lease.Spec
			_, err = leases.Update(ctx, cur)
			return err
		})
		if err != nil {
			return err
		}
	} else if _, err := leases.Delete(ctx, &metav1.DeleteRequest{Namespace: "kube-system", Name: name}); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	list, err := leases.List(ctx, &metav1.ListOptions{Namespace: "kube-system", LabelSelector: apiserverIdentityLabel + "=" + apiserverIdentity})
	if err != nil {
		return err
	}
	addrs, others := liveMembers(list.GetItems(), now, port)
	if len(others) > 0 {
		s.log.Warn("control-plane members advertise another port than this one's: the kubernetes Service lists one port", zap.Int32("port", port), zap.Strings("others", others))
	}
	if len(addrs) == 0 {
		return nil // the last member leaves: the endpoints stay as they were
	}
	return s.writeKubernetesEndpoints(ctx, addrs, port)
}

// liveMembers are the addresses of the leases live at now on port,
// sorted; others are the live holders on other ports.
func liveMembers(leases []*coordinationv1.Lease, now time.Time, port int32) (addrs, others []string) {
	for _, l := range leases {
		spec := l.GetSpec()
		if spec.GetRenewTime() == nil || l.GetMetadata().GetDeletionTimestamp() != nil {
			continue
		}
		if !now.Before(spec.GetRenewTime().AsTime().Add(time.Duration(spec.GetLeaseDurationSeconds()) * time.Second)) {
			continue
		}
		host, p, err := net.SplitHostPort(spec.GetHolderIdentity())
		if err != nil {
			continue
		}
		if p != strconv.Itoa(int(port)) {
			others = append(others, spec.GetHolderIdentity())
			continue
		}
		addrs = append(addrs, host)
	}
	slices.Sort(addrs)
	return slices.Compact(addrs), others
}

// writeKubernetesEndpoints makes the EndpointSlice default/kubernetes list
// addrs on port, writing only when it differs.
func (s *Server) writeKubernetesEndpoints(ctx context.Context, addrs []string, port int32) error {
	slice := &discoveryv1.EndpointSlice{
		Metadata: &metav1.ObjectMeta{Namespace: "default", Name: kubernetesService, Labels: map[string]string{
			"kubernetes.io/service-name": kubernetesService, "endpointslice.kubernetes.io/managed-by": "skiff-apiserver",
		}},
		AddressType: "IPv4",
		Ports:       []*discoveryv1.EndpointPort{{Name: proto.String("https"), Protocol: proto.String("TCP"), Port: proto.Int32(port)}},
	}
	for _, a := range addrs {
		slice.Endpoints = append(slice.Endpoints, &discoveryv1.Endpoint{Addresses: []string{a}, Conditions: &discoveryv1.EndpointConditions{Ready: proto.Bool(true)}})
	}
	slices := client.EndpointSlices(s.loopback)
	_, err := slices.Create(ctx, slice)
	if apierrors.IsAlreadyExists(err) {
		err = client.RetryOnConflict(ctx, client.DefaultRetry, func() error {
			cur, err := slices.Get(ctx, "default", kubernetesService)
			if err != nil {
				return err
			}
			if sameEndpoints(cur, slice) {
				return nil
			}
			cur.AddressType, cur.Endpoints, cur.Ports = slice.AddressType, slice.Endpoints, slice.Ports
			_, err = slices.Update(ctx, cur)
			return err
		})
	}
	if err != nil {
		return fmt.Errorf("writing the kubernetes Service's EndpointSlice: %w", err)
	}
	return nil
}

func sameEndpoints(a, b *discoveryv1.EndpointSlice) bool {
	return slices.EqualFunc(a.GetEndpoints(), b.GetEndpoints(), func(x, y *discoveryv1.Endpoint) bool { return proto.Equal(x, y) }) &&
		slices.EqualFunc(a.GetPorts(), b.GetPorts(), func(x, y *discoveryv1.EndpointPort) bool { return proto.Equal(x, y) })
}
