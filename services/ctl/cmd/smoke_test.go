package cmd

import "testing"

func TestSmoke(t *testing.T) {
	c := newCLI(t)
	t.Log(c.ok("apply", "-f", manifestPath("nginx-deployment.yaml")))
	t.Log(c.ok("apply", "-f", manifestPath("nginx-deployment.yaml")))
	t.Log(c.ok("get", "deploy"))
	t.Log(c.ok("get", "deploy", "nginx-deployment", "-o", "yaml"))
}
