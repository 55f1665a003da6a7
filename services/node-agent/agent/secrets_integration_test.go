package agent

import (
	"fmt"
	"strings"
	"testing"

	"skiff.dev/internal/client"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/node-agent/sim"
)

// Services' variables reach containers as the kubelet gives them (the
// kubernetes Service always, the namespace's only with enableServiceLinks),
// and a serviceAccountToken volume without a token source fails with an
// event that says why.
func TestServiceLinksAndTokenVolumeWithoutSource(t *testing.T) {
	e := start(t, sim.Options{Subnet: "10.78.0.0/24"})
	svc, err := client.Services(e.api.Conn).Create(e.ctx, &corev1.Service{Metadata: &metav1.ObjectMeta{Name: "my-db", Namespace: "default"},
		Spec: &corev1.ServiceSpec{Ports: []*corev1.ServicePort{{Name: "pg-main", Port: 5432, Protocol: "TCP"}}}})
	if err != nil {
		t.Fatal(err)
	}
	ip := svc.GetSpec().GetClusterIp()
	links := pod("links", ctr("app", "demo:v1"))
	nolinks := pod("nolinks", ctr("app", "demo:v1"))
	nolinks.Spec.EnableServiceLinks = ptr(false)
	token := pod("token", ctr("app", "demo:v1"))
	token.Spec.Volumes = []*corev1.Volume{{Name: "tok", Projected: &corev1.ProjectedVolumeSource{Sources: []*corev1.VolumeProjection{
		{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"}}}}}}
	for _, p := range []*corev1.Pod{links, nolinks, token} {
		e.create(p)
	}
	e.untilRunning("links")
	e.untilRunning("nolinks")
	envOf := func(name string) string {
		c, ok := e.sim.ContainerOf("default", name, "app")
		if !ok {
			t.Fatalf("no container of %s", name)
		}
		var kv []string
		for _, v := range c.Config.GetEnvs() {
			kv = append(kv, v.GetKey()+"="+string(v.GetValue()))
		}
		return "\n" + strings.Join(kv, "\n") + "\n"
	}
	for _, want := range []string{"MY_DB_SERVICE_HOST=" + ip, "MY_DB_SERVICE_PORT=5432", "MY_DB_SERVICE_PORT_PG_MAIN=5432",
		"MY_DB_PORT=tcp://" + ip + ":5432", "MY_DB_PORT_5432_TCP_ADDR=" + ip, "KUBERNETES_SERVICE_HOST=", "KUBERNETES_PORT_443_TCP_PORT=443"} {
		if !strings.Contains(envOf("links"), "\n"+want) {
			t.Errorf("links: no %s in %s", want, envOf("links"))
		}
	}
	if env := envOf("nolinks"); strings.Contains(env, "MY_DB_") || !strings.Contains(env, "\nKUBERNETES_SERVICE_HOST=") {
		t.Errorf("enableServiceLinks false: %s", env)
	}

	e.until("a FailedMount event about the token source", func() (bool, string) {
		l, err := client.Events(e.api.Conn).List(e.ctx, &metav1.ListOptions{Namespace: "default"})
		if err != nil {
			return false, err.Error()
		}
		var seen []string
		for _, ev := range l.GetItems() {
			if ev.GetInvolvedObject().GetName() == "token" {
				if ev.GetReason() == "FailedMount" && strings.Contains(ev.GetMessage(), `volume "tok"`) && strings.Contains(ev.GetMessage(), "no token source") {
					return true, ""
				}
				seen = append(seen, ev.GetReason()+": "+ev.GetMessage())
			}
		}
		return false, fmt.Sprintf("events of pod token: %v", seen)
	})
}
