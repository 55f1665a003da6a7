// Package e2e is the end-to-end test of the compose cluster (make e2e):
// a user's story from `skiffctl apply` to a cascading delete, on real
// containers in real node containers. scripts/compose.sh e2e starts a
// cluster of its own (project skiff-e2e, other ports, short node grace and
// toleration periods), runs this test against it and removes it with its
// volumes. Run directly, without that environment, the test skips.
//
// It is a module of its own (standard library only, built with
// GOWORK=off): it drives the cluster only through skiffctl and docker.
package e2e

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

const (
	deployment = "demo-deployment"
	selector   = "app=demo"
	demoV1     = "skiff.local/demo:v1"
	demoV2     = "skiff.local/demo:v2"
)

// manifest is the seed's nginx Deployment with the demo server (as
// deploy/compose/examples/demo-deployment.yml), at a size and image.
func manifest(replicas int, image string) string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: %s
spec:
  selector:
    matchLabels:
      app: demo
  replicas: %d
  strategy:
    type: RollingUpdate
    rollingUpdate:
      maxSurge: 1
      maxUnavailable: 0
  template:
    metadata:
      labels:
        app: demo
    spec:
      terminationGracePeriodSeconds: 5
      containers:
      - name: demo
        image: %s
        ports:
        - containerPort: 8080
        resources:
          requests:
            cpu: 50m
            memory: 16Mi
        readinessProbe:
          httpGet:
            path: /
            port: 8080
          periodSeconds: 2
`, deployment, replicas, image)
}

func imageIs(image string) func(object) error {
	return func(p object) error {
		if p.image() != image {
			return fmt.Errorf("image %s, want %s", p.image(), image)
		}
		return nil
	}
}

// waitRolledOut waits until the deployment's status says replicas pods,
// all updated and available, for its latest generation, and exactly that
// many ready pods of image exist.
func (c *cluster) waitRolledOut(replicas int32, image string) []object {
	c.t.Helper()
	c.eventually("deployment rolled out to "+image, 3*time.Minute, func() error {
		d, err := c.get("deployment", deployment)
		if err != nil {
			return err
		}
		s := d.Status
		if s.ObservedGeneration < d.Metadata.Generation || s.Replicas != replicas ||
			s.UpdatedReplicas != replicas || s.AvailableReplicas != replicas {
			return fmt.Errorf("status %+v at generation %d", s, d.Metadata.Generation)
		}
		return nil
	})
	return c.waitPods(fmt.Sprintf("%d pods of %s", replicas, image), selector, int(replicas), 2*time.Minute, imageIs(image))
}

func TestCluster(t *testing.T) {
	c := newCluster(t)
	began := time.Now()
	defer func() { t.Logf("whole story: %v", time.Since(began).Round(time.Second)) }()
	step := func(name string, f func(t *testing.T)) {
		if !t.Run(name, func(t *testing.T) {
			c.t = t
			f(t)
		}) {
			t.FailNow()
		}
		c.t = t
	}

	step("both nodes are Ready", func(t *testing.T) {
		c.eventually("nodes Ready", 2*time.Minute, func() error {
			nodes, err := c.list("nodes")
			if err != nil {
				return err
			}
			var ready []string
			for _, n := range nodes {
				if n.condition("Ready") {
					ready = append(ready, n.Metadata.Name)
				}
			}
			if strings.Join(ready, ",") != "node1,node2" {
				return fmt.Errorf("ready nodes: %v", ready)
			}
			return nil
		})
	})

	var pods []object
	step("3 replicas of the demo server run across the two nodes", func(t *testing.T) {
		c.applyManifest(manifest(3, demoV1))
		pods = c.waitPods("3 pods ready", selector, 3, 3*time.Minute, imageIs(demoV1))
		if got := nodesOf(pods); strings.Join(got, ",") != "node1,node2" {
			t.Fatalf("pods on nodes %v, want both: %s", got, describePods(pods))
		}
	})

	step("every pod answers HTTP from inside each node container", func(t *testing.T) {
		for _, p := range pods {
			for _, node := range []string{"node1", "node2"} {
				body, err := c.httpFromNode(node, p.Status.PodIP)
				if err != nil {
					t.Fatalf("GET %s (pod %s on %s) from %s: %v", p.Status.PodIP, p.Metadata.Name, p.Spec.NodeName, node, err)
				}
				if want := "demo v1 on " + p.Metadata.Name; body != want {
					t.Errorf("GET %s from %s: %q, want %q", p.Status.PodIP, node, body, want)
				}
			}
		}
	})

	step("a pod on one node reaches a pod on the other by its IP", func(t *testing.T) {
		for _, from := range pods {
			for _, to := range pods {
				if from.Spec.NodeName == to.Spec.NodeName {
					continue
				}
				out, err := c.execInPod(from.Spec.NodeName, from.Metadata.Name, "/demo", "get", "http://"+to.Status.PodIP+":8080/")
				if err != nil {
					t.Fatalf("pod %s (%s) -> pod %s (%s, %s): %v", from.Metadata.Name, from.Spec.NodeName,
						to.Metadata.Name, to.Spec.NodeName, to.Status.PodIP, err)
				}
				if !strings.Contains(out, "demo v1 on "+to.Metadata.Name) {
					t.Fatalf("pod %s -> pod %s: %q", from.Metadata.Name, to.Metadata.Name, out)
				}
				t.Logf("%s (%s) -> %s (%s): %s", from.Metadata.Name, from.Spec.NodeName, to.Metadata.Name, to.Spec.NodeName, out)
				return
			}
		}
		t.Fatalf("no two pods on different nodes: %s", describePods(pods))
	})

	step("scale to 5", func(t *testing.T) {
		c.ctl("scale", "--replicas=5", "deployment/"+deployment)
		c.waitRolledOut(5, demoV1)
	})

	step("rolling update to v2 with no pod unavailable throughout", func(t *testing.T) {
		var mu sync.Mutex
		var violations []string
		ready, stop := c.watchDeployment(deployment, func(d object) {
			if d.Status.AvailableReplicas < 5 {
				mu.Lock()
				violations = append(violations, fmt.Sprintf("available %d of 5 (updated %d, total %d)",
					d.Status.AvailableReplicas, d.Status.UpdatedReplicas, d.Status.Replicas))
				mu.Unlock()
			}
		})
		select {
		case <-ready:
		case <-time.After(30 * time.Second):
			stop()
			t.Fatal("the deployment watch sent nothing in 30 s")
		}
		c.applyManifest(manifest(5, demoV2))
		pods := c.waitRolledOut(5, demoV2)
		seen := stop()
		mu.Lock()
		defer mu.Unlock()
		if len(violations) > 0 {
			t.Fatalf("pods unavailable during the rollout (%d states seen): %s", seen, strings.Join(violations, "; "))
		}
		t.Logf("the watcher saw %d states of the deployment, every one with 5 pods available", seen)
		body, err := c.httpFromNode("node1", pods[0].Status.PodIP)
		if err != nil || !strings.HasPrefix(body, "demo v2 on ") {
			t.Fatalf("GET %s: %q, %v; want demo v2", pods[0].Status.PodIP, body, err)
		}
	})

	step("rollout undo returns to v1", func(t *testing.T) {
		c.ctl("rollout", "undo", "deployment/"+deployment)
		pods := c.waitRolledOut(5, demoV1)
		body, err := c.httpFromNode("node2", pods[0].Status.PodIP)
		if err != nil || !strings.HasPrefix(body, "demo v1 on ") {
			t.Fatalf("GET %s: %q, %v; want demo v1", pods[0].Status.PodIP, body, err)
		}
	})

	// Not steps: the story goes on when they fail (the test still fails).
	t.Run("every dashboard expression returns data", func(t *testing.T) {
		c.t = t
		exprs, err := dashboardExprs()
		if err != nil {
			t.Fatal(err)
		}
		missing := func() []string {
			var missing []string
			for panel, list := range exprs {
				for _, e := range list {
					vals, err := promQuery(e)
					switch {
					case err != nil:
						missing = append(missing, fmt.Sprintf("%s: %s: %v", panel, e, err))
					case len(vals) == 0:
						missing = append(missing, fmt.Sprintf("%s: no data: %s", panel, e))
					case !hasNumber(vals):
						missing = append(missing, fmt.Sprintf("%s: only NaN (no observation in the window): %s", panel, e))
					}
				}
			}
			return missing
		}
		// Prometheus scrapes every 5 s and its rules run every 5 s, over
		// windows of 1 to 5 minutes: the steps above may all have happened
		// between two scrapes of a fresh cluster. Every 20 s without all
		// the data, a rollout restart makes more of everything (scheduling,
		// pod starts, runtime calls, reconciles).
		start, nudged := time.Now(), time.Now()
		for {
			m := missing()
			if len(m) == 0 {
				break
			}
			if time.Since(start) > 2*time.Minute {
				t.Fatalf("%d expressions without data after %v:\n%s", len(m), time.Since(start).Round(time.Second), strings.Join(m, "\n"))
			}
			if time.Since(nudged) > 20*time.Second {
				t.Logf("%d expressions without data yet: a rollout restart", len(m))
				c.ctl("rollout", "restart", "deployment/"+deployment)
				c.waitRolledOut(5, demoV1)
				nudged = time.Now()
			}
			time.Sleep(time.Second)
		}
		t.Logf("%d panels asked", len(exprs))
	})
	t.Run("every alert evaluates and every metric an alert names exists", func(t *testing.T) {
		c.t = t
		var active []string
		c.eventually("the rules of ../prometheus/rules, as Prometheus runs them", 2*time.Minute, func() error {
			problems, act, err := alertProblems()
			if err != nil {
				return err
			}
			active = act
			if len(problems) > 0 {
				return fmt.Errorf("%d problems:\n%s", len(problems), strings.Join(problems, "\n"))
			}
			return nil
		})
		// Logged, not failed: a young cluster may well have an alert
		// pending (every alert has a "for"), and it says which to look at.
		if len(active) > 0 {
			t.Logf("alerts pending or firing: %s", strings.Join(active, ", "))
		}
	})
	t.Run("promtool check metrics is clean for every component", func(t *testing.T) {
		c.t = t
		for _, m := range metricsEndpoints {
			if problems, err := c.lintMetrics(m.service, m.url); err != nil {
				t.Errorf("%s %s: %v\n%s", m.service, m.url, err, problems)
			}
		}
	})
	c.t = t

	step("a stopped node's pods come back Running on the other node", func(t *testing.T) {
		node2 := c.container("node2")
		if _, err := c.docker("stop", node2); err != nil {
			t.Fatal(err)
		}
		c.waitPods("5 pods ready on node1", selector, 5, 4*time.Minute, func(p object) error {
			if p.Spec.NodeName != "node1" {
				return fmt.Errorf("on %s", p.Spec.NodeName)
			}
			return nil
		})
		if _, err := c.docker("start", node2); err != nil {
			t.Fatal(err)
		}
		c.eventually("node2 Ready again", 3*time.Minute, func() error {
			n, err := c.get("node", "node2")
			if err != nil {
				return err
			}
			if !n.condition("Ready") {
				return fmt.Errorf("node2 not Ready")
			}
			return nil
		})
	})

	step("the apiserver restarts with every object, and the controllers carry on", func(t *testing.T) {
		before, err := c.get("deployment", deployment)
		if err != nil {
			t.Fatal(err)
		}
		rsBefore, err := c.list("replicasets", "-l", selector)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.docker("restart", c.container("apiserver")); err != nil {
			t.Fatal(err)
		}
		c.eventually("apiserver answering again", 2*time.Minute, func() error {
			_, err := c.get("deployment", deployment)
			return err
		})
		after, _ := c.get("deployment", deployment)
		if after.Metadata.UID != before.Metadata.UID || after.Metadata.Generation != before.Metadata.Generation {
			t.Fatalf("deployment after the restart: uid %s generation %d, before: uid %s generation %d",
				after.Metadata.UID, after.Metadata.Generation, before.Metadata.UID, before.Metadata.Generation)
		}
		rsAfter, err := c.list("replicasets", "-l", selector)
		if err != nil || len(rsAfter) != len(rsBefore) {
			t.Fatalf("replicasets after the restart: %d (%v), before: %d", len(rsAfter), err, len(rsBefore))
		}
		c.waitPods("the 5 pods still there", selector, 5, time.Minute, nil)
		c.ctl("scale", "--replicas=3", "deployment/"+deployment)
		c.waitRolledOut(3, demoV1)
	})

	step("delete with cascade leaves nothing", func(t *testing.T) {
		c.ctl("delete", "deployment", deployment, "--cascade=background")
		c.eventually("no replicaset and no pod left", 2*time.Minute, func() error {
			rs, err := c.list("replicasets", "-l", selector)
			if err != nil {
				return err
			}
			pods, err := c.list("pods", "-l", selector)
			if err != nil {
				return err
			}
			if len(rs)+len(pods) > 0 {
				return fmt.Errorf("%d replicasets, pods %s", len(rs), describePods(pods))
			}
			return nil
		})
		c.eventually("no container left on the nodes", 2*time.Minute, func() error {
			for _, node := range []string{"node1", "node2"} {
				out, err := c.docker("exec", c.container(node), "ctr", "-n", "k8s.io", "tasks", "ls", "-q")
				if err != nil {
					return err
				}
				if ids := strings.Fields(out); len(ids) > 0 {
					return fmt.Errorf("%s still runs %d containers", node, len(ids))
				}
			}
			return nil
		})
	})
}
