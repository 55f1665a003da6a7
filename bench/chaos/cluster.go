package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"google.golang.org/grpc"

	"skiff.dev/bench/proc"
	"skiff.dev/internal/client"
	"skiff.dev/services/node-agent/sim"
)

// The programs of a cluster, by the name Kill and Restart take.
const (
	APIServer         = "apiserver"
	ControllerManager = "controller-manager"
	Scheduler         = "scheduler"
)

var packages = map[string]string{
	APIServer:         "skiff.dev/services/apiserver/cmd/skiff-apiserver",
	ControllerManager: "skiff.dev/services/controller-manager/cmd/skiff-controller-manager",
	Scheduler:         "skiff.dev/services/scheduler/cmd/skiff-scheduler",
	"node-agent":      "skiff.dev/services/node-agent/cmd/skiff-node-agent",
}

// startTimeout bounds the wait for a program to say it is up.
const startTimeout = 2 * time.Minute

// cluster is Skiff's real binaries as processes on loopback: an apiserver
// (embedded etcd, --insecure), a controller-manager, a scheduler, and node
// agents whose container runtime is a simulated CRI served by this
// process (one per node: a paused or killed agent leaves its "containers"
// running, as a real node's would).
type cluster struct {
	cfg   Config
	dir   string
	bins  map[string]string
	addr  string // the apiserver's, kept across restarts
	etcd  string // the embedded etcd's client URL, from its last start
	procs map[string]*proc.Process
	args  map[string][]string
	nodes []*node
	conn  *grpc.ClientConn
	logs  io.Writer
}

// apiserverDir is the apiserver's --data-dir.
func (c *cluster) apiserverDir() string { return filepath.Join(c.dir, "apiserver") }

// node is one simulated node: its runtime and its agent's name.
type node struct {
	name string
	sim  *sim.Server
}

// startCluster builds the programs and starts them all, nodes last, and
// returns once every node is registered.
func startCluster(ctx context.Context, cfg Config, logs io.Writer) (*cluster, error) {
	dir, err := os.MkdirTemp("", "skiff-chaos-")
	if err != nil {
		return nil, err
	}
	c := &cluster{cfg: cfg, dir: dir, bins: map[string]string{}, procs: map[string]*proc.Process{}, args: map[string][]string{}, logs: logs}
	for name, pkg := range packages {
		cfg.logf("building %s", pkg)
		if c.bins[name], err = proc.Build(ctx, dir, pkg); err != nil {
			c.stop()
			return nil, err
		}
	}
	port, err := freePort()
	if err != nil {
		c.stop()
		return nil, err
	}
	c.addr = "127.0.0.1:" + strconv.Itoa(port)
	api := []string{"--insecure", "--listen", c.addr, "--metrics-listen", "", "--data-dir", c.apiserverDir()}
	server := []string{"--server", c.addr, "--insecure", "--metrics-listen", ""}
	c.args[APIServer] = api
	c.args[ControllerManager] = append(server, "--node-monitor-grace-period", cfg.NodeGracePeriod.String())
	c.args[Scheduler] = server
	for _, name := range []string{APIServer, ControllerManager, Scheduler} {
		if err := c.start(ctx, name); err != nil {
			c.stop()
			return nil, err
		}
	}
	if c.conn, err = client.Dial(client.Config{Server: c.addr, Insecure: true}); err != nil {
		c.stop()
		return nil, err
	}
	for i := range cfg.Nodes {
		n := &node{name: fmt.Sprintf("chaos-node-%d", i+1)}
		if n.sim, err = sim.Start(sim.Options{Subnet: fmt.Sprintf("10.%d.0.0/16", 100+i)}); err != nil {
			c.stop()
			return nil, err
		}
		c.nodes = append(c.nodes, n)
		listen, err := freePort()
		if err != nil {
			c.stop()
			return nil, err
		}
		root := filepath.Join(dir, n.name)
		c.args[n.name] = append(server[:len(server):len(server)], "--node-name", n.name, "--node-ip", "127.0.0.1",
			"--listen", "127.0.0.1:"+strconv.Itoa(listen), "--container-runtime-endpoint", n.sim.Endpoint(),
			"--root-dir", filepath.Join(root, "pods"), "--pod-log-dir", filepath.Join(root, "logs"),
			"--lease-renew-interval", "1s", "--node-status-update-frequency", "1s",
			// Simulated nodes on one host: no packet filter, no DNS server.
			"--proxy-mode", "none", "--cluster-dns", "")
		c.bins[n.name] = c.bins["node-agent"]
		if err := c.start(ctx, n.name); err != nil {
			c.stop()
			return nil, err
		}
	}
	return c, nil
}

// ready is the log message each program says it is up with.
func ready(name string) string {
	switch name {
	case APIServer:
		return "apiserver serving"
	case ControllerManager, Scheduler:
		return "became leader"
	}
	return "pods listed" // registered (or its Node updated) and its pods listed
}

// start starts the program name and waits until it is up.
func (c *cluster) start(ctx context.Context, name string) error {
	p, err := proc.Start(c.logs, c.bins[name], c.args[name]...)
	if err != nil {
		return err
	}
	c.procs[name] = p
	_, line, err := p.WaitLog(ctx, ready(name), startTimeout)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if name == APIServer {
		var serving struct{ Etcd string }
		if err := json.Unmarshal(line, &serving); err != nil || serving.Etcd == "" {
			return fmt.Errorf("the apiserver's serving line names no etcd endpoint: %s", line)
		}
		c.etcd = serving.Etcd
	}
	return nil
}

// kill SIGKILLs the program name (it cleans nothing up, as a crash).
func (c *cluster) kill(name string) {
	if p := c.procs[name]; p != nil {
		p.Kill()
		delete(c.procs, name)
	}
}

// restart SIGKILLs the program name and starts it again at once, and
// returns how long until it said it was up.
func (c *cluster) restart(ctx context.Context, name string) (time.Duration, error) {
	t0 := time.Now()
	c.kill(name)
	err := c.start(ctx, name)
	return time.Since(t0), err
}

// stop ends every program and runtime and removes the cluster's files.
func (c *cluster) stop() {
	for name, p := range c.procs {
		p.Stop()
		delete(c.procs, name)
	}
	for _, n := range c.nodes {
		n.sim.Close()
	}
	if c.conn != nil {
		c.conn.Close()
	}
	os.RemoveAll(c.dir)
}

// freePort returns a loopback TCP port free now.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
