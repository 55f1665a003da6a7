package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// workloadsManifest is issue 21's story: a Job of two completions, a
// DaemonSet of the demo server, and a one-replica StatefulSet whose claim
// the default StorageClass (local-path) provisions on its pod's node.
const workloadsManifest = `apiVersion: batch/v1
kind: Job
metadata:
  name: e2e-job
spec:
  completions: 2
  parallelism: 2
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: work
        image: skiff.local/demo:v1
        command: [/demo, "true"]
---
apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: e2e-ds
spec:
  selector:
    matchLabels: {app: e2e-ds}
  template:
    metadata:
      labels: {app: e2e-ds}
    spec:
      terminationGracePeriodSeconds: 2
      containers:
      - name: demo
        image: skiff.local/demo:v1
        readinessProbe:
          httpGet: {path: /ready, port: 8080}
          periodSeconds: 1
---
apiVersion: v1
kind: Service
metadata:
  name: e2e-db
spec:
  clusterIP: None
  selector: {app: e2e-db}
  ports:
  - {name: http, port: 8080}
---
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: e2e-db
spec:
  replicas: 1
  serviceName: e2e-db
  selector:
    matchLabels: {app: e2e-db}
  template:
    metadata:
      labels: {app: e2e-db}
    spec:
      terminationGracePeriodSeconds: 2
      # The demo image is FROM scratch: an init container gives it a tar
      # (a copy of /demo, which acts by the name it is called by) for cp.
      initContainers:
      - name: tools
        image: skiff.local/demo:v1
        command: [/demo, install, /demo, /bin/tar]
        volumeMounts:
        - {name: bin, mountPath: /bin}
      containers:
      - name: demo
        image: skiff.local/demo:v1
        volumeMounts:
        - {name: data, mountPath: /data}
        - {name: bin, mountPath: /bin}
        readinessProbe:
          httpGet: {path: /ready, port: 8080}
          periodSeconds: 1
      volumes:
      - name: bin
        emptyDir: {}
  volumeClaimTemplates:
  - metadata: {name: data}
    spec:
      accessModes: [ReadWriteOnce]
      resources: {requests: {storage: 64Mi}}
`

// TestWorkloads: a Job completes, a DaemonSet runs one pod on each node,
// and a StatefulSet's data survives the deletion of its pod, which comes
// back with the same name on the same node.
func TestWorkloads(t *testing.T) {
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
	c.applyManifest(workloadsManifest)
	t.Cleanup(func() {
		_, _ = c.tryCtl("delete", "job/e2e-job", "daemonset/e2e-ds", "statefulset/e2e-db", "service/e2e-db", "pvc/data-e2e-db-0", "--wait=false")
	})

	step("a Job completes", func(t *testing.T) {
		c.ctl("wait", "--for=condition=complete", "job/e2e-job", "--timeout=3m")
		j, err := c.get("job", "e2e-job")
		if err != nil {
			t.Fatal(err)
		}
		if s := j.Status.Succeeded; s != 2 {
			t.Fatalf("the Job completed with %d successes, want 2", s)
		}
	})

	step("a DaemonSet runs one pod on each node", func(t *testing.T) {
		nodes, err := c.list("nodes")
		if err != nil {
			t.Fatal(err)
		}
		pods := c.waitPods(fmt.Sprintf("%d daemon pods ready", len(nodes)), "app=e2e-ds", len(nodes), 3*time.Minute, nil)
		if got := nodesOf(pods); len(got) != len(nodes) {
			t.Fatalf("the daemon pods are on %v, want one on each of %d nodes", got, len(nodes))
		}
	})

	step("a StatefulSet's data survives its pod", func(t *testing.T) {
		pods := c.waitPods("e2e-db-0 ready", "app=e2e-db", 1, 3*time.Minute, nil)
		if pods[0].Metadata.Name != "e2e-db-0" {
			t.Fatalf("the StatefulSet's pod is %s, want e2e-db-0", pods[0].Metadata.Name)
		}
		node := pods[0].Spec.NodeName
		proof := "written before the pod was deleted: " + randomHex(8)
		local := filepath.Join(t.TempDir(), "proof")
		if err := os.WriteFile(local, []byte(proof), 0o644); err != nil {
			t.Fatal(err)
		}
		c.ctl("cp", local, "e2e-db-0:/data/proof", "-c", "demo")
		c.ctl("delete", "pod", "e2e-db-0")
		pods = c.waitPods("e2e-db-0 back", "app=e2e-db", 1, 3*time.Minute, func(p object) error {
			if p.Metadata.UID == pods[0].Metadata.UID {
				return fmt.Errorf("still the old pod")
			}
			return nil
		})
		if pods[0].Spec.NodeName != node {
			t.Fatalf("e2e-db-0 came back on %s, its volume is on %s", pods[0].Spec.NodeName, node)
		}
		if got := string(c.ctl("exec", "e2e-db-0", "-c", "demo", "--", "/demo", "cat", "/data/proof")); !strings.Contains(got, proof) {
			t.Fatalf("/data/proof after the pod came back: %q, want %q", got, proof)
		}
	})
}
