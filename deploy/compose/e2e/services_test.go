package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// frontendNodePort is the two-tier example's frontend Service's node port.
const frontendNodePort = 30080

// noKeepAlive opens a connection per call, so that each is balanced anew.
var noKeepAlive = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}

// TestServices is issue 19's story on the compose cluster: the two-tier
// example (examples/two-tier.yaml) answers through a NodePort on each node
// container; its frontend reaches the backend by the backend Service's DNS
// name; with the backend scaled to 0 a call fails at once (the proxy
// rejects), and scaled back it heals; a rolling update of the backend
// loses no request of a client looping through the Service; the headless
// Service resolves to the ready backend pods.
func TestServices(t *testing.T) {
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
	example, err := filepath.Abs("../../../examples/two-tier.yaml")
	if err != nil {
		t.Fatal(err)
	}
	nodeAddrs := map[string]string{}
	step("the two-tier example runs", func(t *testing.T) {
		c.ctl("apply", "-f", example)
		c.waitPods("3 backends ready", "app=backend", 3, 3*time.Minute, nil)
		c.waitPods("2 frontends ready", "app=frontend", 2, 3*time.Minute, nil)
		for _, node := range []string{"node1", "node2"} {
			out, err := c.docker("inspect", "-f", "{{range .NetworkSettings.Networks}}{{.IPAddress}} {{end}}", c.container(node))
			if err != nil || strings.TrimSpace(out) == "" {
				t.Fatalf("the address of %s: %q, %v", node, out, err)
			}
			nodeAddrs[node] = strings.Fields(out)[0]
		}
		t.Logf("skiffctl get svc,endpointslices -o wide:\n%s", c.ctl("get", "svc,endpointslices", "-o", "wide"))
	})

	call := func(node, path string) (int, string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("http://%s:%d%s", nodeAddrs[node], frontendNodePort, path), nil)
		resp, err := noKeepAlive.Do(req)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return resp.StatusCode, strings.TrimSpace(string(b)), err
	}
	callOK := func(node string) error {
		code, body, err := call(node, "/call")
		switch {
		case err != nil:
			return err
		case code != http.StatusOK || !strings.HasPrefix(body, "frontend v1 on frontend-") || !strings.Contains(body, "-> demo v1 on backend-"):
			return fmt.Errorf("GET /call through %s: %d %q", node, code, body)
		}
		return nil
	}

	step("the frontend answers on the node port of each node and reaches the backend by name", func(t *testing.T) {
		for _, node := range []string{"node1", "node2"} {
			c.eventually("a call through "+node, time.Minute, func() error { return callOK(node) })
			_, body, _ := call(node, "/call")
			t.Logf("through %s:%d: %s", node, frontendNodePort, body)
		}
		// Both backends' nodes answer: the Service spreads the calls.
		seen := map[string]bool{}
		c.eventually("calls reaching 3 backends", time.Minute, func() error {
			_, body, err := call("node1", "/call")
			if err != nil {
				return err
			}
			if _, b, ok := strings.Cut(body, "-> demo v1 on "); ok {
				seen[b] = true
			}
			if len(seen) < 3 {
				return fmt.Errorf("backends answered: %v", seen)
			}
			return nil
		})
	})

	step("the headless Service resolves to the ready backend pods", func(t *testing.T) {
		ready, _, err := c.readyPods("app=backend")
		if err != nil {
			t.Fatal(err)
		}
		var want []string
		for _, p := range ready {
			want = append(want, p.Status.PodIP)
		}
		slices.Sort(want)
		c.eventually("backend-peers resolving to the backends", 30*time.Second, func() error {
			code, body, err := call("node2", "/resolve?name=backend-peers")
			if err != nil {
				return err
			}
			if got := strings.Fields(body); code != http.StatusOK || !slices.Equal(got, want) {
				return fmt.Errorf("backend-peers: %d %q, want %v", code, body, want)
			}
			return nil
		})
	})

	step("scaled to 0 the backend is refused at once; scaled back it heals", func(t *testing.T) {
		c.ctl("scale", "--replicas=0", "deployment/backend")
		c.waitPods("no backend", "app=backend", 0, 2*time.Minute, nil)
		c.eventually("a refused call", 30*time.Second, func() error {
			start := time.Now()
			code, body, err := call("node1", "/call")
			took := time.Since(start)
			switch {
			case err != nil:
				return err
			case code != http.StatusBadGateway || !strings.Contains(body, "connection refused"):
				return fmt.Errorf("%d %q, want 502 connection refused", code, body)
			case took > 2*time.Second:
				t.Fatalf("the refusal took %v: the connection hung instead of being rejected", took)
			}
			t.Logf("with no backend: %q in %v", body, took.Round(time.Millisecond))
			return nil
		})
		c.ctl("scale", "--replicas=3", "deployment/backend")
		c.waitPods("3 backends ready again", "app=backend", 3, 3*time.Minute, nil)
		c.eventually("calls again", time.Minute, func() error { return callOK("node2") })
	})

	step("a rolling update of the backend loses no request", func(t *testing.T) {
		var (
			mu       sync.Mutex
			ok       int
			failures []string
		)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			nodes := []string{"node1", "node2"}
			for i := 0; ctx.Err() == nil; i++ {
				err := callOK(nodes[i%2])
				mu.Lock()
				if err != nil {
					failures = append(failures, err.Error())
				} else {
					ok++
				}
				mu.Unlock()
			}
		}()
		text, err := os.ReadFile(example)
		if err != nil {
			t.Fatal(err)
		}
		// The same backend with another environment: a new template, rolled
		// out with maxSurge 1, maxUnavailable 0.
		updated := strings.Replace(string(text), "          value: 3s\n", "          value: 3s\n        - name: ROLLOUT\n          value: \"2\"\n", 1)
		c.applyManifest(updated)
		c.eventually("the backend rolled out", 3*time.Minute, func() error {
			d, err := c.get("deployment", "backend")
			if err != nil {
				return err
			}
			if d.Status.UpdatedReplicas != 3 || d.Status.AvailableReplicas != 3 || d.Status.Replicas != 3 || d.Status.ObservedGeneration < d.Metadata.Generation {
				return fmt.Errorf("updated %d, available %d, total %d", d.Status.UpdatedReplicas, d.Status.AvailableReplicas, d.Status.Replicas)
			}
			return nil
		})
		c.waitPods("3 new backends, no old one left", "app=backend", 3, 2*time.Minute, nil)
		cancel()
		<-done
		mu.Lock()
		defer mu.Unlock()
		t.Logf("%d calls during the rollout, %d failed", ok+len(failures), len(failures))
		if len(failures) > 0 || ok == 0 {
			t.Fatalf("%d of %d calls failed during the rollout: %v", len(failures), ok+len(failures), failures[:min(len(failures), 5)])
		}
	})

	step("the example is deleted", func(t *testing.T) {
		c.ctl("delete", "-f", example)
		c.waitPods("no frontend", "app=frontend", 0, 2*time.Minute, nil)
	})
}
