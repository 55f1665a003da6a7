package cmd

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"skiff.dev/internal/apierrors"
	"skiff.dev/internal/client"
	"skiff.dev/internal/workqueue"
	appsv1 "skiff.dev/proto/apps/v1"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	policyv1 "skiff.dev/proto/policy/v1"
	"skiff.dev/services/controller-manager/disruption"
	"skiff.dev/services/controller-manager/manager/managertest"
	"skiff.dev/services/controller-manager/replicaset"
	"skiff.dev/services/controller-manager/simnode"
)

// drainPod is a pod of the filter tables: owner is "Kind/name" or "".
func drainPod(name, owner string, mut ...func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{Metadata: &metav1.ObjectMeta{Namespace: "ns", Name: name}, Spec: &corev1.PodSpec{}, Status: &corev1.PodStatus{Phase: "Running"}}
	if kind, n, ok := strings.Cut(owner, "/"); ok {
		p.Metadata.OwnerReferences = []*metav1.OwnerReference{{ApiVersion: "apps/v1", Kind: kind, Name: n, Uid: "u", Controller: new(true)}}
	}
	for _, m := range mut {
		m(p)
	}
	return p
}

func withEmptyDir(p *corev1.Pod) {
	p.Spec.Volumes = []*corev1.Volume{{Name: "scratch", EmptyDir: &corev1.EmptyDirVolumeSource{}}}
}
func succeeded(p *corev1.Pod) { p.Status.Phase = "Succeeded" }
func mirror(p *corev1.Pod) {
	p.Metadata.Annotations = map[string]string{mirrorPodAnnotation: "x"}
}

func TestDrainFilters(t *testing.T) {
	pods := []*corev1.Pod{
		drainPod("web-1", "ReplicaSet/web"),
		drainPod("ds-1", "DaemonSet/agent"),
		drainPod("ds-orphan", "DaemonSet/gone"),
		drainPod("ds-done", "DaemonSet/agent", succeeded),
		drainPod("static", "", mirror),
		drainPod("cache", "ReplicaSet/web", withEmptyDir),
		drainPod("cache-done", "ReplicaSet/web", withEmptyDir, succeeded),
		drainPod("bare", ""),
		drainPod("bare-done", "", succeeded),
	}
	daemonSet := func(ns, name string) error {
		if name == "gone" {
			return apierrors.NewNotFound("daemonsets.apps", name)
		}
		return nil
	}
	for _, tc := range []struct {
		name             string
		filters          podFilters
		pods             []*corev1.Pod // default: all of the above
		delete           []string
		warnings, errors string
	}{
		{
			name:   "no flags: every refusal, in the filters' order",
			delete: []string{"web-1", "ds-done", "cache-done", "bare-done"},
			errors: "cannot delete DaemonSet-managed Pods (use --ignore-daemonsets to ignore): ns/ds-1\n" +
				"cannot delete daemonsets.apps \"gone\" not found: ns/ds-orphan\n" +
				"cannot delete Pods with local storage (use --delete-emptydir-data to override): ns/cache\n" +
				"cannot delete Pods that declare no controller (use --force to override): ns/bare",
		},
		{
			// As kubectl's, a later filter's okay drops an earlier warning
			// (the orphan's, local storage's): only the last one is said.
			name:     "all overrides: the orphan DaemonSet pod goes with --force",
			filters:  podFilters{force: true, ignoreDaemonSets: true, deleteEmptyDirData: true},
			delete:   []string{"web-1", "ds-orphan", "ds-done", "cache", "cache-done", "bare", "bare-done"},
			warnings: "ignoring DaemonSet-managed Pods: ns/ds-1; deleting Pods that declare no controller: ns/bare",
		},
		{
			name:     "ignored DaemonSet pods stay, with a warning",
			filters:  podFilters{ignoreDaemonSets: true},
			pods:     []*corev1.Pod{drainPod("web-1", "ReplicaSet/web"), drainPod("ds-1", "DaemonSet/agent"), drainPod("ds-2", "DaemonSet/agent")},
			delete:   []string{"web-1"},
			warnings: "ignoring DaemonSet-managed Pods: ns/ds-1, ns/ds-2",
		},
		{
			name:   "mirror pods are skipped without a word",
			pods:   []*corev1.Pod{drainPod("static", "", mirror)},
			delete: nil,
		},
		{
			name: "a DaemonSet that cannot be read is an error even with --force",
			filters: podFilters{force: true, daemonSet: func(string, string) error {
				return apierrors.NewForbidden("daemonsets.apps", "agent", "no")
			}},
			pods:   []*corev1.Pod{drainPod("ds-1", "DaemonSet/agent")},
			errors: "cannot delete " + apierrors.NewForbidden("daemonsets.apps", "agent", "no").Error() + ": ns/ds-1",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.filters.daemonSet == nil {
				tc.filters.daemonSet = daemonSet
			}
			in := tc.pods
			if in == nil {
				in = pods
			}
			l := tc.filters.filter(in)
			var names []string
			for _, p := range l.pods() {
				names = append(names, p.GetMetadata().GetName())
			}
			if !slices.Equal(names, tc.delete) {
				t.Errorf("deleted %v, want %v", names, tc.delete)
			}
			if got := l.warnings(); got != tc.warnings {
				t.Errorf("warnings:\n%s\nwant:\n%s", got, tc.warnings)
			}
			var errs []string
			for _, e := range l.errors() {
				errs = append(errs, e.Error())
			}
			if got := strings.Join(errs, "\n"); got != tc.errors {
				t.Errorf("errors:\n%s\nwant:\n%s", got, tc.errors)
			}
		})
	}
}

func TestAggregateRendering(t *testing.T) {
	one := aggregate{fmt.Errorf("a")}
	two := aggregate{fmt.Errorf("a"), fmt.Errorf("b")}
	if one.Error() != "a" || two.Error() != "[a, b]" {
		t.Errorf("got %q and %q", one.Error(), two.Error())
	}
}

// drainCluster is a node with two pods of a ReplicaSet and one of a
// DaemonSet (a simulated agent runs them and finishes them when they are
// deleted), and a pod of the ReplicaSet on another node.
type drainCluster struct {
	env  *managertest.Env
	cli  *cli
	node string
}

func startDrainCluster(t *testing.T) *drainCluster { return startDrainClusterWith(t, false) }

// startDrainClusterWith starts the drain cluster; with controllers, the
// real ReplicaSet and disruption controllers run in it too, and a third
// simulated node runs what no node is bound to (there is no scheduler):
// the ReplicaSet's replacements.
func startDrainClusterWith(t *testing.T, controllers bool) *drainCluster {
	t.Helper()
	env := managertest.Start(t)
	const node = "n1"
	env.SimNode(simnode.Options{NodeName: node})
	env.SimNode(simnode.Options{NodeName: "n2"})
	if controllers {
		rsc := replicaset.New(env.Manager, replicaset.Options{})
		budgets := disruption.New(env.Manager, disruption.Options{})
		env.SimNode(simnode.Options{Accept: func(p *corev1.Pod) bool { return p.GetSpec().GetNodeName() == "" }})
		defer func() {
			env.GoErr(rsc.Run)
			env.GoErr(budgets.Run)
		}()
	}
	env.StartInformers()
	ctx := env.Ctx
	for _, n := range []string{"n1", "n2"} {
		if _, err := client.Nodes(env.Conn).Create(ctx, &corev1.Node{Metadata: &metav1.ObjectMeta{Name: n}}); err != nil {
			t.Fatal(err)
		}
	}
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
	tmpl := &corev1.PodTemplateSpec{Metadata: &metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
		Spec: &corev1.PodSpec{Containers: []*corev1.Container{{Name: "c", Image: "web"}}}}
	rs, err := client.ReplicaSets(env.Conn).Create(ctx, &appsv1.ReplicaSet{Metadata: &metav1.ObjectMeta{Namespace: "default", Name: "web"},
		Spec: &appsv1.ReplicaSetSpec{Replicas: new(int32(3)), Selector: sel, Template: tmpl}})
	if err != nil {
		t.Fatal(err)
	}
	dsSel := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "agent"}}
	ds, err := client.DaemonSets(env.Conn).Create(ctx, &appsv1.DaemonSet{Metadata: &metav1.ObjectMeta{Namespace: "default", Name: "agent"},
		Spec: &appsv1.DaemonSetSpec{Selector: dsSel, Template: &corev1.PodTemplateSpec{Metadata: &metav1.ObjectMeta{Labels: map[string]string{"app": "agent"}},
			Spec: &corev1.PodSpec{Containers: []*corev1.Container{{Name: "c", Image: "agent"}}}}}})
	if err != nil {
		t.Fatal(err)
	}
	mk := func(name, node, kind string, owner *metav1.ObjectMeta, app string) {
		t.Helper()
		p := &corev1.Pod{Metadata: &metav1.ObjectMeta{Namespace: "default", Name: name, Labels: map[string]string{"app": app},
			OwnerReferences: []*metav1.OwnerReference{{ApiVersion: "apps/v1", Kind: kind, Name: owner.GetName(), Uid: owner.GetUid(), Controller: new(true)}}},
			Spec: &corev1.PodSpec{NodeName: node, Containers: []*corev1.Container{{Name: "c", Image: app}}}}
		if _, err := client.Pods(env.Conn).Create(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	mk("web-1", node, "ReplicaSet", rs.GetMetadata(), "web")
	mk("web-2", node, "ReplicaSet", rs.GetMetadata(), "web")
	mk("web-3", "n2", "ReplicaSet", rs.GetMetadata(), "web")
	mk("agent-1", node, "DaemonSet", ds.GetMetadata(), "agent")
	env.Await(30*time.Second, "the pods run", func() (bool, string) {
		for _, p := range env.Pods().Store().List() {
			if p.GetStatus().GetPhase() != "Running" {
				return false, p.GetMetadata().GetName() + " is " + p.GetStatus().GetPhase()
			}
		}
		return len(env.Pods().Store().List()) == 4, fmt.Sprintf("%d pods", len(env.Pods().Store().List()))
	})
	return &drainCluster{env: env, cli: newCLIFor(t, env.Server.Addr(), "default", time.Now()), node: node}
}

// drain runs skiffctl drain with deps to its end (at most a minute).
func (dc *drainCluster) drain(deps drainDeps, args ...string) result {
	dc.cli.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out, errw bytes.Buffer
	r := &root{env: dc.cli.env(&out, &errw), log: zap.NewNop()}
	defer r.close()
	if deps.clock == nil {
		deps.clock = workqueue.RealClock()
	}
	c := r.drainCmdWith(deps)
	c.SilenceErrors, c.SilenceUsage = true, true
	c.SetArgs(args)
	code := 0
	if err := c.ExecuteContext(ctx); err != nil {
		code = 1
		if ee, ok := err.(*exitError); !ok || !ee.silent {
			fmt.Fprintln(&errw, r.message(err))
		}
	}
	return result{out: out.String(), err: errw.String(), code: code}
}

// drainUntilARetryWaits starts drain n1 --ignore-daemonsets on a fake
// clock and returns once a refused eviction waits on it to be retried
// (step it by evictRetryDelay), with the channel that has the drain's
// result at its end.
func (dc *drainCluster) drainUntilARetryWaits(t *testing.T) (*workqueue.FakeClock, <-chan result) {
	t.Helper()
	clk := workqueue.NewFakeClock(time.Now())
	done := make(chan result, 1)
	go func() { done <- dc.drain(drainDeps{clock: clk}, "n1", "--ignore-daemonsets") }()
	wctx, cancel := context.WithTimeout(dc.env.Ctx, 30*time.Second)
	defer cancel()
	if err := clk.BlockUntilWaiters(wctx, 1); err != nil {
		select {
		case r := <-done:
			t.Fatalf("no eviction waits to be retried; drain ended: exit %d\n%s%s", r.code, r.out, r.err)
		default:
			t.Fatalf("no eviction waits to be retried: %v", err)
		}
	}
	return clk, done
}

// podNames are the names of the pods left (sorted), those being deleted
// marked with a "~".
func (dc *drainCluster) podNames() []string {
	dc.cli.t.Helper()
	l, err := client.Pods(dc.env.Conn).List(context.Background(), &metav1.ListOptions{Namespace: "default"})
	if err != nil {
		dc.cli.t.Fatal(err)
	}
	var names []string
	for _, p := range l.GetItems() {
		n := p.GetMetadata().GetName()
		if p.GetMetadata().GetDeletionTimestamp() != nil {
			n = "~" + n
		}
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

func sortedLines(s string) []string {
	lines := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	slices.Sort(lines)
	return lines
}

func TestDrainRefusesAndDeletes(t *testing.T) {
	dc := startDrainCluster(t)
	deps := drainDeps{}

	// DaemonSet pods stop the drain, after the cordon.
	r := dc.drain(deps, "n1")
	if r.code == 0 || r.out != "node/n1 cordoned\n" {
		t.Fatalf("drain n1: exit %d\n%s%s", r.code, r.out, r.err)
	}
	wantErr := `error: unable to drain node "n1" due to error: cannot delete DaemonSet-managed Pods (use --ignore-daemonsets to ignore): default/agent-1, continuing command...
There are pending nodes to be drained:
 n1
cannot delete DaemonSet-managed Pods (use --ignore-daemonsets to ignore): default/agent-1
`
	if r.err != wantErr {
		t.Errorf("stderr:\n%s\nwant:\n%s", r.err, wantErr)
	}
	n, err := client.Nodes(dc.env.Conn).Get(context.Background(), "", "n1")
	if err != nil || !n.GetSpec().GetUnschedulable() {
		t.Errorf("n1 is not cordoned: %v %v", n.GetSpec(), err)
	}

	// A client dry run says what it would do.
	r = dc.drain(deps, "n1", "--ignore-daemonsets", "--dry-run=client")
	if r.code != 0 {
		t.Fatalf("dry run: exit %d\n%s%s", r.code, r.out, r.err)
	}
	if want := "node/n1 already cordoned (dry run)\nevicting pod default/web-1 (dry run)\nevicting pod default/web-2 (dry run)\nnode/n1 drained (dry run)\n"; r.out != want {
		t.Errorf("dry run stdout:\n%s\nwant:\n%s", r.out, want)
	}
	if want := "WARNING: ignoring DaemonSet-managed Pods: default/agent-1\n"; r.err != want {
		t.Errorf("dry run stderr:\n%s\nwant:\n%s", r.err, want)
	}

	// --disable-eviction deletes; the agent finishes the pods.
	r = dc.drain(deps, "n1", "--ignore-daemonsets", "--disable-eviction")
	if r.code != 0 {
		t.Fatalf("drain --disable-eviction: exit %d\n%s%s", r.code, r.out, r.err)
	}
	if got, want := sortedLines(r.out), []string{"node/n1 already cordoned", "node/n1 drained", "pod/web-1 deleted", "pod/web-2 deleted"}; !slices.Equal(got, want) {
		t.Errorf("stdout:\n%s\nwant the lines %q", r.out, want)
	}
	if !strings.HasSuffix(r.out, "node/n1 drained\n") {
		t.Errorf("stdout does not end with the node drained:\n%s", r.out)
	}
	if got, want := dc.podNames(), []string{"agent-1", "web-3"}; !slices.Equal(got, want) {
		t.Errorf("pods left %v, want %v", got, want)
	}
}

func TestDrainUnknownNodeAndUsage(t *testing.T) {
	c := newCLI(t)
	if got, want := c.fails("drain", "no-such-node"), "Error from server (NotFound): nodes \"no-such-node\" not found\n"; got != want {
		t.Errorf("stderr %q, want %q", got, want)
	}
	if got := c.fails("drain"); !strings.HasPrefix(got, "error: USAGE: drain NODE [flags]\nSee 'skiffctl drain -h'") {
		t.Errorf("stderr %q", got)
	}
	if got := c.fails("drain", "n", "-l", "pool=blue"); !strings.HasPrefix(got, "error: cannot specify both a node name and a --selector option\n") {
		t.Errorf("stderr %q", got)
	}
	if got, want := c.fails("drain", "n", "--pod-selector", "a in (b"), "error: --pod-selector=<pod_selector> must be a valid label selector\n"; got != want {
		t.Errorf("stderr %q, want %q", got, want)
	}
}

// retryWarning is kubectl's line for an eviction a budget refused.
func retryWarning(pod string) string {
	return fmt.Sprintf(`error when evicting pods/%q -n "default" (will retry after 5s): Cannot evict pod as it would violate the pod's disruption budget.`, pod)
}

// checkRetriedDrain checks the output of a drain of web-1 and web-2
// where one eviction was refused once, then passed.
func checkRetriedDrain(t *testing.T, r result) {
	t.Helper()
	if r.code != 0 {
		t.Fatalf("drain: exit %d\n%s%s", r.code, r.out, r.err)
	}
	refused := "web-1"
	if strings.Count(r.out, "evicting pod default/web-2") == 2 {
		refused = "web-2"
	}
	want := []string{"evicting pod default/" + refused, "evicting pod default/web-1", "evicting pod default/web-2",
		"node/n1 cordoned", "node/n1 drained", "pod/web-1 evicted", "pod/web-2 evicted"}
	slices.Sort(want)
	if got := sortedLines(r.out); !slices.Equal(got, want) || !strings.HasSuffix(r.out, "node/n1 drained\n") {
		t.Errorf("stdout:\n%s\nwant the lines %q, the last one node/n1 drained", r.out, want)
	}
	if wantErr := "WARNING: ignoring DaemonSet-managed Pods: default/agent-1\n" + retryWarning(refused) + "\n"; r.err != wantErr {
		t.Errorf("stderr:\n%s\nwant:\n%s", r.err, wantErr)
	}
}

func TestDrainTimesOutOnRefusedEvictions(t *testing.T) {
	dc := startDrainCluster(t)
	webBudget(t, dc)(0)
	clk := workqueue.NewFakeClock(time.Now())
	done := make(chan result, 1)
	go func() { done <- dc.drain(drainDeps{clock: clk}, "n1", "--ignore-daemonsets", "--timeout=7s") }()
	// The timeout's timer and both pods' retry timers.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := clk.BlockUntilWaiters(ctx, 3); err != nil {
		t.Fatalf("the evictions do not wait: %v", err)
	}
	clk.Step(evictRetryDelay) // both tried again, refused again
	if err := clk.BlockUntilWaiters(ctx, 3); err != nil {
		t.Fatalf("the evictions do not wait again: %v", err)
	}
	clk.Step(2 * time.Second) // the timeout
	r := <-done
	t.Logf("stdout:\n%sstderr:\n%s", r.out, r.err)
	if r.code == 0 {
		t.Fatalf("drain succeeded:\n%s%s", r.out, r.err)
	}
	for _, want := range []string{
		`error: unable to drain node "n1" due to error: [error when evicting pods/"web-`,
		"There are pending pods in node \"n1\" when an error occurred: [",
		"pod/web-1\npod/web-2\n",
		"There are pending nodes to be drained:\n n1\n",
		`error when evicting pods/"web-1" -n "default": global timeout reached: 7s` + "\n",
		`error when evicting pods/"web-2" -n "default": global timeout reached: 7s` + "\n",
	} {
		if !strings.Contains(r.err, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.err)
		}
	}
	if n := strings.Count(r.err, retryWarning("web-1")); n != 2 {
		t.Errorf("web-1 refused %d times, want 2:\n%s", n, r.err)
	}
	if got, want := dc.podNames(), []string{"agent-1", "web-1", "web-2", "web-3"}; !slices.Equal(got, want) {
		t.Errorf("pods left %v, want %v", got, want)
	}
}

// TestDrainEvictsWithinTheBudget drains through the apiserver's eviction,
// the test playing the disruption controller: the budget allows one
// disruption, so one pod is evicted at once and the other is refused
// (429) and retried after 5 s, once the budget allows one more.
func TestDrainEvictsWithinTheBudget(t *testing.T) {
	dc := startDrainCluster(t)
	ctx := dc.env.Ctx
	pdbs := client.PodDisruptionBudgets(dc.env.Conn)
	allow := webBudget(t, dc)
	allow(1)

	clk, done := dc.drainUntilARetryWaits(t)
	cur, err := pdbs.Get(ctx, "default", "web")
	if err != nil {
		t.Fatal(err)
	}
	if got := cur.GetStatus().GetDisruptionsAllowed(); got != 0 || len(cur.GetStatus().GetDisruptedPods()) != 1 {
		t.Errorf("after one eviction the budget allows %d disruptions, disrupted %v; want 0 and one pod", got, cur.GetStatus().GetDisruptedPods())
	}
	allow(1)
	clk.Step(evictRetryDelay)
	checkRetriedDrain(t, <-done)
	if got, want := dc.podNames(), []string{"agent-1", "web-3"}; !slices.Equal(got, want) {
		t.Errorf("pods left %v, want %v", got, want)
	}
}

// TestDrainWithTheDisruptionController drains under a budget the real
// disruption controller keeps, from the real evictions and the real
// ReplicaSet controller's replacements: the first eviction takes the one
// disruption allowed, the second is refused (429) until the evicted
// pod's replacement is Ready and the controller allows one again, and the
// drain then ends with both of n1's web pods evicted and replaced.
func TestDrainWithTheDisruptionController(t *testing.T) {
	dc := startDrainClusterWith(t, true)
	ctx := dc.env.Ctx
	_, err := client.PodDisruptionBudgets(dc.env.Conn).Create(ctx, &policyv1.PodDisruptionBudget{Metadata: &metav1.ObjectMeta{Namespace: "default", Name: "web"},
		Spec: &policyv1.PodDisruptionBudgetSpec{MaxUnavailable: &metav1.IntOrString{Value: &metav1.IntOrString_IntVal{IntVal: 1}},
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}})
	if err != nil {
		t.Fatal(err)
	}
	allows := func(n int32) func() (bool, string) {
		return func() (bool, string) {
			b, err := client.PodDisruptionBudgets(dc.env.Conn).Get(ctx, "default", "web")
			if err != nil {
				return false, err.Error()
			}
			st := b.GetStatus()
			return st.GetObservedGeneration() == b.GetMetadata().GetGeneration() && st.GetDisruptionsAllowed() == n && st.GetCurrentHealthy() == 3,
				managertest.Explain("status %v", st)
		}
	}
	dc.env.Await(30*time.Second, "the disruption controller allows one disruption of 3 healthy", allows(1))

	clk, done := dc.drainUntilARetryWaits(t)
	// The refused eviction is retried once the controller has seen the
	// replacement Ready.
	dc.env.Await(30*time.Second, "the disruption controller allows one again", allows(1))
	clk.Step(evictRetryDelay)
	checkRetriedDrain(t, <-done)
	dc.env.Await(30*time.Second, "n1's web pods replaced", func() (bool, string) {
		var web, onN1 []string
		for _, p := range dc.env.Pods().Store().List() {
			if p.GetMetadata().GetLabels()["app"] != "web" || p.GetMetadata().GetDeletionTimestamp() != nil {
				continue
			}
			web = append(web, p.GetMetadata().GetName()+"@"+p.GetSpec().GetNodeName())
			if p.GetSpec().GetNodeName() == "n1" {
				onN1 = append(onN1, p.GetMetadata().GetName())
			}
		}
		return len(web) == 3 && len(onN1) == 0, fmt.Sprintf("web pods %v", web)
	})
}

// webBudget creates a PodDisruptionBudget of the web pods and returns how
// the test sets the disruptions it allows, as the disruption controller
// would (observedGeneration = generation).
func webBudget(t *testing.T, dc *drainCluster) func(n int32) {
	t.Helper()
	ctx := dc.env.Ctx
	pdbs := client.PodDisruptionBudgets(dc.env.Conn)
	pdb, err := pdbs.Create(ctx, &policyv1.PodDisruptionBudget{Metadata: &metav1.ObjectMeta{Namespace: "default", Name: "web"},
		Spec: &policyv1.PodDisruptionBudgetSpec{MaxUnavailable: &metav1.IntOrString{Value: &metav1.IntOrString_IntVal{IntVal: 1}},
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}})
	if err != nil {
		t.Fatal(err)
	}
	return func(n int32) {
		t.Helper()
		err := client.RetryOnConflict(ctx, client.DefaultRetry, func() error {
			cur, err := pdbs.Get(ctx, "default", pdb.GetMetadata().GetName())
			if err != nil {
				return err
			}
			cur.Status = &policyv1.PodDisruptionBudgetStatus{ObservedGeneration: cur.GetMetadata().GetGeneration(),
				DisruptionsAllowed: n, CurrentHealthy: 3, DesiredHealthy: 2, ExpectedPods: 3}
			_, err = pdbs.UpdateStatus(ctx, cur)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// cordon and uncordon without a node say so once, as kubectl does (they
// printed "error: error: USAGE: ...").
func TestCordonUsage(t *testing.T) {
	c := newCLI(t)
	for _, name := range []string{"cordon", "uncordon"} {
		if got := c.fails(name); !strings.HasPrefix(got, "error: USAGE: "+name+" NODE [flags]\nSee 'skiffctl "+name+" -h'") {
			t.Errorf("%s: stderr %q", name, got)
		}
	}
}
