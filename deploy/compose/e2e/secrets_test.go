package e2e

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// secretsManifest is a Deployment of two demo pods, one on each node,
// that read the Secret e2e-creds as an environment variable and as files.
const secretsManifest = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: vault
spec:
  replicas: 2
  selector:
    matchLabels: {app: vault}
  template:
    metadata:
      labels: {app: vault}
    spec:
      terminationGracePeriodSeconds: 2
      topologySpreadConstraints:
      - maxSkew: 1
        topologyKey: kubernetes.io/hostname
        whenUnsatisfiable: DoNotSchedule
        labelSelector:
          matchLabels: {app: vault}
      # The demo image is FROM scratch: an init container gives the app a
      # tar (a copy of /demo, which acts by the name it is called by) for cp.
      initContainers:
      - name: tools
        image: skiff.local/demo:v1
        command: [/demo, install, /demo, /bin/tar]
        volumeMounts:
        - {name: bin, mountPath: /bin}
      containers:
      - name: demo
        image: skiff.local/demo:v1
        env:
        - name: PASSWORD
          valueFrom:
            secretKeyRef: {name: e2e-creds, key: password}
        volumeMounts:
        - {name: creds, mountPath: /etc/creds, readOnly: true}
        - {name: bin, mountPath: /bin}
        readinessProbe:
          httpGet: {path: /ready, port: 8080}
          periodSeconds: 1
      volumes:
      - name: bin
        emptyDir: {}
      - name: creds
        secret:
          secretName: e2e-creds
          defaultMode: 0400
`

// TestSecretsAndExec is issue 20's story on the compose cluster: a Secret
// made with skiffctl is read by pods on each node as an environment
// variable and as a file (and an update of it reaches the file);
// `skiffctl exec` runs commands in a pod on each node and exits with their
// code; `port-forward` reaches the demo server from localhost; `cp` copies
// a file in and out; an image behind the registry's password is pulled
// only by a pod with a pull secret.
func TestSecretsAndExec(t *testing.T) {
	c := newCluster(t)
	step := func(name string, f func(t *testing.T)) {
		if !t.Run(name, func(t *testing.T) {
			c.t = t
			f(t)
		}) {
			t.FailNow()
		}
		c.t = t
	}
	password := "e2e-" + randomHex(8)
	var pods []object
	step("a Secret consumed as env and volume on each node", func(t *testing.T) {
		c.ctl("create", "secret", "generic", "e2e-creds", "--from-literal=password="+password, "--from-literal=user=admin")
		if out := string(c.ctl("describe", "secret", "e2e-creds")); strings.Contains(out, password) || !strings.Contains(out, "bytes") {
			t.Fatalf("describe secret shows a value or no sizes:\n%s", out)
		}
		c.applyManifest(secretsManifest)
		pods = c.waitPods("2 vault pods ready", "app=vault", 2, 3*time.Minute, nil)
		if nodes := nodesOf(pods); len(nodes) != 2 {
			t.Fatalf("the vault pods are on %v, want one on each node", nodes)
		}
		for _, p := range pods {
			env := string(c.ctl("exec", p.Metadata.Name, "--", "/demo", "env"))
			if !strings.Contains(env, "PASSWORD="+password+"\n") {
				t.Errorf("pod %s on %s: no PASSWORD from the Secret in its environment", p.Metadata.Name, p.Spec.NodeName)
			}
			if got := string(c.ctl("exec", p.Metadata.Name, "--", "/demo", "cat", "/etc/creds/password")); got != password {
				t.Errorf("pod %s on %s: /etc/creds/password is %q, want the Secret's value", p.Metadata.Name, p.Spec.NodeName, got)
			}
		}
	})

	step("an update of the Secret reaches the files", func(t *testing.T) {
		updated := "e2e-" + randomHex(8)
		yaml := c.ctl("create", "secret", "generic", "e2e-creds", "--from-literal=password="+updated, "--from-literal=user=admin", "--dry-run=client", "-o", "yaml")
		c.applyManifest(string(yaml))
		for _, p := range pods {
			c.eventually("the new password in "+p.Metadata.Name+"'s file", 90*time.Second, func() error {
				got, err := c.tryCtl("exec", p.Metadata.Name, "--", "/demo", "cat", "/etc/creds/password")
				if err != nil || string(got) != updated {
					return fmt.Errorf("/etc/creds/password: %q, %v", got, err)
				}
				return nil
			})
		}
	})

	step("exec exits with the command's code", func(t *testing.T) {
		_, err := c.tryCtl("exec", pods[0].Metadata.Name, "--", "/demo", "exit", "3")
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 3 {
			t.Fatalf("skiffctl exec -- /demo exit 3: %v, want exit status 3", err)
		}
	})

	step("port-forward reaches the demo server from localhost", func(t *testing.T) {
		p := pods[0]
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, c.skiffctl, "port-forward", "pod/"+p.Metadata.Name, ":8080")
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() { cancel(); _ = cmd.Wait() }()
		// kubectl's first line: "Forwarding from 127.0.0.1:PORT -> 8080".
		line, err := bufio.NewReader(stdout).ReadString('\n')
		m := regexp.MustCompile(`Forwarding from (127\.0\.0\.1:\d+) -> 8080`).FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("port-forward printed %q (%v); stderr: %s", line, err, stderr.String())
		}
		for i := range 3 { // a connection per request: each is a stream of its own
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+m[1]+"/", nil)
			resp, err := noKeepAlive.Do(req)
			if err != nil {
				t.Fatalf("GET %d through the port-forward: %v; stderr: %s", i, err, stderr.String())
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if want := "demo v1 on " + p.Metadata.Name; strings.TrimSpace(string(body)) != want {
				t.Fatalf("GET %d through the port-forward: %q, want %q", i, body, want)
			}
		}
	})

	step("cp copies a file into a pod and back", func(t *testing.T) {
		dir := t.TempDir()
		in := filepath.Join(dir, "in.bin")
		data := make([]byte, 4<<20)
		_, _ = rand.Read(data)
		if err := os.WriteFile(in, data, 0o644); err != nil {
			t.Fatal(err)
		}
		for _, p := range pods {
			c.ctl("cp", in, p.Metadata.Name+":/tmp/copied.bin")
			out := filepath.Join(dir, p.Metadata.Name+".bin")
			c.ctl("cp", p.Metadata.Name+":/tmp/copied.bin", out)
			got, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			if sha256.Sum256(got) != sha256.Sum256(data) {
				t.Fatalf("pod %s on %s: the file came back with %d bytes and another checksum", p.Metadata.Name, p.Spec.NodeName, len(got))
			}
		}
	})

	step("a private image is pulled only with its pull secret", func(t *testing.T) {
		// private.skiff.local is the compose registry's port behind basic
		// auth (deploy/compose/README.md): the same demo image.
		pod := func(name string, pullSecret bool) string {
			m := fmt.Sprintf("apiVersion: v1\nkind: Pod\nmetadata:\n  name: %s\n  labels: {app: %s}\nspec:\n  terminationGracePeriodSeconds: 1\n", name, name)
			if pullSecret {
				m += "  imagePullSecrets:\n  - name: e2e-pull\n"
			}
			return m + "  containers:\n  - name: demo\n    image: private.skiff.local/demo:v1\n"
		}
		c.applyManifest(pod("private-without", false))
		c.eventually("a refused pull without the secret", 2*time.Minute, func() error {
			out, err := c.tryCtl("get", "events", "--field-selector", "involvedObject.name=private-without,reason=Failed", "-o", "json")
			if err != nil {
				return err
			}
			if msg := strings.ToLower(string(out)); !strings.Contains(msg, "401") && !strings.Contains(msg, "unauthorized") {
				return fmt.Errorf("no Failed event naming the registry's refusal yet: %.300s", out)
			}
			return nil
		})
		c.ctl("create", "secret", "docker-registry", "e2e-pull", "--docker-server=private.skiff.local",
			"--docker-username=skiff", "--docker-password=skiff-registry-pw")
		c.applyManifest(pod("private-with", true))
		c.waitPods("the pod with the pull secret running", "app=private-with", 1, 2*time.Minute, nil)
		c.ctl("delete", "pod", "private-without", "private-with")
		c.ctl("delete", "secret", "e2e-pull")
	})

	step("clean up", func(t *testing.T) {
		c.ctl("delete", "deployment", "vault")
		c.ctl("delete", "secret", "e2e-creds")
		c.waitPods("no vault pod", "app=vault", 0, 2*time.Minute, nil)
	})
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
