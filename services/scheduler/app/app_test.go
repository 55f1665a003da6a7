package app

import (
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"skiff.dev/internal/await"
	"skiff.dev/internal/client"
	"skiff.dev/internal/informer"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/apiserver/apiservertest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		goleak.IgnoreAnyFunction("google.golang.org/grpc/internal/grpcsync.(*CallbackSerializer).run"),
	)
}

func TestBadPolicyFailsFastWithItsLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "policy.yaml")
	policy := `apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
percentageOfNodesToScore: 250
profiles:
  - schedulerName: default-scheduler
    plugins:
      filter:
        enabled:
          - name: NodeResourcesFitt
`
	if err := os.WriteFile(path, []byte(policy), 0o644); err != nil {
		t.Fatal(err)
	}
	// No apiserver listens there: the policy must fail before any dial.
	o, err := ParseFlags([]string{"--config", path, "--server", "127.0.0.1:1", "--metrics-listen", ""}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err = Run(ctx, o, zap.NewNop(), func(string) { t.Error("the program started despite a bad policy") })
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{
		path + `:3:27: percentageOfNodesToScore: must be between 0 and 100 (0: adaptive), not 250`,
		path + `:9:19: profiles[0].plugins.filter.enabled[0].name: unknown plugin "NodeResourcesFitt"`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error\n%v\ndoes not say\n%s", err, want)
		}
	}
}

func TestPolicyFillsLeaderElectionFlagsNotGiven(t *testing.T) {
	path := filepath.Join(t.TempDir(), "policy.yaml")
	policy := `apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection:
  leaderElect: false
  resourceName: from-file
  leaseDuration: 30s
`
	if err := os.WriteFile(path, []byte(policy), 0o644); err != nil {
		t.Fatal(err)
	}
	o, err := ParseFlags([]string{"--config", path, "--leader-elect-lease-duration", "20s"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := LoadPolicy(o); err != nil {
		t.Fatal(err)
	}
	le := o.LeaderElection
	if o.LeaderElect || le.Lock.Name != "from-file" || le.LeaseDuration != 20*time.Second {
		t.Errorf("leaderElect=%v name=%q lease=%v; want false, from-file, 20s (the flag wins)", o.LeaderElect, le.Lock.Name, le.LeaseDuration)
	}
}

// A restarted scheduler is the same member: without --leader-elect-identity
// it takes its host's name, so it finds the Lease its previous run held as
// its own and schedules at once instead of waiting the lease out.
func TestLeaderElectIdentityIsStableAcrossRestarts(t *testing.T) {
	host, err := os.Hostname()
	if err != nil || host == "" {
		t.Fatalf("os.Hostname() = %q, %v", host, err)
	}
	first, err := ParseFlags(nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	restarted, err := ParseFlags(nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if a, b := first.LeaderElection.Identity, restarted.LeaderElection.Identity; a != host || b != host {
		t.Errorf("default identities of two runs on host %q: %q and %q; want the host name both times", host, a, b)
	}
	given, err := ParseFlags([]string{"--leader-elect-identity", "sched-b"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if id := given.LeaderElection.Identity; id != "sched-b" {
		t.Errorf("--leader-elect-identity sched-b: identity %q", id)
	}
}

// bindCounter records the binds of each pod through one scheduler's
// connection: the nodes of those that succeeded, and how many ended with
// the caller's context cancelled (whose outcome the caller cannot know).
type bindCounter struct {
	mu        sync.Mutex
	ok        map[string][]string
	cancelled map[string]int
	refused   int
}

func newBindCounter() *bindCounter {
	return &bindCounter{ok: map[string][]string{}, cancelled: map[string]int{}}
}

func (b *bindCounter) intercept(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	err := invoker(ctx, method, req, reply, cc, opts...)
	if bd, ok := req.(*corev1.Binding); ok {
		name := bd.GetMetadata().GetName()
		b.mu.Lock()
		switch {
		case err == nil:
			b.ok[name] = append(b.ok[name], bd.GetTarget().GetName())
		case status.Code(err) == codes.Canceled:
			b.cancelled[name]++
		default:
			b.refused++
		}
		b.mu.Unlock()
	}
	return err
}

func (b *bindCounter) snapshot() (ok map[string][]string, cancelled map[string]int, refused int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return maps.Clone(b.ok), maps.Clone(b.cancelled), b.refused
}

// TestTwoSchedulersWithLeaderElectionNeverBindAPodTwice: two copies of the
// program compete for the Lease; the leader is stopped while pods are
// being scheduled and the standby takes over. Every pod is bound exactly
// once.
func TestTwoSchedulersWithLeaderElectionNeverBindAPodTwice(t *testing.T) {
	s := apiservertest.Start(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for i := range 3 {
		n, err := client.Nodes(s.Conn).Create(ctx, &corev1.Node{Metadata: &metav1.ObjectMeta{Name: fmt.Sprintf("n%d", i)}})
		if err != nil {
			t.Fatal(err)
		}
		n.Status = &corev1.NodeStatus{Allocatable: map[string]string{"cpu": "32", "memory": "64Gi", "pods": "110"}}
		if _, err := client.Nodes(s.Conn).UpdateStatus(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	// The observer.
	pods := informer.New(informer.FromClient(client.Pods(s.Conn)), informer.Options{})
	var changed await.Signal
	poke := changed.Poke
	pods.AddHandler(informer.Handler[*corev1.Pod]{OnAdd: func(*corev1.Pod) { poke() }, OnUpdate: func(_, _ *corev1.Pod) { poke() }})
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	wg.Add(1)
	go func() { defer wg.Done(); pods.Run(ctx) }()

	start := func(name string) (*bindCounter, context.CancelFunc, chan error) {
		spy := newBindCounter()
		o, err := ParseFlags([]string{
			"--server", s.Addr(), "--insecure", "--metrics-listen", "", "--leader-elect-identity", name,
			"--leader-elect-lease-duration", "2s", "--leader-elect-renew-deadline", "1500ms", "--leader-elect-retry-period", "100ms",
		}, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		o.DialOptions = []grpc.DialOption{grpc.WithUnaryInterceptor(spy.intercept)}
		pctx, pcancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- Run(pctx, o, zap.NewNop(), nil) }()
		return spy, pcancel, done
	}
	await := func(what string, cond func() (bool, string)) {
		t.Helper()
		changed.Until(t, 15*time.Second, what, nil, cond)
	}
	create := func(name string) {
		p := &corev1.Pod{
			Metadata: &metav1.ObjectMeta{Namespace: "test", Name: name},
			Spec: &corev1.PodSpec{Containers: []*corev1.Container{{Name: "c", Image: "i",
				Resources: &corev1.ResourceRequirements{Requests: map[string]string{"cpu": "100m"}}}}},
		}
		if _, err := client.Pods(s.Conn).Create(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	bound := func(prefix string, n int) func() (bool, string) {
		return func() (bool, string) {
			c := 0
			for _, p := range pods.Store().List() {
				if strings.HasPrefix(p.GetMetadata().GetName(), prefix) && p.GetSpec().GetNodeName() != "" {
					c++
				}
			}
			return c == n, fmt.Sprintf("%d of %d %s* pods bound", c, n, prefix)
		}
	}

	spyA, stopA, doneA := start("a")
	create("first")
	await("the first leader to bind a pod", bound("first", 1))
	spyB, stopB, doneB := start("b")
	defer func() { stopB(); <-doneB }()

	// Stop the leader in the middle of a burst.
	for i := range 40 {
		create(fmt.Sprintf("burst-%02d", i))
		if i == 20 {
			stopA()
		}
	}
	if err := <-doneA; err != nil {
		t.Errorf("the first leader's Run: %v", err)
	}
	await("the standby to take over and bind the rest", bound("burst-", 40))

	// The watch may show a bind before the spy hears its answer.
	await("the spies to hear every bind's answer", func() (bool, string) {
		a, ca, _ := spyA.snapshot()
		b, cb, _ := spyB.snapshot()
		for _, p := range pods.Store().List() {
			name := p.GetMetadata().GetName()
			if len(a[name])+len(b[name])+ca[name]+cb[name] == 0 {
				return false, name + " has no answer yet"
			}
		}
		return true, ""
	})
	a, cancelledA, refusedA := spyA.snapshot()
	b, cancelledB, refusedB := spyB.snapshot()
	if len(a["first"]) != 1 || len(b["first"]) != 0 {
		t.Errorf("first: bound %v by a, %v by b", a["first"], b["first"])
	}
	if len(b) == 0 {
		t.Error("the standby never bound anything")
	}
	for _, p := range pods.Store().List() {
		name, node := p.GetMetadata().GetName(), p.GetSpec().GetNodeName()
		binds := append(slices.Clone(a[name]), b[name]...)
		switch {
		case len(binds) > 1:
			t.Errorf("%s bound %d times: %v", name, len(binds), binds)
		case len(binds) == 1 && binds[0] != node:
			t.Errorf("%s bound to %s but is on %s", name, binds[0], node)
		case len(binds) == 0 && cancelledA[name]+cancelledB[name] == 0:
			t.Errorf("%s is on %q but no scheduler bound it", name, node)
		}
	}
	t.Logf("a bound %d pods, b %d; binds cancelled at a's stop (outcome unknown to it): %d; refused: a %d, b %d",
		len(a), len(b), len(cancelledA)+len(cancelledB), refusedA, refusedB)
}

// TestMetricsAndHealth runs the program against an apiserver with TLS and
// authentication, as system:kube-scheduler with a client certificate.
func TestMetricsAndHealth(t *testing.T) {
	s := apiservertest.Start(t, apiservertest.Secure())
	creds := s.ClientConfig(t, "system:kube-scheduler")
	ctx, cancel := context.WithCancel(context.Background())
	n, err := client.Nodes(s.Conn).Create(ctx, &corev1.Node{Metadata: &metav1.ObjectMeta{Name: "n"}})
	if err != nil {
		t.Fatal(err)
	}
	n.Status = &corev1.NodeStatus{Allocatable: map[string]string{"cpu": "1", "memory": "1Gi", "pods": "10"}}
	if _, err := client.Nodes(s.Conn).UpdateStatus(ctx, n); err != nil {
		t.Fatal(err)
	}
	o, err := ParseFlags([]string{"--server", s.Addr(), "--tls-ca-file", creds.CAFile, "--tls-cert-file", creds.CertFile, "--tls-key-file", creds.KeyFile,
		"--metrics-listen", "127.0.0.1:0", "--leader-elect=false"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	addrc := make(chan string, 1)
	done := make(chan error, 1)
	go func() { done <- Run(ctx, o, zap.NewNop(), func(a string) { addrc <- a }) }()
	defer func() { cancel(); <-done }()
	addr := <-addrc

	if _, err := client.Pods(s.Conn).Create(ctx, &corev1.Pod{
		Metadata: &metav1.ObjectMeta{Namespace: "test", Name: "p"},
		Spec:     &corev1.PodSpec{Containers: []*corev1.Container{{Name: "c", Image: "i"}}},
	}); err != nil {
		t.Fatal(err)
	}
	w, err := client.Pods(s.Conn).Watch(ctx, &metav1.ListOptions{Namespace: "test"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	for {
		ev, err := w.Next()
		if err != nil {
			t.Fatal(err)
		}
		if ev.Object.GetSpec().GetNodeName() != "" {
			break
		}
	}
	get := func(path string) string {
		resp, err := http.Get("http://" + addr + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			t.Errorf("%s: %d %s", path, resp.StatusCode, b)
		}
		return string(b)
	}
	get("/healthz")
	get("/readyz")
	// The bind's watch event may arrive before the scheduler counts the
	// attempt: wait for the figures, within a deadline.
	wants := []string{
		`scheduler_schedule_attempts_total{profile="default-scheduler",result="scheduled"} 1`,
		`scheduler_pending_pods{queue="active"} 0`,
		`scheduler_pod_scheduling_sli_duration_seconds_count{attempts="1"} 1`,
		`scheduler_scheduling_attempt_duration_seconds_count{profile="default-scheduler",result="scheduled"} 1`,
		`scheduler_framework_extension_point_duration_seconds_count{extension_point="filter",profile="default-scheduler",status="Success"}`,
		`scheduler_cache_size{type="nodes"} 1`,
	}
	var scraped await.Signal
	scraped.Until(t, 10*time.Second, "the scheduling metrics", ctx.Done(), func() (bool, string) {
		m := get("/metrics")
		for _, want := range wants {
			if !strings.Contains(m, want) {
				return false, "/metrics lacks " + want
			}
		}
		return true, ""
	})
}
