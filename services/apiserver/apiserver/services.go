package apiserver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"time"

	"go.uber.org/zap"
	"google.golang.org/protobuf/proto"

	"skiff.dev/internal/apierrors"
	"skiff.dev/internal/client"
	"skiff.dev/internal/field"
	"skiff.dev/internal/hostaddr"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/apiserver/allocator"
	"skiff.dev/services/apiserver/registry"
)

// Defaults of the Service ranges, as Kubernetes'.
const (
	DefaultServiceClusterIPRange = "10.96.0.0/16"
	DefaultServiceNodePortRange  = "30000-32767"
	// DefaultServiceRepairInterval is how often allocations no Service
	// holds are looked for (Kubernetes' repair loops: 3 minutes).
	DefaultServiceRepairInterval = 3 * time.Minute
)

// Keys of the allocations in etcd: one key per allocated item.
const (
	serviceIPsPrefix       = "/registry/ranges/serviceips/"
	serviceNodePortsPrefix = "/registry/ranges/servicenodeports/"
)

// The kubernetes Service: in default, the first address of the range,
// port 443 to the apiservers.
const (
	kubernetesService     = "kubernetes"
	kubernetesServicePort = 443
)

// services allocates Services' cluster IPs and node ports (the Service
// strategy's Allocate, PrepareForUpdate and Release) and repairs the
// allocations.
type services struct {
	ips, ports   *allocator.Pool
	ipRepair     *allocator.Repairer
	portRepair   *allocator.Repairer
	log          *zap.Logger
	kubernetesIP string
}

func newServices(s *Server) (*services, error) {
	ipRange, err := allocator.ParseIPRange(s.cfg.ServiceClusterIPRange)
	if err != nil {
		return nil, fmt.Errorf("--service-cluster-ip-range %w", err)
	}
	portRange, err := allocator.ParsePortRange(s.cfg.ServiceNodePortRange)
	if err != nil {
		return nil, fmt.Errorf("--service-node-port-range %w", err)
	}
	sv := &services{
		ips:          allocator.NewPool(s.client, serviceIPsPrefix, ipRange, 0),
		ports:        allocator.NewPool(s.client, serviceNodePortsPrefix, portRange),
		log:          s.log,
		kubernetesIP: ipRange.Item(0),
	}
	sv.ipRepair, sv.portRepair = allocator.NewRepairer(sv.ips), allocator.NewRepairer(sv.ports)
	return sv, nil
}

// strategy adds the allocations to the Service's strategy.
func (sv *services) strategy(st *registry.Strategy[*corev1.Service]) {
	st.Allocate = sv.allocate
	st.PrepareForUpdate = keepAllocated
	st.Release = sv.release
}

func needsClusterIP(s *corev1.Service) bool {
	return s.GetSpec().GetType() != "ExternalName" && s.GetSpec().GetClusterIp() != "None"
}

func needsNodePorts(s *corev1.Service) bool {
	switch sp := s.GetSpec(); sp.GetType() {
	case "NodePort":
		return true
	case "LoadBalancer":
		return sp.AllocateLoadBalancerNodePorts == nil || sp.GetAllocateLoadBalancerNodePorts()
	}
	return false
}

// keepAllocated keeps, in an update that omits them, the cluster IP, IP
// families and node ports the Service was given, as Kubernetes' update
// does (an applied manifest rarely names them).
func keepAllocated(next, old *corev1.Service) {
	n, o := next.GetSpec(), old.GetSpec()
	if n == nil || o == nil {
		return
	}
	if needsClusterIP(old) && needsClusterIP(next) {
		if n.ClusterIp == "" {
			n.ClusterIp = o.ClusterIp
		}
		if len(n.ClusterIps) == 0 {
			n.ClusterIps = o.ClusterIps
		}
	}
	if old.GetSpec().GetType() != "ExternalName" && next.GetSpec().GetType() != "ExternalName" {
		if len(n.IpFamilies) == 0 {
			n.IpFamilies = o.IpFamilies
		}
		if n.IpFamilyPolicy == nil {
			n.IpFamilyPolicy = o.IpFamilyPolicy
		}
	}
	if needsNodePorts(old) && needsNodePorts(next) {
		used := map[int32]bool{}
		for _, p := range n.Ports {
			used[p.GetNodePort()] = true
		}
		byName := map[string]int32{}
		for _, p := range o.Ports {
			byName[p.GetName()] = p.GetNodePort()
		}
		for _, p := range n.Ports {
			if p.NodePort == 0 && !used[byName[p.GetName()]] {
				p.NodePort = byName[p.GetName()]
			}
		}
	}
}

// allocate gives svc its cluster IP and node ports: those it asks for
// (refused with the field when taken or outside the range), else free
// ones. done undoes the new allocations when svc was not stored, or
// frees what old held and svc no longer does when it was.
func (sv *services) allocate(ctx context.Context, svc, old *corev1.Service) (func(bool), error) {
	owner := svc.GetMetadata().GetUid()
	var taken []heldItem // allocated by this call
	undo := func() {
		for _, h := range taken {
			h.release(ctx, sv, owner)
		}
	}
	fail := func(err error) (func(bool), error) {
		undo()
		return nil, err
	}
	before := map[heldItem]bool{}
	for _, h := range heldBy(old) {
		before[h] = true
	}
	sp := svc.GetSpec()
	p := field.NewPath("spec")
	switch {
	case needsClusterIP(svc):
		ip := sp.ClusterIp
		if ip == "" {
			got, err := sv.ips.Allocate(ctx, owner)
			if err != nil {
				return fail(apierrors.NewInternal(fmt.Errorf("failed to allocate a serviceIP: %w", err)))
			}
			ip = got
			taken = append(taken, heldItem{ip: ip})
		} else if !before[heldItem{ip: ip}] {
			if err := sv.ips.AllocateItem(ctx, ip, owner); err != nil {
				return fail(allocationError(svc, p.Child("clusterIPs").Index(0), ip, "IP", sv.ips.Range(), err))
			}
			taken = append(taken, heldItem{ip: ip})
		}
		sp.ClusterIp, sp.ClusterIps = ip, []string{ip}
		setSingleStack(sp)
	case sp.ClusterIp == "None":
		sp.ClusterIps = []string{"None"}
		setSingleStack(sp)
	}
	if needsNodePorts(svc) {
		byPort := map[int32]int32{} // service port -> node port, shared by its protocols
		for _, port := range sp.Ports {
			if port.NodePort != 0 {
				byPort[port.Port] = port.NodePort
			}
		}
		mine := map[int32]bool{}
		for i, port := range sp.Ports {
			np := port.NodePort
			if np == 0 {
				np = byPort[port.Port]
			}
			if np != 0 && (mine[np] || before[heldItem{port: np}]) {
				port.NodePort = np
				continue
			}
			if np == 0 {
				got, err := sv.ports.Allocate(ctx, owner)
				if err != nil {
					return fail(apierrors.NewInternal(fmt.Errorf("failed to allocate a nodePort: %w", err)))
				}
				n, _ := strconv.Atoi(got)
				np = int32(n)
			} else if err := sv.ports.AllocateItem(ctx, strconv.Itoa(int(np)), owner); err != nil {
				return fail(allocationError(svc, p.Child("ports").Index(i).Child("nodePort"), np, "port", sv.ports.Range(), err))
			}
			taken = append(taken, heldItem{port: np})
			mine[np], byPort[port.Port], port.NodePort = true, np, np
		}
	} else {
		for _, port := range sp.Ports {
			port.NodePort = 0
		}
	}
	return func(stored bool) {
		if !stored {
			undo()
			return
		}
		now := map[heldItem]bool{}
		for _, h := range heldBy(svc) {
			now[h] = true
		}
		for h := range before {
			if !now[h] {
				h.release(ctx, sv, owner)
			}
		}
	}, nil
}

func setSingleStack(sp *corev1.ServiceSpec) {
	if len(sp.IpFamilies) == 0 {
		sp.IpFamilies = []string{"IPv4"}
	}
	if sp.IpFamilyPolicy == nil {
		sp.IpFamilyPolicy = proto.String("SingleStack")
	}
}

// allocationError is Kubernetes' refusal of a value a Service asks for.
func allocationError(svc *corev1.Service, p *field.Path, v any, what string, r allocator.Range, err error) error {
	var nr *allocator.ErrNotInRange
	var detail string
	switch {
	case errors.Is(err, allocator.ErrAllocated):
		detail = fmt.Sprintf("provided %s is already allocated", what)
	case errors.As(err, &nr):
		detail = fmt.Sprintf("provided %s is not in the valid range. The range of valid %ss is %s", what, what, r)
	default:
		return apierrors.NewInternal(err)
	}
	if what == "IP" {
		detail = fmt.Sprintf("failed to allocate IP %v: %s", v, detail)
	}
	return apierrors.NewInvalid("Service", svc.GetMetadata().GetName(), field.ErrorList{field.Invalid(p, v, detail)})
}

// heldItem is one allocation of a Service: a cluster IP or a node port.
type heldItem struct {
	ip   string
	port int32
}

func (h heldItem) release(ctx context.Context, sv *services, owner string) {
	var err error
	if h.ip != "" {
		err = sv.ips.Release(ctx, h.ip, owner)
	} else {
		err = sv.ports.Release(ctx, strconv.Itoa(int(h.port)), owner)
	}
	if err != nil {
		// The repair loop frees it later.
		sv.log.Warn("releasing a Service allocation failed", zap.Any("item", h), zap.Error(err))
	}
}

// heldBy is what s holds: its cluster IP and node ports.
func heldBy(s *corev1.Service) []heldItem {
	if s == nil {
		return nil
	}
	var out []heldItem
	if needsClusterIP(s) && s.GetSpec().GetClusterIp() != "" {
		out = append(out, heldItem{ip: s.GetSpec().GetClusterIp()})
	}
	for _, p := range s.GetSpec().GetPorts() {
		if p.GetNodePort() != 0 {
			out = append(out, heldItem{port: p.GetNodePort()})
		}
	}
	return out
}

// release frees what a deleted Service held.
func (sv *services) release(ctx context.Context, svc *corev1.Service) {
	for _, h := range heldBy(svc) {
		h.release(ctx, sv, svc.GetMetadata().GetUid())
	}
}

// repair runs one pass of both repair loops: allocations are read first,
// then the Services, so that a Service stored in between counts as
// holding its allocation.
func (sv *services) repair(ctx context.Context, list func(context.Context) ([]*corev1.Service, error)) error {
	ips, err := sv.ips.Allocated(ctx)
	if err != nil {
		return err
	}
	ports, err := sv.ports.Allocated(ctx)
	if err != nil {
		return err
	}
	svcs, err := list(ctx)
	if err != nil {
		return err
	}
	heldIPs, heldPorts := map[string]string{}, map[string]string{}
	for _, s := range svcs {
		for _, h := range heldBy(s) {
			if h.ip != "" {
				heldIPs[h.ip] = s.GetMetadata().GetUid()
			} else {
				heldPorts[strconv.Itoa(int(h.port))] = s.GetMetadata().GetUid()
			}
		}
	}
	for _, r := range []struct {
		what      string
		rep       *allocator.Repairer
		allocated map[string]string
		held      map[string]string
	}{{"cluster IP", sv.ipRepair, ips, heldIPs}, {"node port", sv.portRepair, ports, heldPorts}} {
		rep, err := r.rep.Repair(ctx, r.allocated, r.held)
		if err != nil {
			return err
		}
		if len(rep.Freed)+len(rep.Recorded)+len(rep.Conflicts) > 0 {
			sv.log.Info("service allocations repaired", zap.String("of", r.what),
				zap.Strings("freed", rep.Freed), zap.Strings("recorded", rep.Recorded), zap.Strings("conflicts", rep.Conflicts))
		}
	}
	return nil
}

// repairLoop repairs at start and every interval until ctx ends.
func (s *Server) repairServices(ctx context.Context) {
	interval := s.cfg.ServiceRepairInterval
	if interval <= 0 {
		interval = DefaultServiceRepairInterval
	}
	list := func(ctx context.Context) ([]*corev1.Service, error) {
		l, err := client.Services(s.loopback).List(ctx, &metav1.ListOptions{})
		return l.GetItems(), err
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if err := s.services.repair(ctx, list); err != nil && ctx.Err() == nil {
			s.log.Warn("repairing service allocations failed", zap.Error(err))
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// kubernetesServiceHook creates the kubernetes Service in default, at the
// first address of the range, and its EndpointSlice naming the live
// members' advertised addresses (endpoints.go).
func (s *Server) kubernetesServiceHook() postStartHook {
	return postStartHook{name: "kubernetes-service", run: func(ctx context.Context) error {
		_, port, err := s.advertised()
		if err != nil {
			return err
		}
		labels := map[string]string{"component": "apiserver", "provider": "kubernetes"}
		svc := &corev1.Service{
			Metadata: &metav1.ObjectMeta{Namespace: "default", Name: kubernetesService, Labels: labels},
			Spec: &corev1.ServiceSpec{ClusterIp: s.services.kubernetesIP, Ports: []*corev1.ServicePort{{
				Name: "https", Protocol: "TCP", Port: kubernetesServicePort,
				TargetPort: &metav1.IntOrString{Value: &metav1.IntOrString_IntVal{IntVal: port}},
			}}},
		}
		svcs := client.Services(s.loopback)
		_, err = svcs.Get(ctx, "default", kubernetesService)
		if apierrors.IsNotFound(err) {
			_, err = svcs.Create(ctx, svc)
		}
		if err != nil && !apierrors.IsAlreadyExists(err) { // another member's, created meanwhile
			return fmt.Errorf("creating the kubernetes Service: %w", err)
		}
		// Its endpoints: this member's lease, and the live members'
		// addresses (endpoints.go), renewed by reconcileEndpointsLoop.
		return s.reconcileEndpoints(ctx, true)
	}}
}

// advertised is the address and port the kubernetes Service's endpoint
// names: --advertise-address, else the listen address when it is one
// address, else this host's address (hostaddr: the default route's
// interface's, as kube-apiserver chooses it).
func (s *Server) advertised() (string, int32, error) {
	tcp, ok := s.lis.Addr().(*net.TCPAddr)
	if !ok {
		return "", 0, fmt.Errorf("listening on %s: not TCP", s.lis.Addr())
	}
	if a := s.cfg.AdvertiseAddress; a != "" {
		return a, int32(tcp.Port), nil
	}
	if ip, ok := netip.AddrFromSlice(tcp.IP); ok && ip.Unmap().Is4() && !ip.IsUnspecified() {
		return ip.Unmap().String(), int32(tcp.Port), nil
	}
	if a, ok := hostaddr.Default(); ok {
		return a.String(), int32(tcp.Port), nil
	}
	return "127.0.0.1", int32(tcp.Port), nil
}
