package e2e

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The install test (make e2e-install, deploy/install-test/run.sh) follows
// docs/install.md on six simulated machines: containers running systemd,
// five on a Docker network of their own and node3 on a second one, which
// reaches the first through a router container. The commands are the page's: its
// blocks marked "install-test <machine>..." are run on those machines in
// order, with the variables of its "install-vars" block set to the
// machines' addresses, so that the page and the test cannot drift apart.

// installMachine is a simulated machine: its name in docs/install.md (and
// hostname), the variable holding its address there, and its address.
type installMachine struct {
	name, variable, ip string
	// other: on the second network, which reaches the first only through
	// the router (node3, for the VXLAN section).
	other bool
}

// routerHost is the router's host number on either network.
const routerHost = ".254"

// installBlock is a block of docs/install.md marked for the test.
type installBlock struct {
	line     int
	section  string // the "## " heading it is under
	machines []string
	body     string
}

// operatingSection is the heading of docs/install.md's blocks that run
// once the cluster is installed and checked (replacing a member).
const operatingSection = "Operating the cluster"

// parseInstallDoc returns the page's install-vars block and its
// install-test blocks, in order. Only blocks fenced at the start of a line
// count (the page's indented examples are for the reader).
func parseInstallDoc(text string) (vars string, blocks []installBlock, err error) {
	var (
		in      bool
		kind    string // "vars", "test" or "" (another block)
		cur     installBlock
		body    strings.Builder
		section string
	)
	sc := bufio.NewScanner(strings.NewReader(text))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case !in && strings.HasPrefix(line, "## "):
			section = strings.TrimPrefix(line, "## ")
		case !in && strings.HasPrefix(line, "```"):
			in, kind, cur = true, "", installBlock{line: n, section: section}
			body.Reset()
			f := strings.Fields(strings.TrimPrefix(line, "```"))
			switch {
			case len(f) >= 2 && f[1] == "install-vars":
				kind = "vars"
			case len(f) >= 2 && f[1] == "install-test":
				if len(f) < 3 {
					return "", nil, fmt.Errorf("line %d: install-test names no machine", n)
				}
				kind, cur.machines = "test", f[2:]
			}
		case in && line == "```":
			in = false
			switch kind {
			case "vars":
				if vars != "" {
					return "", nil, fmt.Errorf("line %d: a second install-vars block", cur.line)
				}
				vars = body.String()
			case "test":
				cur.body = body.String()
				blocks = append(blocks, cur)
			}
		case in:
			body.WriteString(line + "\n")
		}
	}
	if in {
		return "", nil, fmt.Errorf("the block of line %d is not closed", cur.line)
	}
	if vars == "" || len(blocks) == 0 {
		return "", nil, fmt.Errorf("no install-vars block or no install-test block")
	}
	return vars, blocks, nil
}

// substituteVars gives the variables of values the test's values in the
// install-vars block; every one must be assigned there (a variable the
// page renamed would otherwise keep its example address).
func substituteVars(vars string, values map[string]string) (string, error) {
	seen := map[string]bool{}
	var out strings.Builder
	for _, line := range strings.SplitAfter(vars, "\n") {
		name, _, ok := strings.Cut(line, "=")
		if v, known := values[name]; ok && known {
			line = name + "=" + v + "\n"
			seen[name] = true
		}
		out.WriteString(line)
	}
	for name := range values {
		if !seen[name] {
			return "", fmt.Errorf("docs/install.md's install-vars block does not assign %s", name)
		}
	}
	return out.String(), nil
}

// scpLine is "scp SRC... root@$VAR:[DEST]", a copy between machines.
var scpLine = regexp.MustCompile(`^scp\s+(.+)\s+root@\$([A-Z0-9_]+):(\S*)$`)

type installRig struct {
	t        *testing.T
	project  string
	machines []installMachine
	vars     string // the install-vars block, with the machines' addresses
	ctlDir   string // a skiffctl wrapper per machine
	// routes are the route to the other network and its gateway, by
	// whether a machine is on the second network.
	routes map[bool][]string
}

func (r *installRig) container(machine string) string { return r.project + "-" + machine }

// docker runs docker with args, stdin as its input; it returns the
// combined output.
func (r *installRig) docker(ctx context.Context, stdin []byte, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "docker", args...)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return out, fmt.Errorf("docker %s: %w: %s", strings.Join(args[:min(len(args), 3)], " "), err, lastLines(out, 30))
	}
	return out, nil
}

func (r *installRig) mustDocker(stdin []byte, args ...string) []byte {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	out, err := r.docker(ctx, stdin, args...)
	if err != nil {
		r.t.Fatal(err)
	}
	return out
}

// sh runs a script with bash as root in machine's home, with the page's
// variables set.
func (r *installRig) sh(ctx context.Context, machine, script string) ([]byte, error) {
	return r.docker(ctx, nil, "exec", "-w", "/root", "-e", "HOME=/root", r.container(machine),
		"bash", "-euo", "pipefail", "-c", r.vars+script)
}

func (r *installRig) byVariable(name string) (installMachine, bool) {
	for _, m := range r.machines {
		if m.variable == name {
			return m, true
		}
	}
	return installMachine{}, false
}

// copyFiles does an scp line of machine from: each source (as the shell
// there expands it) to the machine of the variable, into DEST (a
// directory when it ends with /, the home when empty), mode 0600.
func (r *installRig) copyFiles(ctx context.Context, from string, m []string) error {
	to, ok := r.byVariable(m[2])
	if !ok {
		return fmt.Errorf("scp to $%s: no machine has that address variable", m[2])
	}
	for _, src := range strings.Fields(m[1]) {
		data, err := r.docker(ctx, nil, "exec", "-w", "/root", "-e", "HOME=/root", r.container(from), "bash", "-c", "cat "+src)
		if err != nil {
			return err
		}
		dest := m[3]
		switch {
		case dest == "":
			dest = "/root/" + filepath.Base(src)
		case strings.HasSuffix(dest, "/"):
			dest += filepath.Base(src)
		}
		if _, err := r.docker(ctx, data, "exec", "-i", r.container(to.name), "sh", "-c", `umask 077 && cat >"$1"`, "-", dest); err != nil {
			return err
		}
		r.t.Logf("   scp %s:%s -> %s:%s (%d bytes)", from, src, to.name, dest, len(data))
	}
	return nil
}

// run runs a block on one machine: its scp lines as copies, the lines
// between them as one bash script each.
func (r *installRig) run(b installBlock, machine string) {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	start := time.Now()
	var script strings.Builder
	flush := func() {
		r.t.Helper()
		if strings.TrimSpace(script.String()) == "" {
			return
		}
		out, err := r.sh(ctx, machine, script.String())
		r.t.Logf("   %s", strings.ReplaceAll(strings.TrimRight(string(out), "\n"), "\n", "\n   "))
		if err != nil {
			r.t.Fatalf("docs/install.md line %d on %s: %v", b.line, machine, err)
		}
		script.Reset()
	}
	r.t.Logf("== docs/install.md line %d on %s:\n%s", b.line, machine, b.body)
	for _, line := range strings.SplitAfter(b.body, "\n") {
		if m := scpLine.FindStringSubmatch(strings.TrimSpace(line)); m != nil {
			flush()
			if err := r.copyFiles(ctx, machine, m); err != nil {
				r.t.Fatalf("docs/install.md line %d on %s: %v", b.line, machine, err)
			}
			continue
		}
		script.WriteString(line)
	}
	flush()
	r.t.Logf("   (%s: %v)", machine, time.Since(start).Round(100*time.Millisecond))
}

// ctl is the compose tests' cluster helper with skiffctl run on machine,
// as the page runs it there.
func (r *installRig) ctl(machine string) *cluster {
	r.t.Helper()
	path := filepath.Join(r.ctlDir, "skiffctl-"+machine)
	if _, err := os.Stat(path); err != nil {
		script := fmt.Sprintf("#!/bin/sh\nexec docker exec -e HOME=/root %s skiffctl \"$@\"\n", r.container(machine))
		if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
			r.t.Fatal(err)
		}
	}
	return &cluster{t: r.t, skiffctl: path, project: r.project}
}

// metrics returns the samples of machine's apiserver /metrics whose name
// is name (label sets as written), read on the machine itself.
func (r *installRig) metrics(machine, name string) (map[string]float64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out, err := r.docker(ctx, nil, "exec", r.container(machine), "bash", "-c",
		`exec 3<>/dev/tcp/127.0.0.1/6444 && printf 'GET /metrics HTTP/1.0\r\n\r\n' >&3 && cat <&3`)
	if err != nil {
		return nil, err
	}
	samples := map[string]float64{}
	for _, line := range strings.Split(string(out), "\n") {
		series, value, ok := strings.Cut(strings.TrimSpace(line), " ")
		if !ok || (series != name && !strings.HasPrefix(series, name+"{")) {
			continue
		}
		v, err := strconv.ParseFloat(value, 64)
		if err != nil {
			return nil, fmt.Errorf("%s: %q: %w", machine, line, err)
		}
		samples[strings.TrimPrefix(series, name)] = v
	}
	if len(samples) == 0 {
		return nil, fmt.Errorf("%s: no %s in /metrics", machine, name)
	}
	return samples, nil
}

// etcdVoters checks that the members of machines are voting etcd members
// (not learners, each with a leader) and that exactly one leads; it
// returns the leader. (etcd_network_active_peers is not used: a pipeline
// send that timed out while a peer was down marks it inactive after its
// streams have reconnected, and it stays so until the next pipeline send.)
func (r *installRig) etcdVoters(machines []string) (string, error) {
	var leaders []string
	for _, m := range machines {
		for name, want := range map[string]float64{"etcd_server_is_learner": 0, "etcd_server_has_leader": 1} {
			s, err := r.metrics(m, name)
			if err != nil {
				return "", err
			}
			if s[""] != want {
				return "", fmt.Errorf("%s: %s %v, want %v", m, name, s[""], want)
			}
		}
		lead, err := r.metrics(m, "etcd_server_is_leader")
		if err != nil {
			return "", err
		}
		if lead[""] == 1 {
			leaders = append(leaders, m)
		}
	}
	if len(leaders) != 1 {
		return "", fmt.Errorf("etcd leaders among %v: %v", machines, leaders)
	}
	return leaders[0], nil
}

func lastLines(out []byte, n int) string {
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// TestInstall: docs/install.md on three control-plane machines and two
// nodes, then the cluster it made checked, and checked again with cp1
// stopped.
func TestInstall(t *testing.T) {
	tarball := fromRunner(t, "SKIFF_INSTALL_TARBALL", "deploy/install-test/run.sh (make e2e-install)")
	image := envOr("SKIFF_INSTALL_IMAGE", "skiff-install/machine:dev")
	subnet := envOr("SKIFF_INSTALL_NET", "10.211.62")
	otherSubnet := envOr("SKIFF_INSTALL_OTHER_NET", "10.211.63")
	docPath := envOr("SKIFF_INSTALL_DOC", "../../../docs/install.md")
	r := &installRig{t: t, project: envOr("SKIFF_INSTALL_PROJECT", "skiff-install"), ctlDir: t.TempDir()}
	r.machines = []installMachine{
		{"cp1", "CP1", subnet + ".11", false}, {"cp2", "CP2", subnet + ".12", false}, {"cp3", "CP3", subnet + ".13", false},
		{"node1", "NODE1", subnet + ".21", false}, {"node2", "NODE2", subnet + ".22", false},
		{"node3", "NODE3", otherSubnet + ".23", true},
	}
	doc, err := os.ReadFile(docPath)
	if err != nil {
		t.Fatal(err)
	}
	vars, blocks, err := parseInstallDoc(string(doc))
	if err != nil {
		t.Fatalf("%s: %v", docPath, err)
	}
	values := map[string]string{"IMAGE": "skiff.local/demo:v1"}
	for _, m := range r.machines {
		values[m.variable] = m.ip
	}
	if r.vars, err = substituteVars(vars, values); err != nil {
		t.Fatal(err)
	}
	for _, b := range blocks {
		for _, m := range b.machines {
			if _, ok := values[strings.ToUpper(m)]; !ok {
				t.Fatalf("docs/install.md line %d: no machine %s", b.line, m)
			}
		}
	}
	total := time.Now()

	// The machines, on their own network; removed at the end (kept with
	// SKIFF_INSTALL_KEEP=1), their services' logs shown when the test
	// failed.
	label := "skiff.dev/install-test=" + r.project
	removeAll := func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if ids, _ := r.docker(ctx, nil, "ps", "-aq", "--filter", "label="+label); len(bytes.TrimSpace(ids)) > 0 {
			_, _ = r.docker(ctx, nil, append([]string{"rm", "-fv"}, strings.Fields(string(ids))...)...)
		}
		_, _ = r.docker(ctx, nil, "network", "rm", r.project, r.otherNetwork())
	}
	removeAll() // what an interrupted run left
	t.Cleanup(func() {
		if t.Failed() {
			for _, m := range r.machines {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				out, _ := r.docker(ctx, nil, "exec", r.container(m.name), "journalctl", "--no-pager", "-n", "40",
					"-u", "skiff-apiserver", "-u", "skiff-controller-manager", "-u", "skiff-scheduler", "-u", "skiff-node-agent")
				cancel()
				t.Logf("--- %s: the last lines of its Skiff units' logs:\n%s", m.name, out)
				if strings.HasPrefix(m.name, "cp") {
					ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
					out, _ := r.docker(ctx, nil, "exec", r.container(m.name), "sh", "-c",
						"journalctl --no-pager -u skiff-apiserver | grep -E 'peer became|member|leader' | tail -n 30")
					cancel()
					t.Logf("--- %s: its etcd peers and members:\n%s", m.name, out)
				}
			}
		}
		if os.Getenv("SKIFF_INSTALL_KEEP") == "1" {
			t.Logf("kept: containers %s-*, network %s", r.project, r.project)
			return
		}
		removeAll()
	})
	// Two networks: the second (node3's) reaches the first only through
	// a router, a container on both that forwards (Docker keeps its
	// networks apart); each machine routes the other network through it
	// (routeOther), as a real network's routers would.
	r.mustDocker(nil, "network", "create", "--label", label, "--subnet", subnet+".0/24", r.project)
	r.mustDocker(nil, "network", "create", "--label", label, "--subnet", otherSubnet+".0/24", r.otherNetwork())
	r.mustDocker(nil, "run", "-d", "--name", r.container("router"), "--hostname", "router", "--label", label,
		"--network", r.project, "--ip", subnet+routerHost, "--sysctl", "net.ipv4.ip_forward=1",
		"--entrypoint", "sleep", image, "infinity")
	r.mustDocker(nil, "network", "connect", "--ip", otherSubnet+routerHost, r.otherNetwork(), r.container("router"))
	r.routes = map[bool][]string{
		false: {otherSubnet + ".0/24", subnet + routerHost},
		true:  {subnet + ".0/24", otherSubnet + routerHost},
	}
	for _, m := range r.machines {
		// systemd as PID 1 (deploy/compose/images/machine): a private
		// cgroup namespace, made writable by its entrypoint; the node
		// containers' capabilities (every one but CAP_SYS_RESOURCE, see
		// RUNTIME-NOTES); containerd's data on a volume (overlayfs on the
		// container's own overlay is refused).
		network := r.project
		if m.other {
			network = r.otherNetwork()
		}
		r.mustDocker(nil, "run", "-d", "--name", r.container(m.name), "--hostname", m.name, "--label", label,
			"--network", network, "--ip", m.ip, "--cgroupns=private",
			"--cap-add", "ALL", "--cap-drop", "SYS_RESOURCE",
			"--security-opt", "seccomp=unconfined", "--security-opt", "apparmor=unconfined",
			"--tmpfs", "/run", "--tmpfs", "/run/lock", "--tmpfs", "/tmp",
			"-v", "/var/lib/containerd", "--sysctl", "net.ipv4.ip_forward=1", image)
	}
	for _, m := range r.machines {
		// Waits for the boot to finish: running, or degraded (a unit
		// failed: shown, and the test goes on; the checks say whether
		// it mattered). Before systemd answers at all, --wait does not
		// wait: "offline" or an error.
		var state string
		(&cluster{t: t}).eventually(m.name+" booted", time.Minute, func() error {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			out, _ := r.docker(ctx, nil, "exec", r.container(m.name), "systemctl", "is-system-running", "--wait")
			state = strings.TrimSpace(lastLines(out, 1))
			if state != "running" && state != "degraded" {
				return fmt.Errorf("systemd: %q", state)
			}
			return nil
		})
		if state != "running" {
			failed, _ := r.docker(context.Background(), nil, "exec", r.container(m.name), "systemctl", "--failed", "--no-legend")
			t.Logf("%s: systemd %s; failed units: %s", m.name, state, failed)
		}
		r.routeOther(m)
		r.mustDocker(nil, "cp", tarball, r.container(m.name)+":/root/")
		if strings.HasPrefix(m.name, "node") {
			// What a registry would give the nodes: the pause image
			// (containerd's sandbox_image) and $IMAGE.
			r.mustDocker(nil, "exec", r.container(m.name), "sh", "-c",
				"ctr -n k8s.io images import /opt/skiff/images/pause.tar && ctr -n k8s.io images import /opt/skiff/images/demo-v1.tar")
		}
	}
	t.Logf("%d machines booted, the tarball copied in: %v", len(r.machines), time.Since(total).Round(100*time.Millisecond))

	// docs/install.md, block by block, up to its operating section.
	installStart := time.Now()
	var operating []installBlock
	for _, b := range blocks {
		if b.section == operatingSection {
			operating = append(operating, b)
			continue
		}
		for _, m := range b.machines {
			r.run(b, m)
		}
	}
	t.Logf("docs/install.md followed in %v", time.Since(installStart).Round(100*time.Millisecond))

	cps := []string{"cp1", "cp2", "cp3"}
	c1 := r.ctl("cp1")
	c1.eventually("three voting etcd members, one leader", 2*time.Minute, func() error {
		leader, err := r.etcdVoters(cps)
		if err == nil {
			t.Logf("etcd leader: %s", leader)
		}
		return err
	})
	// nodesReady: the cluster's nodes are names, all Ready.
	nodesReady := func(c *cluster, names ...string) func() error {
		return func() error {
			nodes, err := c.list("nodes")
			if err != nil {
				return err
			}
			ready := map[string]bool{}
			for _, n := range nodes {
				ready[n.Metadata.Name] = n.condition("Ready")
			}
			for _, n := range names {
				if !ready[n] {
					return fmt.Errorf("nodes Ready: %v, want %v", ready, names)
				}
			}
			if len(nodes) != len(names) {
				return fmt.Errorf("nodes Ready: %v, want %v", ready, names)
			}
			return nil
		}
	}
	c1.eventually("node1 and node2 Ready", 2*time.Minute, nodesReady(c1, "node1", "node2"))
	onNodes := map[string]string{} // node -> its pod's IP
	pods := c1.waitPods("the Deployment's two pods Running", "app=hello", 2, 3*time.Minute, func(object) error { return nil })
	for _, p := range pods {
		onNodes[p.Spec.NodeName] = p.Status.PodIP
	}
	if onNodes["node1"] == "" || onNodes["node2"] == "" {
		t.Fatalf("the pods run on %v, want node1 and node2", onNodes)
	}
	// The pod network across the machines: each node reaches the other
	// node's pod (the demo server, $IMAGE, answers HTTP on 8080) through
	// the routes the agents keep.
	r.reachPods(c1, onNodes)

	// cp1 stopped (its units stopped by systemd, as at a shutdown): the
	// others keep a quorum, serve writes, and the components move to them.
	// skiffctl's config goes to cp2 and cp3 first.
	tarCfg := r.mustDocker(nil, "exec", r.container("cp1"), "tar", "-C", "/root", "-c", ".skiff")
	for _, m := range []string{"cp2", "cp3"} {
		r.mustDocker(tarCfg, "exec", "-i", r.container(m), "tar", "-C", "/root", "-x")
	}
	leader := func(c *cluster, lease string) (string, error) {
		out, err := c.tryCtl("get", "lease", "-n", "kube-system", lease, "-o", "jsonpath={.spec.holderIdentity}")
		return strings.TrimSpace(string(out)), err
	}
	leases := []string{"skiff-controller-manager", "skiff-scheduler"}
	for _, lease := range leases {
		holder, err := leader(c1, lease)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s's leader before cp1 stops: %s", lease, holder)
	}
	stopped := time.Now()
	r.mustDocker(nil, "stop", "-t", "30", r.container("cp1"))
	t.Logf("cp1 stopped in %v", time.Since(stopped).Round(100*time.Millisecond))
	c2, c3 := r.ctl("cp2"), r.ctl("cp3")
	c2.eventually("cp2 and cp3: voting, one leader", time.Minute, func() error {
		for _, m := range cps[1:] {
			s, err := r.metrics(m, "etcd_server_has_leader")
			if err != nil {
				return err
			}
			if s[""] != 1 {
				return fmt.Errorf("%s has no etcd leader", m)
			}
		}
		return nil
	})
	mark := "written-through-cp2-" + strconv.FormatInt(stopped.Unix(), 10)
	c2.eventually("an annotation written through cp2", time.Minute, func() error {
		_, err := c2.tryCtl("--server", "https://"+subnet+".12:6443", "annotate", "--overwrite", "deployment", "hello", "skiff.dev/install-test="+mark)
		return err
	})
	// markThrough: the Deployment's annotation, read through the member
	// at ip alone, is mark.
	markThrough := func(c *cluster, ip string) func() error {
		return func() error {
			out, err := c.tryCtl("--server", "https://"+ip+":6443", "get", "deployment", "hello", "-o", "jsonpath={.metadata.annotations.skiff\\.dev/install-test}")
			if err != nil {
				return err
			}
			if got := strings.TrimSpace(string(out)); got != mark {
				return fmt.Errorf("annotation %q, want %q", got, mark)
			}
			return nil
		}
	}
	c3.eventually("the annotation read through cp3", 30*time.Second, markThrough(c3, subnet+".13"))
	// The controller-manager and the scheduler lead from another machine
	// (their identity is the hostname), and roll a scale out.
	for _, lease := range leases {
		c3.eventually(lease+" led from cp2 or cp3", time.Minute, func() error {
			holder, err := leader(c3, lease)
			if err == nil && holder != "cp2" && holder != "cp3" {
				err = fmt.Errorf("held by %q", holder)
			}
			return err
		})
	}
	c2.ctl("scale", "deployment", "hello", "--replicas", "1")
	c3.waitPods("the Deployment scaled to one pod through cp2", "app=hello", 1, 2*time.Minute, func(object) error { return nil })
	// The node agents renew their Leases through cp2 and cp3.
	for _, n := range []string{"node1", "node2"} {
		c3.eventually(n+"'s Lease renewed after cp1 stopped", time.Minute, func() error {
			out, err := c3.tryCtl("get", "lease", "-n", "kube-node-lease", n, "-o", "jsonpath={.spec.renewTime}")
			if err != nil {
				return err
			}
			renewed, err := time.Parse(time.RFC3339Nano, strings.TrimSpace(string(out)))
			if err != nil {
				return err
			}
			if !renewed.After(stopped) {
				return fmt.Errorf("renewed at %s, before cp1 stopped (%s)", renewed.Format(time.RFC3339Nano), stopped.Format(time.RFC3339Nano))
			}
			return nil
		})
	}
	c3.eventually("node1 and node2 still Ready", 30*time.Second, nodesReady(c3, "node1", "node2"))

	// cp1 back: its member takes its place again from its data, and has
	// caught up: its API serves what was written while it was down.
	r.mustDocker(nil, "start", r.container("cp1"))
	cp1, _ := r.byVariable("CP1")
	r.routeOther(cp1) // a new network namespace: the route is gone
	c2.eventually("cp1 back: three voting etcd members", 2*time.Minute, func() error {
		_, err := r.etcdVoters(cps)
		return err
	})
	c1.eventually("cp1 caught up: the annotation read through cp1", time.Minute, markThrough(c1, subnet+".11"))

	// docs/install.md's operating blocks: cp3 removed and replaced by a
	// new member (another etcd member ID) on the same machine, wiped;
	// node1 and node2 moved to the VXLAN overlay, node3 joined from the
	// other network, the example Deployment's pods on the three.
	if len(operating) == 0 {
		t.Fatalf("docs/install.md has no install-test block under %q", operatingSection)
	}
	oldID, err := r.metrics("cp3", "etcd_server_id")
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range operating {
		for _, m := range b.machines {
			r.run(b, m)
		}
	}
	c1.eventually("cp3 replaced: three voting etcd members, cp3 a new one", 2*time.Minute, func() error {
		if _, err := r.etcdVoters(cps); err != nil {
			return err
		}
		id, err := r.metrics("cp3", "etcd_server_id")
		if err != nil {
			return err
		}
		for series := range id {
			if _, same := oldID[series]; same {
				return fmt.Errorf("cp3's etcd member is still %s", series)
			}
		}
		t.Logf("cp3's etcd member: %v, was %v", keys(id), keys(oldID))
		return nil
	})
	c1.eventually("node1, node2 and node3 Ready at the end", time.Minute, nodesReady(c1, "node1", "node2", "node3"))
	// The overlay across the router: every node reaches the others'
	// pods, node3's from the first network and the first's from node3,
	// which no route through an InternalIP could (the kernel takes no
	// gateway off its own network); and the agents route through the
	// VXLAN device.
	onNodes = map[string]string{}
	for _, p := range c1.waitPods("the Deployment's three pods Running", "app=hello", 3, 3*time.Minute, func(object) error { return nil }) {
		onNodes[p.Spec.NodeName] = p.Status.PodIP
	}
	if len(onNodes) != 3 {
		t.Fatalf("the pods run on %v, want node1, node2 and node3", onNodes)
	}
	r.reachPods(c1, onNodes)
	for _, n := range []string{"node1", "node3"} {
		routes := r.mustDocker(nil, "exec", r.container(n), "ip", "route", "show", "proto", "83")
		if !strings.Contains(string(routes), "dev skiff.vxlan") {
			t.Errorf("%s's pod routes do not go through skiff.vxlan:\n%s", n, routes)
		}
		t.Logf("%s's pod routes:\n%s", n, strings.TrimSpace(string(routes)))
	}
	t.Logf("install test: %v in all", time.Since(total).Round(100*time.Millisecond))
}

// otherNetwork is the second network's name.
func (r *installRig) otherNetwork() string { return r.project + "-other" }

// routeOther routes the network m is not on through the router.
func (r *installRig) routeOther(m installMachine) {
	r.t.Helper()
	route := r.routes[m.other]
	r.mustDocker(nil, "exec", r.container(m.name), "ip", "route", "replace", route[0], "via", route[1])
}

// reachPods checks that every node of onNodes (node -> its pod's IP)
// reaches every other node's pod: an HTTP answer from the demo server.
func (r *installRig) reachPods(c *cluster, onNodes map[string]string) {
	r.t.Helper()
	for from := range onNodes {
		for to, ip := range onNodes {
			if to == from {
				continue
			}
			c.eventually(from+" reaches "+to+"'s pod "+ip, time.Minute, func() error {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				out, err := r.docker(ctx, nil, "exec", r.container(from), "bash", "-c",
					`exec 3<>/dev/tcp/`+ip+`/8080 && printf 'GET / HTTP/1.0\r\n\r\n' >&3 && head -1 <&3`)
				if err != nil {
					return err
				}
				if !strings.Contains(string(out), " 200 ") {
					return fmt.Errorf("answer %q", strings.TrimSpace(string(out)))
				}
				return nil
			})
		}
	}
}

func keys(m map[string]float64) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	return ks
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}
