package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"
)

// cluster is the compose cluster under test, reached the way a user
// reaches it: skiffctl (with $SKIFFCONFIG) and docker.
type cluster struct {
	t        *testing.T
	skiffctl string
	project  string
}

func newCluster(t *testing.T) *cluster {
	ctl := fromRunner(t, "SKIFF_E2E_SKIFFCTL", "scripts/compose.sh e2e (make e2e)")
	project := os.Getenv("COMPOSE_PROJECT_NAME")
	if project == "" {
		project = "skiff"
	}
	return &cluster{t: t, skiffctl: ctl, project: project}
}

// fromRunner is the environment variable name, which the script that runs
// the test sets (runner): without it the test skips, and fails under
// CI=true, where CI runs it through that script.
func fromRunner(t *testing.T, name, runner string) string {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		msg := name + " is not set: run through " + runner
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return v
}

// object is the part of Pods, Deployments, ReplicaSets and Nodes the test
// reads (skiffctl -o json); other fields are ignored.
type object struct {
	Kind     string `json:"kind"`
	Metadata struct {
		Name              string            `json:"name"`
		UID               string            `json:"uid"`
		Generation        int64             `json:"generation"`
		DeletionTimestamp string            `json:"deletionTimestamp"`
		Labels            map[string]string `json:"labels"`
		Annotations       map[string]string `json:"annotations"`
	} `json:"metadata"`
	Spec struct {
		Replicas   *int32 `json:"replicas"`
		NodeName   string `json:"nodeName"`
		Containers []struct {
			Image string `json:"image"`
		} `json:"containers"`
	} `json:"spec"`
	Status struct {
		Phase              string `json:"phase"`
		PodIP              string `json:"podIP"`
		Replicas           int32  `json:"replicas"`
		UpdatedReplicas    int32  `json:"updatedReplicas"`
		ReadyReplicas      int32  `json:"readyReplicas"`
		AvailableReplicas  int32  `json:"availableReplicas"`
		ObservedGeneration int64  `json:"observedGeneration"`
		Succeeded          int32  `json:"succeeded"`
		Conditions         []struct {
			Type   string `json:"type"`
			Status string `json:"status"`
		} `json:"conditions"`
	} `json:"status"`
}

func (o object) condition(typ string) bool {
	for _, c := range o.Status.Conditions {
		if c.Type == typ {
			return c.Status == "True"
		}
	}
	return false
}

// podReady: Running, Ready and not being deleted.
func (o object) podReady() bool {
	return o.Status.Phase == "Running" && o.condition("Ready") && o.Metadata.DeletionTimestamp == ""
}

func (o object) image() string {
	if len(o.Spec.Containers) == 0 {
		return ""
	}
	return o.Spec.Containers[0].Image
}

// ctl runs skiffctl and returns its standard output; it fails the test
// when skiffctl fails.
func (c *cluster) ctl(args ...string) []byte {
	c.t.Helper()
	out, err := c.tryCtl(args...)
	if err != nil {
		c.t.Fatalf("skiffctl %s: %v", strings.Join(args, " "), err)
	}
	return out
}

func (c *cluster) tryCtl(args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.skiffctl, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return out, fmt.Errorf("%w: %s", err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}

// applyManifest applies a manifest given as text.
func (c *cluster) applyManifest(text string) {
	c.t.Helper()
	f := c.t.TempDir() + "/manifest.yml"
	if err := os.WriteFile(f, []byte(text), 0o644); err != nil {
		c.t.Fatal(err)
	}
	c.ctl("apply", "-f", f)
}

// list returns the objects of kind (with skiffctl's selectors).
func (c *cluster) list(kind string, args ...string) ([]object, error) {
	out, err := c.tryCtl(append([]string{"get", kind, "-o", "json"}, args...)...)
	if err != nil {
		return nil, err
	}
	var l struct {
		Items []object `json:"items"`
	}
	if err := json.Unmarshal(out, &l); err != nil {
		return nil, fmt.Errorf("skiffctl get %s: %w", kind, err)
	}
	return l.Items, nil
}

// get returns one object.
func (c *cluster) get(kind, name string) (object, error) {
	out, err := c.tryCtl("get", kind, name, "-o", "json")
	if err != nil {
		return object{}, err
	}
	var o object
	err = json.Unmarshal(out, &o)
	return o, err
}

// eventually calls check every 500 ms until it returns nil, and fails the
// test with check's last error at the deadline. The cluster is another
// process: there is nothing to wait on but its answers (watches are used
// where the test must see every state, as in the rollout watcher).
func (c *cluster) eventually(what string, timeout time.Duration, check func() error) {
	c.t.Helper()
	start := time.Now()
	deadline := start.Add(timeout)
	for {
		err := check()
		if err == nil {
			c.t.Logf("%s: after %v", what, time.Since(start).Round(100*time.Millisecond))
			return
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("%s: not after %v: %v", what, timeout, err)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// readyPods returns the pods of the selector that are Running and Ready
// (not being deleted), and all the pods.
func (c *cluster) readyPods(selector string) (ready, all []object, err error) {
	all, err = c.list("pods", "-l", selector)
	if err != nil {
		return nil, nil, err
	}
	for _, p := range all {
		if p.podReady() {
			ready = append(ready, p)
		}
	}
	return ready, all, nil
}

// waitPods waits until exactly n pods of the selector are Ready, none
// other exists (not even terminating), and each satisfies ok.
func (c *cluster) waitPods(what, selector string, n int, timeout time.Duration, ok func(object) error) []object {
	c.t.Helper()
	var got []object
	c.eventually(what, timeout, func() error {
		ready, all, err := c.readyPods(selector)
		if err != nil {
			return err
		}
		if len(ready) != n || len(all) != n {
			return fmt.Errorf("%d pods ready of %d, want %d: %s", len(ready), len(all), n, describePods(all))
		}
		for _, p := range ready {
			if ok != nil {
				if err := ok(p); err != nil {
					return fmt.Errorf("pod %s: %w", p.Metadata.Name, err)
				}
			}
		}
		got = ready
		return nil
	})
	return got
}

func describePods(pods []object) string {
	var b []string
	for _, p := range pods {
		s := fmt.Sprintf("%s(%s,%s,%s,ready=%v", p.Metadata.Name, p.Status.Phase, p.Spec.NodeName, p.image(), p.condition("Ready"))
		if p.Metadata.DeletionTimestamp != "" {
			s += ",deleting"
		}
		b = append(b, s+")")
	}
	return "[" + strings.Join(b, " ") + "]"
}

func nodesOf(pods []object) []string {
	var nodes []string
	for _, p := range pods {
		if !slices.Contains(nodes, p.Spec.NodeName) {
			nodes = append(nodes, p.Spec.NodeName)
		}
	}
	slices.Sort(nodes)
	return nodes
}

// container returns the docker container of a compose service.
func (c *cluster) container(service string) string {
	c.t.Helper()
	out, err := exec.Command("docker", "ps", "-aq",
		"--filter", "label=com.docker.compose.project="+c.project,
		"--filter", "label=com.docker.compose.service="+service).Output()
	id := strings.TrimSpace(string(out))
	if err != nil || id == "" {
		c.t.Fatalf("no container for service %s of project %s (%v)", service, c.project, err)
	}
	return strings.Fields(id)[0]
}

// docker runs docker with args and returns its combined output.
func (c *cluster) docker(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "docker", args...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("docker %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return string(out), nil
}

// httpFromNode GETs http://ip:8080/ from inside a node container (bash's
// /dev/tcp: the node image has no curl) and returns the body's last line.
func (c *cluster) httpFromNode(node, ip string) (string, error) {
	script := fmt.Sprintf(`timeout 5 bash -c 'exec 3<>/dev/tcp/%s/8080 && printf "GET / HTTP/1.0\r\nHost: %s\r\n\r\n" >&3 && tail -n 1 <&3'`, ip, ip)
	out, err := c.docker("exec", c.container(node), "bash", "-c", script)
	return strings.TrimSpace(out), err
}

// execInPod runs a command in the pod's container "demo" on node, through
// the node's containerd (ctr task exec), and returns its output.
func (c *cluster) execInPod(node, pod string, cmd ...string) (string, error) {
	n := c.container(node)
	ids, err := c.docker("exec", n, "ctr", "-n", "k8s.io", "containers", "ls", "-q",
		fmt.Sprintf(`labels."io.kubernetes.pod.name"==%s,labels."io.kubernetes.container.name"==demo`, pod))
	if err != nil {
		return "", err
	}
	tasks, err := c.docker("exec", n, "ctr", "-n", "k8s.io", "tasks", "ls")
	if err != nil {
		return "", err
	}
	for _, id := range strings.Fields(ids) {
		if !strings.Contains(tasks, id) || !strings.Contains(lineOf(tasks, id), "RUNNING") {
			continue
		}
		args := append([]string{"exec", n, "ctr", "-n", "k8s.io", "tasks", "exec", "--exec-id",
			fmt.Sprintf("e2e-%d", time.Now().UnixNano()), id}, cmd...)
		out, err := c.docker(args...)
		return strings.TrimSpace(out), err
	}
	return "", fmt.Errorf("no running container demo of pod %s on %s", pod, node)
}

func lineOf(text, substr string) string {
	for l := range strings.Lines(text) {
		if strings.Contains(l, substr) {
			return l
		}
	}
	return ""
}

// watchDeployment streams the deployment's states (skiffctl get -w -o
// json) to f until the returned stop is called; stop returns the number of
// states seen. ready is closed once the first state (the listing) arrived.
func (c *cluster) watchDeployment(name string, f func(object)) (ready <-chan struct{}, stop func() int) {
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, c.skiffctl, "get", "deployment", name, "-w", "-o", "json")
	pipe, err := cmd.StdoutPipe()
	if err != nil {
		c.t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		c.t.Fatal(err)
	}
	first := make(chan struct{})
	done := make(chan int)
	go func() {
		n := 0
		dec := json.NewDecoder(bufio.NewReader(pipe))
		for {
			var o object
			if err := dec.Decode(&o); err != nil {
				if err != io.EOF && ctx.Err() == nil {
					c.t.Errorf("watch deployment %s: %v", name, err)
				}
				break
			}
			f(o)
			if n++; n == 1 {
				close(first)
			}
		}
		done <- n
	}()
	return first, func() int {
		cancel()
		n := <-done
		_ = cmd.Wait()
		return n
	}
}
