package scenarios

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	"skiff.dev/bench/proc"
	"skiff.dev/internal/apierrors"
	"skiff.dev/internal/client"
	"skiff.dev/internal/informer"
	"skiff.dev/internal/leaderelection"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
)

// The leader figures: how long the controllers stand still when the active
// skiff-controller-manager (the real binary, a process of its own) dies.
// Each is measured from the moment the benchmark stops the leader until a
// successor both leads and has acted on a ReplicaSet scaled right after
// the stop (the scale's pod seen through a watch).
var (
	// The leader is SIGKILLed and started again at once, under the same
	// identity (the host name, the default): it takes its Lease back at its
	// first attempt.
	figLeaderFailover = Figure{Name: "leader.failover_ms", Unit: "ms", Target: AtMost(2000)}
	// The leader is SIGKILLed while a standby of another identity runs:
	// the standby waits out the lease (15 s), so this is bounded below by
	// the lease duration; no target.
	figLeaderStandby = Figure{Name: "leader.standby_failover_ms", Unit: "ms"}
	// The leader is stopped with SIGTERM while a standby runs: it releases
	// the Lease, and the standby takes it at its next retry (2 s at most).
	figLeaderRelease = Figure{Name: "leader.release_failover_ms", Unit: "ms"}
)

const (
	leaderNamespace      = "leader-bench"
	controllerManagerPkg = "skiff.dev/services/controller-manager/cmd/skiff-controller-manager"
	standbyIdentity      = "skiff-bench-standby"
)

func leaderScenario() *Scenario {
	return &Scenario{
		Name: "leader",
		Summary: "skiff-controller-manager processes (--controllers replicaset): the leader SIGKILLed and restarted; SIGKILLed with a standby running; stopped with SIGTERM with a standby running; " +
			"each time from the stop until a successor leads and creates the pod of a ReplicaSet scaled just after",
		Figures: []Figure{figLeaderFailover, figLeaderStandby, figLeaderRelease},
		Run:     runLeader,
	}
}

func runLeader(ctx context.Context, env *Env, rs *Results) error {
	lease := env.Config.LeaderLeaseDuration
	if lease < time.Second {
		return fmt.Errorf("LeaderLeaseDuration: %v, must be at least 1s", lease)
	}
	// Kubernetes' ratios: 15s, 10s, 2s.
	renew, retry := (lease * 2 / 3).Round(time.Millisecond), (lease * 2 / 15).Round(time.Millisecond)
	// Long enough for a process to start and for a lease to run out.
	timeout := 2*lease + 30*time.Second

	dir, err := os.MkdirTemp("", "skiff-bench-leader-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	env.logf("leader: building %s", controllerManagerPkg)
	bin, err := proc.Build(ctx, dir, controllerManagerPkg)
	if err != nil {
		return err
	}
	apiFlags, err := env.clientFlags(dir)
	if err != nil {
		return err
	}
	// Only the ReplicaSet controller: the others would act on what earlier
	// scenarios left (nodelifecycle would taint the scheduler scenario's
	// 1,000 nodes, which renew no Lease).
	args := append(apiFlags, "--metrics-listen", "", "--controllers", "replicaset",
		"--leader-elect-resource-namespace", leaderNamespace,
		"--leader-elect-lease-duration", lease.String(), "--leader-elect-renew-deadline", renew.String(), "--leader-elect-retry-period", retry.String())
	identity := leaderelection.DefaultIdentity()
	if identity == "" {
		return fmt.Errorf("the host has no name: the controller-manager's default identity would be empty")
	}

	conns, err := env.dial(1)
	if err != nil {
		return err
	}
	defer closeAll(conns)
	conn := conns[0]
	if _, err := client.Namespaces(conn).Create(ctx, &corev1.Namespace{Metadata: &metav1.ObjectMeta{Name: leaderNamespace}}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating namespace %s: %w", leaderNamespace, err)
	}

	// The observer: when the namespace first held n pods. The informer
	// calls its handlers one at a time.
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel() // before wg.Wait: the observer ends
	var pods proc.Moments
	names := map[string]bool{}
	obs := informer.New(informer.FromClient(client.Pods(conn)), informer.Options{ListOptions: &metav1.ListOptions{Namespace: leaderNamespace}})
	obs.AddHandler(informer.Handler[*corev1.Pod]{OnAdd: func(p *corev1.Pod) {
		names[p.GetMetadata().GetName()] = true
		pods.Mark(strconv.Itoa(len(names)), nil)
	}})
	obsDone := make(chan struct{})
	wg.Go(func() { defer close(obsDone); obs.Run(ctx) })
	if !informer.WaitForSync(ctx, obs) {
		return ctx.Err()
	}
	waitPods := func(n int) (time.Time, error) {
		at, _, err := pods.Wait(ctx, strconv.Itoa(n), timeout, obsDone)
		if err != nil {
			return at, fmt.Errorf("waiting for the ReplicaSet's pod %d: %w", n, err)
		}
		return at, nil
	}

	set := benchReplicaSet()
	set.Metadata.Namespace = leaderNamespace
	set.Spec.Replicas = proto.Int32(1)
	rsc := client.ReplicaSets(conn)
	if _, err := rsc.Create(ctx, set); err != nil {
		return fmt.Errorf("creating the ReplicaSet: %w", err)
	}
	replicas := 1
	scaleUp := func() error {
		replicas++
		return client.RetryOnConflict(ctx, client.DefaultRetry, func() error {
			cur, err := rsc.Get(ctx, leaderNamespace, set.GetMetadata().GetName())
			if err != nil {
				return err
			}
			cur.Spec.Replicas = proto.Int32(int32(replicas))
			_, err = rsc.Update(ctx, cur)
			return err
		})
	}
	var procs []*proc.Process
	defer func() {
		for _, p := range procs {
			p.Stop() // at once for those already gone
		}
	}()
	start := func(wait string, extra ...string) (*proc.Process, error) {
		p, err := proc.Start(nil, bin, append(args[:len(args):len(args)], extra...)...)
		if err != nil {
			return nil, err
		}
		procs = append(procs, p)
		if wait != "" {
			if _, _, err := p.WaitLog(ctx, wait, timeout); err != nil {
				return nil, err
			}
		}
		return p, nil
	}
	// handover stops the leader (stop: SIGKILL or SIGTERM), scales the
	// ReplicaSet, and returns how long until successor logged that it
	// leads, and until the scale's pod was seen.
	handover := func(stop func(), successor *proc.Process, what string) (led, acted time.Duration, err error) {
		t0 := time.Now()
		stop()
		if err := scaleUp(); err != nil {
			return 0, 0, fmt.Errorf("scaling the ReplicaSet to %d: %w", replicas, err)
		}
		if successor == nil {
			if successor, err = start(""); err != nil {
				return 0, 0, err
			}
		}
		leadAt, _, err := successor.WaitLog(ctx, "became leader", timeout)
		if err != nil {
			return 0, 0, fmt.Errorf("%s: %w", what, err)
		}
		podAt, err := waitPods(replicas)
		if err != nil {
			return 0, 0, fmt.Errorf("%s: %w", what, err)
		}
		return leadAt.Sub(t0), max(podAt.Sub(t0), leadAt.Sub(t0)), nil
	}

	env.logf("leader: the leader (identity %q) SIGKILLed and restarted", identity)
	first, err := start("became leader")
	if err != nil {
		return err
	}
	if _, err := waitPods(1); err != nil {
		return err
	}
	led, acted, err := handover(first.Kill, nil, "the restarted leader")
	if err != nil {
		return err
	}
	rs.Add(figLeaderFailover, ms(acted), fmt.Sprintf("SIGKILL, then the same command at once (identity %q, the host name): it led %.0f ms after the kill and its ReplicaSet controller created the pod of a scale made after the kill at %.0f ms; "+
		"the old process's lease (%v) was not waited out", identity, ms(led), ms(acted), lease))
	restarted := procs[len(procs)-1]

	env.logf("leader: the leader SIGKILLed with a standby (identity %q) running", standbyIdentity)
	standby, err := start("new leader observed", "--leader-elect-identity", standbyIdentity)
	if err != nil {
		return err
	}
	led, acted, err = handover(restarted.Kill, standby, "the standby")
	if err != nil {
		return err
	}
	rs.Add(figLeaderStandby, ms(acted), fmt.Sprintf("SIGKILL with a standby of another identity running: it waited out the lease (%v, retry every %v) and led after %.0f ms; the scale's pod at %.0f ms",
		lease, retry, ms(led), ms(acted)))

	env.logf("leader: the leader stopped with SIGTERM, the first member standing by")
	second, err := start("new leader observed")
	if err != nil {
		return err
	}
	led, acted, err = handover(standby.Stop, second, "the member standing by")
	if err != nil {
		return err
	}
	rs.Add(figLeaderRelease, ms(acted), fmt.Sprintf("SIGTERM with a standby running: the leader released the Lease as it stopped; the standby (retry every %v) led after %.0f ms, the scale's pod at %.0f ms",
		retry, ms(led), ms(acted)))
	return nil
}

// clientFlags are the command-line flags with which a program reaches the
// apiserver as the benchmark's connections do; credentials held in memory
// are written to files in dir.
func (e *Env) clientFlags(dir string) ([]string, error) {
	if e.Client == nil || e.Client.Insecure {
		return []string{"--server", e.Addr, "--insecure"}, nil
	}
	c := *e.Client
	if c.ServerName != "" || c.InsecureSkipVerify {
		return nil, fmt.Errorf("the benchmark's client config sets a server name or skips verification: no flag of the programs says so")
	}
	flags := []string{"--server", e.Addr}
	file := func(flag, path string, data []byte) error {
		if data != nil {
			path = filepath.Join(dir, flag[2:])
			if err := os.WriteFile(path, data, 0o600); err != nil {
				return err
			}
		}
		if path != "" {
			flags = append(flags, flag, path)
		}
		return nil
	}
	var token []byte
	if c.Token != "" {
		token = []byte(c.Token)
	}
	for _, f := range []struct {
		flag, path string
		data       []byte
	}{
		{"--tls-ca-file", c.CAFile, c.CAData},
		{"--tls-cert-file", c.CertFile, c.CertData},
		{"--tls-key-file", c.KeyFile, c.KeyData},
		{"--token-file", c.TokenFile, token},
	} {
		if err := file(f.flag, f.path, f.data); err != nil {
			return nil, err
		}
	}
	return flags, nil
}
