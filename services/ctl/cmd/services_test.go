package cmd

import (
	"regexp"
	"strings"
	"testing"
)

// TestExposeGetDescribeService: expose makes a Service from a
// Deployment's selector and ports; get prints kubectl's columns; describe
// lists the endpoints of its EndpointSlices.
func TestExposeGetDescribeService(t *testing.T) {
	c := newCLI(t)
	c.ok("apply", "-f", manifestPath("nginx-deployment.yaml"))
	if out := c.ok("expose", "deployment/nginx-deployment", "--port=8080", "--target-port=80", "--type=NodePort"); out != "service/nginx-deployment exposed\n" {
		t.Fatalf("expose printed %q", out)
	}
	out := c.ok("get", "svc", "-o", "wide")
	row := regexp.MustCompile(`(?m)^nginx-deployment\s+NodePort\s+10\.96\.\d+\.\d+\s+<none>\s+8080:3\d{4}/TCP\s+\S+\s+app=nginx$`)
	if !strings.HasPrefix(out, "NAME ") || !strings.Contains(out, "CLUSTER-IP") || !row.MatchString(out) {
		t.Fatalf("get svc -o wide:\n%s", out)
	}
	if errOut := c.fails("expose", "deployment/nginx-deployment", "--port=8080"); !strings.Contains(errOut, "already exists") {
		t.Errorf("exposing twice: %s", errOut)
	}
	c.stdin = `apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: nginx-deployment-abc
  labels:
    kubernetes.io/service-name: nginx-deployment
addressType: IPv4
ports:
- port: 80
  protocol: TCP
  name: ""
endpoints:
- addresses: ["10.244.1.5"]
  conditions: {ready: true}
- addresses: ["10.244.2.7"]
  conditions: {ready: false}
`
	c.ok("apply", "-f", "-")
	out = c.ok("get", "endpointslices")
	if !regexp.MustCompile(`(?m)^nginx-deployment-abc\s+IPv4\s+80\s+10\.244\.1\.5,10\.244\.2\.7\s+`).MatchString(out) {
		t.Fatalf("get endpointslices:\n%s", out)
	}
	out = c.ok("get", "svc,endpointslices")
	if !strings.Contains(out, "service/nginx-deployment ") || !strings.Contains(out, "endpointslice.discovery.k8s.io/nginx-deployment-abc ") || !strings.Contains(out, "ADDRESSTYPE") {
		t.Fatalf("get svc,endpointslices:\n%s", out)
	}
	out = c.ok("describe", "svc", "nginx-deployment")
	for _, want := range []string{"Selector:", "app=nginx", "Type:", "NodePort", "TargetPort:", "80/TCP", "Endpoints:", "10.244.1.5:80\n", "Session Affinity:", "None"} {
		if !strings.Contains(out, want) {
			t.Errorf("describe svc lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "10.244.2.7") {
		t.Errorf("describe svc lists a not-ready endpoint:\n%s", out)
	}
	if errOut := c.fails("expose", "configmap/x"); !strings.Contains(errOut, "not found") && !strings.Contains(errOut, "cannot expose") {
		t.Errorf("exposing a configmap: %s", errOut)
	}
}
