package dns

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/miekg/dns"

	"skiff.dev/internal/await"
	"skiff.dev/internal/client"
	"skiff.dev/internal/informer"
	corev1 "skiff.dev/proto/core/v1"
	discoveryv1 "skiff.dev/proto/discovery/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/apiserver/apiservertest"
)

// TestFromInformers runs the server as the agent will: fed by shared
// informers of a real apiserver, whose writes reach the answers.
func TestFromInformers(t *testing.T) {
	api := apiservertest.Start(t)
	ctx, cancel := context.WithCancel(context.Background())
	services, endpointSlices := client.Services(api.Conn), client.EndpointSlices(api.Conn)
	f := informer.NewFactory(informer.FactoryOptions{Logger: testLogger(t)})
	s := startServer(t, Config{}, Informers{
		Services:       informer.For(f, services),
		EndpointSlices: informer.For(f, endpointSlices),
	})
	var changed await.Signal
	s.index.changed = changed.Poke // before the informers start
	f.Start(ctx)
	t.Cleanup(func() { cancel(); f.Wait() }) // before the server stops

	// answer waits until name's A records are want (nil: NXDOMAIN).
	answer := func(name string, want ...string) {
		t.Helper()
		changed.Until(t, patience, "A "+name+" = "+fmtList(want), ctx.Done(), func() (bool, string) {
			r := ask(t, "udp", s.Addr(), name, dns.TypeA)
			var got []string
			for _, rr := range r.Answer {
				got = append(got, rr.(*dns.A).A.String())
			}
			slices.Sort(got)
			if want == nil {
				return r.Rcode == dns.RcodeNameError, dns.RcodeToString[r.Rcode] + " " + fmtList(got)
			}
			return r.Rcode == dns.RcodeSuccess && slices.Equal(got, want), dns.RcodeToString[r.Rcode] + " " + fmtList(got)
		})
	}

	web := service("default", "web", func(s *corev1.ServiceSpec) {
		s.ClusterIp = "10.96.0.50"
		s.Ports = []*corev1.ServicePort{port("http", "TCP", 80)}
	})
	web.Metadata.ResourceVersion = ""
	web, err := services.Create(ctx, web)
	if err != nil {
		t.Fatal(err)
	}
	answer("web.default.svc.cluster.local.", web.GetSpec().GetClusterIp())

	db := service("default", "db", func(s *corev1.ServiceSpec) {
		s.ClusterIp = "None"
		s.Ports = []*corev1.ServicePort{port("pg", "TCP", 5432)}
	})
	db.Metadata.ResourceVersion = ""
	if _, err := services.Create(ctx, db); err != nil {
		t.Fatal(err)
	}
	sl := slice("default", "db-x1", "db", []*discoveryv1.EndpointPort{epPort("pg", "TCP", 5432)},
		ep{"10.244.1.5", "db-0", true}, ep{"10.244.2.6", "", false})
	sl.Metadata.ResourceVersion = ""
	sl, err = endpointSlices.Create(ctx, sl)
	if err != nil {
		t.Fatal(err)
	}
	answer("db.default.svc.cluster.local.", "10.244.1.5")

	// The second pod becomes ready: the endpointslice controller's update.
	ready := true
	sl.Endpoints[1].Conditions.Ready = &ready
	if _, err := endpointSlices.Update(ctx, sl); err != nil {
		t.Fatal(err)
	}
	answer("db.default.svc.cluster.local.", "10.244.1.5", "10.244.2.6")

	if _, err := services.Delete(ctx, &metav1.DeleteRequest{Namespace: "default", Name: "web"}); err != nil {
		t.Fatal(err)
	}
	answer("web.default.svc.cluster.local.")
}

func fmtList(l []string) string { return "[" + strings.Join(l, ", ") + "]" }
