package integration

import (
	"fmt"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"skiff.dev/internal/apierrors"
	"skiff.dev/internal/await"
	"skiff.dev/internal/client"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/apiserver/apiserver"
	"skiff.dev/services/apiserver/apiservertest"
)

func service(ns, name, typ string, ports ...int32) *corev1.Service {
	s := &corev1.Service{Metadata: &metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: &corev1.ServiceSpec{Type: typ, Selector: map[string]string{"app": name}}}
	for i, p := range ports {
		s.Spec.Ports = append(s.Spec.Ports, &corev1.ServicePort{Name: fmt.Sprint("p", i), Port: p})
	}
	return s
}

func invalidField(t *testing.T, err error, field, detail string) {
	t.Helper()
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), field) || !strings.Contains(err.Error(), detail) {
		t.Fatalf("got %v; want Invalid naming %s: %s", err, field, detail)
	}
}

// TestServiceAllocationsUnderConcurrentCreates: 50 NodePort Services
// created at once through two apiservers on one etcd get 50 different
// cluster IPs and 100 different node ports, all in their ranges, never
// the kubernetes Service's .1.
func TestServiceAllocationsUnderConcurrentCreates(t *testing.T) {
	a := apiservertest.Start(t)
	b := apiservertest.Start(t, etcdOf(a))
	ctx := testContext(t)
	var wg sync.WaitGroup
	created := make([]*corev1.Service, 50)
	for i := range created {
		wg.Add(1)
		go func() {
			defer wg.Done()
			conn := a.Conn
			if i%2 == 1 {
				conn = b.Conn
			}
			s, err := client.Services(conn).Create(ctx, service("default", fmt.Sprint("svc-", i), "NodePort", 80, 443))
			if err != nil {
				t.Errorf("svc-%d: %v", i, err)
			}
			created[i] = s
		}()
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	cidr := netip.MustParsePrefix(apiserver.DefaultServiceClusterIPRange)
	ips, ports := map[string]string{}, map[int32]string{}
	for _, s := range created {
		sp := s.GetSpec()
		ip, err := netip.ParseAddr(sp.GetClusterIp())
		if err != nil || !cidr.Contains(ip) || sp.GetClusterIp() == "10.96.0.1" {
			t.Errorf("%s: cluster IP %q", s.Metadata.Name, sp.GetClusterIp())
		}
		if prev, ok := ips[sp.GetClusterIp()]; ok {
			t.Errorf("%s and %s both have %s", prev, s.Metadata.Name, sp.GetClusterIp())
		}
		ips[sp.GetClusterIp()] = s.Metadata.Name
		if len(sp.GetClusterIps()) != 1 || sp.GetClusterIps()[0] != sp.GetClusterIp() || sp.GetIpFamilyPolicy() != "SingleStack" {
			t.Errorf("%s: clusterIPs %v, policy %q", s.Metadata.Name, sp.GetClusterIps(), sp.GetIpFamilyPolicy())
		}
		for _, p := range sp.GetPorts() {
			np := p.GetNodePort()
			if np < 30000 || np > 32767 {
				t.Errorf("%s: node port %d", s.Metadata.Name, np)
			}
			if prev, ok := ports[np]; ok {
				t.Errorf("%s and %s both have node port %d", prev, s.Metadata.Name, np)
			}
			ports[np] = s.Metadata.Name
		}
	}
}

func TestServiceAllocationRules(t *testing.T) {
	s := apiservertest.Start(t)
	ctx := testContext(t)
	svcs := client.Services(s.Conn)

	// The kubernetes Service and its endpoint, made at start.
	k, err := svcs.Get(ctx, "default", "kubernetes")
	if err != nil || k.GetSpec().GetClusterIp() != "10.96.0.1" || k.GetSpec().GetPorts()[0].GetPort() != 443 {
		t.Fatalf("the kubernetes Service: %v, %v", k, err)
	}
	es, err := client.EndpointSlices(s.Conn).Get(ctx, "default", "kubernetes")
	if err != nil || es.GetEndpoints()[0].GetAddresses()[0] != "127.0.0.1" || es.GetPorts()[0].GetPort() == 0 {
		t.Fatalf("the kubernetes Service's EndpointSlice: %v, %v", es, err)
	}

	// A cluster IP asked for is given, once.
	want := service("default", "db", "ClusterIP", 5432)
	want.Spec.ClusterIp = "10.96.7.7"
	db, err := svcs.Create(ctx, want)
	if err != nil || db.GetSpec().GetClusterIp() != "10.96.7.7" {
		t.Fatalf("asking for 10.96.7.7: %v, %v", db, err)
	}
	again := service("default", "db2", "ClusterIP", 5432)
	again.Spec.ClusterIp = "10.96.7.7"
	_, err = svcs.Create(ctx, again)
	invalidField(t, err, "spec.clusterIPs[0]", "failed to allocate IP 10.96.7.7: provided IP is already allocated")
	outside := service("default", "db3", "ClusterIP", 5432)
	outside.Spec.ClusterIp = "10.200.0.1"
	_, err = svcs.Create(ctx, outside)
	invalidField(t, err, "spec.clusterIPs[0]", "The range of valid IPs is 10.96.0.0/16")
	if _, err := svcs.Get(ctx, "default", "db3"); !apierrors.IsNotFound(err) {
		t.Fatalf("a refused Service was stored: %v", err)
	}

	// An update that omits the cluster IP keeps it; one that changes it is refused.
	upd := service("default", "db", "ClusterIP", 5433)
	upd.Metadata = db.Metadata
	got, err := svcs.Update(ctx, upd)
	if err != nil || got.GetSpec().GetClusterIp() != "10.96.7.7" {
		t.Fatalf("update without clusterIP: %v, %v", got, err)
	}
	got.Spec.ClusterIp, got.Spec.ClusterIps = "10.96.7.8", []string{"10.96.7.8"}
	_, err = svcs.Update(ctx, got)
	invalidField(t, err, "spec.clusterIP", "field is immutable")

	// Deleting frees the address for another Service.
	if _, err := svcs.Delete(ctx, &metav1.DeleteRequest{Namespace: "default", Name: "db"}); err != nil {
		t.Fatal(err)
	}
	if got, err := svcs.Create(ctx, again); err != nil || got.GetSpec().GetClusterIp() != "10.96.7.7" {
		t.Fatalf("10.96.7.7 after its Service was deleted: %v, %v", got, err)
	}

	// Node ports: asked for, taken, out of range, kept across an update,
	// freed when the type goes back to ClusterIP.
	np := service("default", "web", "NodePort", 80)
	np.Spec.Ports[0].NodePort = 30080
	web, err := svcs.Create(ctx, np)
	if err != nil || web.GetSpec().GetPorts()[0].GetNodePort() != 30080 {
		t.Fatalf("asking for node port 30080: %v, %v", web, err)
	}
	np2 := service("default", "web2", "NodePort", 80)
	np2.Spec.Ports[0].NodePort = 30080
	_, err = svcs.Create(ctx, np2)
	invalidField(t, err, "spec.ports[0].nodePort", "provided port is already allocated")
	np2.Spec.Ports[0].NodePort = 8080
	_, err = svcs.Create(ctx, np2)
	invalidField(t, err, "spec.ports[0].nodePort", "The range of valid ports is 30000-32767")
	keep := service("default", "web", "NodePort", 80)
	keep.Metadata = web.Metadata
	if got, err := svcs.Update(ctx, keep); err != nil || got.GetSpec().GetPorts()[0].GetNodePort() != 30080 {
		t.Fatalf("update without nodePort: %v, %v", got, err)
	}
	toClusterIP := service("default", "web", "ClusterIP", 80)
	toClusterIP.Metadata = web.Metadata
	toClusterIP.Metadata.ResourceVersion = ""
	if got, err := svcs.Update(ctx, toClusterIP); err != nil || got.GetSpec().GetPorts()[0].GetNodePort() != 0 {
		t.Fatalf("to ClusterIP: %v, %v", got, err)
	}
	np2.Spec.Ports[0].NodePort = 30080
	if _, err := svcs.Create(ctx, np2); err != nil {
		t.Fatalf("node port 30080 after its Service became ClusterIP: %v", err)
	}

	// Headless and ExternalName Services get no cluster IP.
	headless := service("default", "peers", "", 7000)
	headless.Spec.ClusterIp = "None"
	if got, err := svcs.Create(ctx, headless); err != nil || got.GetSpec().GetClusterIps()[0] != "None" {
		t.Fatalf("headless: %v, %v", got, err)
	}
	ext := &corev1.Service{Metadata: &metav1.ObjectMeta{Namespace: "default", Name: "ext"}, Spec: &corev1.ServiceSpec{Type: "ExternalName", ExternalName: "db.example.com"}}
	if got, err := svcs.Create(ctx, ext); err != nil || got.GetSpec().GetClusterIp() != "" {
		t.Fatalf("ExternalName: %v, %v", got, err)
	}
}

// TestServiceAllocationRepair: an allocation no Service holds (an
// apiserver killed between allocating and storing) is freed by the repair
// loop on its second pass; a Service's allocation the store lacks is
// recorded.
func TestServiceAllocationRepair(t *testing.T) {
	s := apiservertest.Start(t, apiservertest.WithConfig(func(c *apiserver.Config) { c.ServiceRepairInterval = 50 * time.Millisecond }))
	ctx := testContext(t)
	etcd := s.EtcdClient()
	if _, err := etcd.Put(ctx, "/registry/ranges/serviceips/10.96.9.9", "uid-of-nobody"); err != nil {
		t.Fatal(err)
	}
	svc, err := client.Services(s.Conn).Create(ctx, service("default", "kept", "ClusterIP", 80))
	if err != nil {
		t.Fatal(err)
	}
	ipKey := "/registry/ranges/serviceips/" + svc.GetSpec().GetClusterIp()
	if _, err := etcd.Delete(ctx, ipKey); err != nil { // as if lost
		t.Fatal(err)
	}
	var never await.Signal
	never.Until(t, 10*time.Second, "the repair loop", nil, func() (bool, string) {
		leaked, err := etcd.Get(ctx, "/registry/ranges/serviceips/10.96.9.9")
		if err != nil {
			return false, err.Error()
		}
		kept, err := etcd.Get(ctx, ipKey)
		if err != nil {
			return false, err.Error()
		}
		return len(leaked.Kvs) == 0 && len(kept.Kvs) == 1 && string(kept.Kvs[0].Value) == svc.GetMetadata().GetUid(),
			fmt.Sprintf("leaked allocation present: %v; the Service's recorded: %v", len(leaked.Kvs) == 1, len(kept.Kvs) == 1)
	})
	// The freed address can be asked for again.
	want := service("default", "nine", "ClusterIP", 80)
	want.Spec.ClusterIp = "10.96.9.9"
	if _, err := client.Services(s.Conn).Create(ctx, want); err != nil {
		t.Fatal(err)
	}
}
