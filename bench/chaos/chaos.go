package chaos

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/protobuf/proto"

	"skiff.dev/internal/apierrors"
	"skiff.dev/internal/client"
	appsv1 "skiff.dev/proto/apps/v1"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/apiserver/apiserver"
)

// Config sizes a run. DefaultConfig is `make chaos`; ShortConfig the
// short form in CI.
type Config struct {
	Nodes          int
	Replicas       int // of the Deployment rolled out
	MaxSurge       int
	MaxUnavailable int
	Writes         int // ConfigMaps written while the apiserver is killed
	// JobCompletions is the Job run while the controller-manager is killed.
	JobCompletions int
	// NodeGracePeriod is the controller-manager's
	// --node-monitor-grace-period: a node whose Lease is older is NotReady.
	NodeGracePeriod time.Duration
	// PinnedToleration is the tolerationSeconds of the pods pinned to the
	// node that stays away; EvictionWindow is how long their evictions
	// are counted.
	PinnedToleration time.Duration
	EvictionWindow   time.Duration
	// Converge bounds the wait after each fault for the Deployment to be
	// back where it is asked to be; NodeGone bounds the wait for the pods
	// of a deleted node to be gone.
	Converge time.Duration
	NodeGone time.Duration
	// Progress receives one line per step; nil discards them.
	Progress io.Writer
}

// DefaultConfig is the run: 100 replicas, maxSurge 10, 1,000 writes.
func DefaultConfig() Config {
	return Config{
		Nodes: 3, Replicas: 100, MaxSurge: 10, MaxUnavailable: 25, Writes: 1000, JobCompletions: 300,
		NodeGracePeriod: 8 * time.Second, PinnedToleration: 3 * time.Second, EvictionWindow: 15 * time.Second,
		Converge: 60 * time.Second, NodeGone: 60 * time.Second,
	}
}

// ShortConfig is the same run, smaller.
func ShortConfig() Config {
	c := DefaultConfig()
	c.Replicas, c.MaxSurge, c.MaxUnavailable, c.Writes, c.JobCompletions = 30, 3, 7, 300, 60
	return c
}

func (c Config) logf(format string, args ...any) {
	if c.Progress != nil {
		fmt.Fprintf(c.Progress, "skiff-chaos: "+format+"\n", args...)
	}
}

// Figure is one measured time or count, with its bound.
type Figure struct {
	Name  string
	Value float64
	Unit  string
	Bound float64 // the most it may be; 0: none
	Note  string
}

// Met reports whether the figure is within its bound.
func (f Figure) Met() bool { return f.Bound == 0 || f.Value <= f.Bound }

// Report is what a run found.
type Report struct {
	Figures    []Figure
	Violations []Violation
	Samples    int // invariant checks made
	Unreadable int // samples the API did not answer (the apiserver away)
}

// Violation is an invariant broken at one moment (or a phase failed).
type Violation struct {
	At    time.Duration // since the start of the run
	Phase string
	What  string
}

// Failed reports whether anything was violated or out of bounds.
func (r *Report) Failed() bool {
	if len(r.Violations) > 0 {
		return true
	}
	for _, f := range r.Figures {
		if !f.Met() {
			return true
		}
	}
	return false
}

// Write prints the figures, then every violation.
func (r *Report) Write(w io.Writer) {
	fmt.Fprintf(w, "%-44s %12s %-6s %10s  %s\n", "figure", "value", "unit", "bound", "note")
	for _, f := range r.Figures {
		bound, mark := "-", ""
		if f.Bound > 0 {
			bound = fmt.Sprintf("<= %.0f", f.Bound)
			if !f.Met() {
				mark = "  OUT OF BOUND"
			}
		}
		fmt.Fprintf(w, "%-44s %12.0f %-6s %10s  %s%s\n", f.Name, f.Value, f.Unit, bound, f.Note, mark)
	}
	fmt.Fprintf(w, "invariant checks: %d samples (every 100 ms), %d while the API did not answer, %d violations\n", r.Samples, r.Unreadable, len(r.Violations))
	for _, v := range r.Violations {
		fmt.Fprintf(w, "VIOLATION at %6.1fs [%s] %s\n", v.At.Seconds(), v.Phase, v.What)
	}
}

const (
	namespace       = "chaos"
	writesNamespace = "chaos-writes"
	webApp          = "web"
	pinnedApp       = "pinned"
	sampleEvery     = 100 * time.Millisecond
)

// run is one chaos run in progress.
type run struct {
	cfg     Config
	c       *cluster
	start   time.Time
	report  Report
	limits  limits
	samples *sampler

	mu    sync.Mutex
	phase string
}

// Run starts a cluster of the real binaries on simulated nodes and puts
// it through the faults, checking the invariants every 100 ms. logs
// receives the programs' own log lines (nil: discarded). The error is for
// a run that could not be made; what the run found is in the Report.
func Run(ctx context.Context, cfg Config, logs io.Writer) (*Report, error) {
	c, err := startCluster(ctx, cfg, logs)
	if err != nil {
		return nil, err
	}
	defer c.stop()
	r := &run{cfg: cfg, c: c, start: time.Now(), limits: limits{
		app: webApp, replicas: cfg.Replicas, maxSurge: cfg.MaxSurge, maxUnavailable: cfg.MaxUnavailable,
	}}
	for _, ns := range []string{namespace, writesNamespace, jobsNamespace} {
		if _, err := client.Namespaces(c.conn).Create(ctx, &corev1.Namespace{Metadata: &metav1.ObjectMeta{Name: ns}}); err != nil && !apierrors.IsAlreadyExists(err) {
			return nil, err
		}
	}
	sctx, stop := context.WithCancel(ctx)
	r.samples = newSampler(r)
	done := make(chan struct{})
	go func() { defer close(done); r.samples.run(sctx) }()
	phases := []struct {
		name string
		fn   func(context.Context) error
	}{
		{"initial rollout", r.initial},
		{"rollout, controller-manager SIGKILLed", r.rolloutKilling(ControllerManager)},
		{"rollout, scheduler SIGKILLed", r.rolloutKilling(Scheduler)},
		{"rollout, node agent SIGKILLed", r.rolloutKilling(c.nodes[0].name)},
		{"rollout, apiserver SIGKILLed", r.rolloutKilling(APIServer)},
		{"Job, controller-manager SIGKILLed", r.jobKilling},
		{"node agent paused past the grace period", r.pauseAgent},
		{"node away with pinned pods, then deleted", r.nodeAway},
		{"forced compaction, then a rollout", r.compaction},
		{"apiserver SIGKILLed during writes", r.killDuringWrites},
	}
	for _, p := range phases {
		r.setPhase(p.name)
		cfg.logf("phase: %s", p.name)
		if err := p.fn(ctx); err != nil {
			r.violate(fmt.Sprintf("the phase failed: %v", err))
			break
		}
	}
	stop()
	<-done
	r.report.Samples, r.report.Unreadable = r.samples.counts()
	return &r.report, nil
}

func (r *run) setPhase(p string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.phase = p
}

// violate records a violation in the current phase.
func (r *run) violate(what string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.report.Violations = append(r.report.Violations, Violation{At: time.Since(r.start), Phase: r.phase, What: what})
}

func (r *run) figure(f Figure) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.report.Figures = append(r.report.Figures, f)
	r.cfg.logf("%s: %.0f %s (bound %.0f) %s", f.Name, f.Value, f.Unit, f.Bound, f.Note)
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// setReadyFloor turns the Ready floor check on or off.
func (r *run) setReadyFloor(on bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.limits.readyFloor = on
}

func (r *run) currentLimits() limits {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.limits
}

// deployment is the Deployment app with replicas pods of one container,
// rolling with the run's maxSurge and maxUnavailable.
func (r *run) deployment(app string, replicas int) *appsv1.Deployment {
	labels := map[string]string{"app": app}
	return &appsv1.Deployment{
		Metadata: &metav1.ObjectMeta{Name: app, Namespace: namespace},
		Spec: &appsv1.DeploymentSpec{
			Replicas: proto.Int32(int32(replicas)),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Strategy: &appsv1.DeploymentStrategy{Type: "RollingUpdate", RollingUpdate: &appsv1.RollingUpdateDeployment{
				MaxSurge:       &metav1.IntOrString{Value: &metav1.IntOrString_IntVal{IntVal: int32(r.cfg.MaxSurge)}},
				MaxUnavailable: &metav1.IntOrString{Value: &metav1.IntOrString_IntVal{IntVal: int32(r.cfg.MaxUnavailable)}},
			}},
			Template: &corev1.PodTemplateSpec{
				Metadata: &metav1.ObjectMeta{Labels: labels, Annotations: map[string]string{"chaos/revision": "1"}},
				Spec:     &corev1.PodSpec{Containers: []*corev1.Container{{Name: "app", Image: "chaos/app:1"}}},
			},
		},
	}
}

// converge waits until the Deployment app is where it is asked to be and
// returns how long that took, or an error after the bound.
func (r *run) converge(ctx context.Context, app string, since time.Time) (time.Duration, error) {
	var why string
	err := r.samples.until(ctx, r.cfg.Converge, func(s *snapshot) bool {
		d := s.deployments[app]
		if !s.at.After(since) {
			why = "no sample since"
			return false
		}
		if d == nil {
			why = "no Deployment " + app
			return false
		}
		var ok bool
		ok, why = converged(d, s.pods, app)
		return ok
	})
	if err != nil {
		return 0, fmt.Errorf("%s did not converge within %v: %s", app, r.cfg.Converge, why)
	}
	return time.Since(since), nil
}

// rollout changes the template of the Deployment app (a new revision)
// and returns the Deployment's generation that asks for it.
func (r *run) rollout(ctx context.Context, app string) (int64, error) {
	deps := client.Deployments(r.c.conn)
	var gen int64
	err := client.RetryOnConflict(ctx, client.DefaultRetry, func() error {
		d, err := deps.Get(ctx, namespace, app)
		if err != nil {
			return err
		}
		ann := d.Spec.Template.Metadata.Annotations
		var rev int
		fmt.Sscan(ann["chaos/revision"], &rev)
		ann["chaos/revision"] = fmt.Sprint(rev + 1)
		out, err := deps.Update(ctx, d)
		gen = out.GetMetadata().GetGeneration()
		return err
	})
	return gen, err
}

func (r *run) initial(ctx context.Context) error {
	t0 := time.Now()
	if _, err := client.Deployments(r.c.conn).Create(ctx, r.deployment(webApp, r.cfg.Replicas)); err != nil {
		return err
	}
	took, err := r.converge(ctx, webApp, t0)
	if err != nil {
		return err
	}
	r.setReadyFloor(true)
	r.figure(Figure{Name: "converge.initial_ms", Value: ms(took), Unit: "ms", Bound: ms(r.cfg.Converge),
		Note: fmt.Sprintf("%d replicas on %d simulated nodes, from the create", r.cfg.Replicas, r.cfg.Nodes)})
	return nil
}

// rolloutKilling starts a rollout, SIGKILLs the program name once the new
// revision has pods, restarts it at once, and waits for convergence.
func (r *run) rolloutKilling(name string) func(context.Context) error {
	return func(ctx context.Context) error {
		t0 := time.Now()
		gen, err := r.rollout(ctx, webApp)
		if err != nil {
			return err
		}
		// Mid-rollout: the new revision has some pods (maybe all, on a
		// quick run: the kill then hits the old ReplicaSet's scale-down).
		if err := r.samples.until(ctx, r.cfg.Converge, func(s *snapshot) bool {
			d := s.deployments[webApp]
			return d != nil && s.at.After(t0) && d.GetStatus().GetObservedGeneration() >= gen &&
				d.GetStatus().GetUpdatedReplicas() >= int32(r.cfg.MaxSurge)
		}); err != nil {
			return fmt.Errorf("the rollout made no progress: %w", err)
		}
		down, err := r.c.restart(ctx, name)
		if err != nil {
			return err
		}
		took, err := r.converge(ctx, webApp, t0)
		if err != nil {
			return err
		}
		short := strings.TrimPrefix(strings.ReplaceAll(name, "-", "_"), "chaos_")
		if strings.HasPrefix(name, "chaos-node-") {
			short = "node_agent"
		}
		r.figure(Figure{Name: "converge.kill_" + short + "_ms", Value: ms(took), Unit: "ms", Bound: ms(r.cfg.Converge),
			Note: fmt.Sprintf("from the rollout's start; %s SIGKILLed mid-rollout and up again %.0f ms later", name, ms(down))})
		return nil
	}
}

// compaction compacts etcd at its current revision (the components'
// watches from older revisions are Expired and relist), then rolls out.
func (r *run) compaction(ctx context.Context) error {
	tlsCfg, err := apiserver.EmbeddedEtcdClientTLS(r.c.apiserverDir()).ClientConfig()
	if err != nil {
		return fmt.Errorf("etcd client certificate: %w", err)
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{r.c.etcd}, TLS: tlsCfg, DialTimeout: 5 * time.Second})
	if err != nil {
		return fmt.Errorf("etcd client: %w", err)
	}
	defer cli.Close()
	st, err := cli.Status(ctx, r.c.etcd)
	if err != nil {
		return fmt.Errorf("etcd status: %w", err)
	}
	if _, err := cli.Compact(ctx, st.Header.Revision, clientv3.WithCompactPhysical()); err != nil {
		return fmt.Errorf("compacting at %d: %w", st.Header.Revision, err)
	}
	t0 := time.Now()
	if _, err := r.rollout(ctx, webApp); err != nil {
		return err
	}
	took, err := r.converge(ctx, webApp, t0)
	if err != nil {
		return err
	}
	r.figure(Figure{Name: "converge.after_compaction_ms", Value: ms(took), Unit: "ms", Bound: ms(r.cfg.Converge),
		Note: fmt.Sprintf("a rollout right after etcd was compacted at revision %d", st.Header.Revision)})
	return nil
}
