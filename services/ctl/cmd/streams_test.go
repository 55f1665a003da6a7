package cmd

import (
	"bytes"
	"context"
	"reflect"
	"strings"
	"testing"

	"skiff.dev/internal/client"
	appsv1 "skiff.dev/proto/apps/v1"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
)

// exec, port-forward and cp run end to end on a real containerd in the
// node agent's TestStreamsOnContainerd; here, what needs no node: the
// command lines and port-forward's choice of pod and port.

func TestParsePortSpecs(t *testing.T) {
	for _, tc := range []struct {
		in   []string
		want []forwardedPort
		err  string
	}{
		{[]string{"8080"}, []forwardedPort{{8080, "8080"}}, ""},
		{[]string{"9000:80", ":443"}, []forwardedPort{{9000, "80"}, {0, "443"}}, ""},
		{[]string{"5000:http"}, []forwardedPort{{5000, "http"}}, ""},
		{[]string{"x:80"}, nil, `error parsing local port "x"`},
		{[]string{"80:"}, nil, "no remote port"},
	} {
		got, err := parsePortSpecs(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%v: error %v, want %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%v: %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}

func TestParseFileSpec(t *testing.T) {
	for in, want := range map[string]fileSpec{
		"web:/tmp/x":          {pod: "web", path: "/tmp/x"},
		"team-a/web:/tmp/x":   {namespace: "team-a", pod: "web", path: "/tmp/x"},
		"./local:file":        {path: "./local:file"},
		"/abs/path":           {path: "/abs/path"},
		"relative/path.txt":   {path: "relative/path.txt"},
		"web:relative/in/pod": {pod: "web", path: "relative/in/pod"},
	} {
		if got, err := parseFileSpec(in); err != nil || got != want {
			t.Errorf("%q: %+v, %v; want %+v", in, got, err, want)
		}
	}
	if _, err := parseFileSpec("web:"); err == nil {
		t.Error(`"web:": no error`)
	}
	c := newCLI(t)
	if errOut := c.fails("cp", "a", "b"); !strings.Contains(errOut, "one of src or dest must be a local file specification and the other a remote one") {
		t.Errorf("cp of two local paths: %s", errOut)
	}
	if errOut := c.fails("exec", "web"); !strings.Contains(errOut, "you must specify at least one command for the container") {
		t.Errorf("exec without a command: %s", errOut)
	}
}

// TestPortForwardTargetOfAService: svc/NAME picks a running pod behind
// the selector and maps the Service's ports (by number or name) to their
// targetPorts, a named one through the pod's container ports.
func TestPortForwardTargetOfAService(t *testing.T) {
	c := newCLI(t)
	ctx := context.Background()
	conn := shared.Conn
	pods := client.Pods(conn)
	for _, p := range []struct{ name, phase string }{{"web-pending", "Pending"}, {"web-running", "Running"}} {
		pod, err := pods.Create(ctx, &corev1.Pod{Metadata: &metav1.ObjectMeta{Namespace: c.ns, Name: p.name, Labels: map[string]string{"app": "web"}},
			Spec: &corev1.PodSpec{Containers: []*corev1.Container{{Name: "app", Image: "demo", Ports: []*corev1.ContainerPort{{Name: "http", ContainerPort: 8080}}}}}})
		if err != nil {
			t.Fatal(err)
		}
		pod.Status = &corev1.PodStatus{Phase: p.phase}
		if _, err := pods.UpdateStatus(ctx, pod); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := client.Services(conn).Create(ctx, &corev1.Service{Metadata: &metav1.ObjectMeta{Namespace: c.ns, Name: "web"},
		Spec: &corev1.ServiceSpec{Selector: map[string]string{"app": "web"}, Ports: []*corev1.ServicePort{
			{Name: "web", Port: 80, TargetPort: &metav1.IntOrString{Value: &metav1.IntOrString_StrVal{StrVal: "http"}}},
			{Name: "metrics", Port: 9090, TargetPort: &metav1.IntOrString{Value: &metav1.IntOrString_IntVal{IntVal: 9100}}},
		}}}); err != nil {
		t.Fatal(err)
	}
	var out, errw bytes.Buffer
	r := &root{env: c.env(&out, &errw)}
	defer r.close()
	r.flags.overrides.Namespace = c.ns
	pod, remote, err := r.forwardTarget(ctx, c.ns, "svc/web", []forwardedPort{{0, "80"}, {0, "metrics"}})
	if err != nil || pod != "web-running" || !reflect.DeepEqual(remote, []int32{8080, 9100}) {
		t.Errorf("svc/web 80 metrics: pod %q, ports %v, %v; want web-running [8080 9100]", pod, remote, err)
	}
	if _, _, err := r.forwardTarget(ctx, c.ns, "svc/web", []forwardedPort{{0, "81"}}); err == nil || !strings.Contains(err.Error(), "service web does not have a service port 81") {
		t.Errorf("svc/web 81: %v", err)
	}

	// A Deployment: one of its running pods; a named port is its
	// container port of that name, as kubectl resolves it.
	if _, err := client.Deployments(conn).Create(ctx, &appsv1.Deployment{Metadata: &metav1.ObjectMeta{Namespace: c.ns, Name: "web"},
		Spec: &appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: &corev1.PodTemplateSpec{Metadata: &metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec: &corev1.PodSpec{Containers: []*corev1.Container{{Name: "app", Image: "demo"}}}}}}); err != nil {
		t.Fatal(err)
	}
	pod, remote, err = r.forwardTarget(ctx, c.ns, "deploy/web", []forwardedPort{{0, "http"}, {0, "9000"}})
	if err != nil || pod != "web-running" || !reflect.DeepEqual(remote, []int32{8080, 9000}) {
		t.Errorf("deploy/web http 9000: pod %q, ports %v, %v; want web-running [8080 9000]", pod, remote, err)
	}
	if _, _, err := r.forwardTarget(ctx, c.ns, "pod/web-running", []forwardedPort{{0, "nope"}}); err == nil || err.Error() != "Pod 'web-running' does not have a named port 'nope'" {
		t.Errorf("pod/web-running nope: %v", err)
	}
}
