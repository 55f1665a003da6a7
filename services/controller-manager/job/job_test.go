package job

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"skiff.dev/internal/client"
	"skiff.dev/internal/informer"
	batchv1 "skiff.dev/proto/batch/v1"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/controller-manager/manager/managertest"
	"skiff.dev/services/controller-manager/simnode"
)

// patience bounds every wait for something that should happen.
const patience = 30 * time.Second

// cluster is one test's apiserver, a simulated node finishing pods as
// finish says, and the controller.
type cluster struct {
	*managertest.Env
	jobs *informer.Informer[*batchv1.Job]
}

func start(t *testing.T, finish func(*corev1.Pod) (int32, bool), o Options) *cluster {
	t.Helper()
	env := managertest.Start(t)
	c := &cluster{Env: env, jobs: informer.For(env.Manager.Informers, client.Jobs(env.Conn))}
	managertest.Watch(env, c.jobs)
	if o.SyncBatchPeriod == 0 {
		o.SyncBatchPeriod = 10 * time.Millisecond
	}
	ctrl := New(env.Manager, o)
	env.SimNode(simnode.Options{Finish: finish})
	env.StartInformers()
	env.GoErr(ctrl.Run)
	return c
}

// exitWith finishes every pod at once with code.
func exitWith(code int32) func(*corev1.Pod) (int32, bool) {
	return func(*corev1.Pod) (int32, bool) { return code, true }
}

func newJob(name string, completions, parallelism int32) *batchv1.Job {
	return &batchv1.Job{
		Metadata: &metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: &batchv1.JobSpec{
			Completions: proto.Int32(completions),
			Parallelism: proto.Int32(parallelism),
			Template: &corev1.PodTemplateSpec{
				Spec: &corev1.PodSpec{RestartPolicy: "Never", Containers: []*corev1.Container{{Name: "work", Image: "busybox"}}},
			},
		},
	}
}

func (c *cluster) create(j *batchv1.Job) *batchv1.Job {
	c.T.Helper()
	got, err := client.Jobs(c.Conn).Create(c.Ctx, j)
	if err != nil {
		c.T.Fatalf("create job: %v", err)
	}
	return got
}

func (c *cluster) job(name string) *batchv1.Job {
	j, _ := c.jobs.Store().GetByName("default", name)
	return j
}

// awaitCondition waits for the Job's condition typ to be True.
func (c *cluster) awaitCondition(name, typ string) *batchv1.Job {
	c.T.Helper()
	var j *batchv1.Job
	c.Await(patience, "job "+name+" "+typ, func() (bool, string) {
		j = c.job(name)
		if cond := findCondition(j.GetStatus(), typ); cond.GetStatus() == "True" {
			return true, ""
		}
		return false, managertest.Explain("status %v", j.GetStatus())
	})
	return j
}

// awaitEvent waits for an event about the Job (the recorder writes them
// in the background).
func (c *cluster) awaitEvent(name, reason, message string) {
	c.T.Helper()
	c.Await(patience, "event "+reason, func() (bool, string) {
		ev := c.EventReasons("Job", "default", name)
		return ev[reason] == message, managertest.Explain("events %v", ev)
	})
}

func (c *cluster) podsOf(j *batchv1.Job) []*corev1.Pod {
	var out []*corev1.Pod
	for _, p := range c.Pods().Store().List() {
		if p.GetMetadata().GetNamespace() == "default" && p.GetMetadata().GetLabels()["batch.kubernetes.io/job-name"] == j.GetMetadata().GetName() {
			out = append(out, p)
		}
	}
	return out
}

func conditionTypes(j *batchv1.Job) []string {
	var out []string
	for _, c := range j.GetStatus().GetConditions() {
		out = append(out, c.GetType()+"="+c.GetStatus()+"/"+c.GetReason())
	}
	return out
}

func TestJobCompletes(t *testing.T) {
	c := start(t, exitWith(0), Options{})
	c.create(newJob("pi", 3, 2))
	j := c.awaitCondition("pi", "Complete")
	st := j.GetStatus()
	if st.GetSucceeded() != 3 || st.GetFailed() != 0 || st.GetActive() != 0 || st.CompletionTime == nil || st.StartTime == nil {
		t.Errorf("status %v", st)
	}
	if got := fmt.Sprint(conditionTypes(j)); got != "[SuccessCriteriaMet=True/CompletionsReached Complete=True/CompletionsReached]" {
		t.Errorf("conditions %s", got)
	}
	c.Await(patience, "no pod keeps the finalizer", func() (bool, string) {
		for _, p := range c.podsOf(j) {
			if hasTrackingFinalizer(p) {
				return false, p.GetMetadata().GetName()
			}
		}
		return true, ""
	})
	c.awaitEvent("pi", "Completed", "Job completed")
}

func TestJobIndexed(t *testing.T) {
	c := start(t, exitWith(0), Options{})
	j := newJob("ix", 4, 2)
	j.Spec.CompletionMode = "Indexed"
	c.create(j)
	j = c.awaitCondition("ix", "Complete")
	if st := j.GetStatus(); st.GetCompletedIndexes() != "0-3" || st.GetSucceeded() != 4 {
		t.Errorf("status %v", st)
	}
	seen := map[string]bool{}
	for _, p := range c.podsOf(j) {
		ix := p.GetMetadata().GetAnnotations()[CompletionIndexAnnotation]
		seen[ix] = true
		if p.GetMetadata().GetLabels()[CompletionIndexAnnotation] != ix || p.GetSpec().GetHostname() != "ix-"+ix {
			t.Errorf("pod %s: labels %v hostname %q", p.GetMetadata().GetName(), p.GetMetadata().GetLabels(), p.GetSpec().GetHostname())
		}
		env := p.GetSpec().GetContainers()[0].GetEnv()
		if len(env) != 1 || env[0].GetName() != CompletionIndexEnv || env[0].GetValueFrom().GetFieldRef().GetFieldPath() != "metadata.annotations['batch.kubernetes.io/job-completion-index']" {
			t.Errorf("pod %s env %v", p.GetMetadata().GetName(), env)
		}
	}
	if len(seen) != 4 {
		t.Errorf("indexes %v", seen)
	}
}

func TestJobBackoffLimitExceeded(t *testing.T) {
	c := start(t, exitWith(1), Options{BackoffBase: time.Millisecond, BackoffMax: 10 * time.Millisecond})
	j := newJob("fails", 1, 1)
	j.Spec.BackoffLimit = proto.Int32(2)
	c.create(j)
	j = c.awaitCondition("fails", "Failed")
	st := j.GetStatus()
	if st.GetFailed() != 3 || st.GetSucceeded() != 0 || st.CompletionTime != nil {
		t.Errorf("status %v", st)
	}
	if got := fmt.Sprint(conditionTypes(j)); got != "[FailureTarget=True/BackoffLimitExceeded Failed=True/BackoffLimitExceeded]" {
		t.Errorf("conditions %s", got)
	}
	c.awaitEvent("fails", "BackoffLimitExceeded", "Job has reached the specified backoff limit")
}

func TestJobPodFailurePolicyFailJob(t *testing.T) {
	c := start(t, exitWith(42), Options{})
	j := newJob("pfp", 5, 2)
	j.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: []*batchv1.PodFailurePolicyRule{
		{Action: "Ignore", OnPodConditions: []*batchv1.PodFailurePolicyOnPodConditionsPattern{{Type: "DisruptionTarget"}}},
		{Action: "FailJob", OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{Operator: "In", Values: []int32{42}}},
	}}
	c.create(j)
	j = c.awaitCondition("pfp", "Failed")
	cond := findCondition(j.GetStatus(), "Failed")
	if cond.GetReason() != ReasonPodFailurePolicy || !containsAll(cond.GetMessage(), "failed with exit code 42 matching FailJob rule at index 1") {
		t.Errorf("condition %v", cond)
	}
	if st := j.GetStatus(); st.GetActive() != 0 || st.GetFailed() < 1 || len(st.GetUncountedTerminatedPods().GetFailed()) != 0 {
		t.Errorf("status %v", st)
	}
}

// TestJobPodFailurePolicyCount: a failure matching a Count rule counts
// toward backoffLimit as usual: with backoffLimit 1 the second failed pod
// fails the Job with BackoffLimitExceeded, two failures counted.
func TestJobPodFailurePolicyCount(t *testing.T) {
	c := start(t, exitWith(42), Options{BackoffBase: time.Millisecond})
	j := newJob("counted", 1, 1)
	j.Spec.BackoffLimit = proto.Int32(1)
	j.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: []*batchv1.PodFailurePolicyRule{
		{Action: "Count", OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{Operator: "In", Values: []int32{42}}},
	}}
	c.create(j)
	j = c.awaitCondition("counted", "Failed")
	if cond := findCondition(j.GetStatus(), "Failed"); cond.GetReason() != ReasonBackoffLimitExceeded {
		t.Errorf("condition %v, want reason %s", cond, ReasonBackoffLimitExceeded)
	}
	if st := j.GetStatus(); st.GetFailed() != 2 || st.GetActive() != 0 || st.GetSucceeded() != 0 {
		t.Errorf("status %v, want 2 failed", st)
	}
}

// TestJobStatusCountsReadyPods: status.ready counts the active pods whose
// Ready condition is True (here all three running pods, which the
// simulated node keeps running and makes Ready).
func TestJobStatusCountsReadyPods(t *testing.T) {
	c := start(t, func(*corev1.Pod) (int32, bool) { return 0, false }, Options{})
	c.create(newJob("ready", 5, 3))
	c.Await(patience, "3 active, 3 ready", func() (bool, string) {
		st := c.job("ready").GetStatus()
		return st.GetActive() == 3 && st.GetReady() == 3, managertest.Explain("status %v", st)
	})
}

func containsAll(s string, subs ...string) bool {
	for _, sub := range subs {
		if !contains(s, sub) {
			return false
		}
	}
	return true
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}

// TestJobSurvivesControllerRestart runs a Job of 20 completions, 5 at once,
// whose pods finish a few at a time; the controller is stopped in the
// middle (its context cut, as a kill -9 cuts its calls) and a new one, in
// a new "process" (its own informers, expectations, backoff memory),
// finishes the Job. Every success is counted exactly once.
func TestJobSurvivesControllerRestart(t *testing.T) {
	env := managertest.Start(t)
	var mu sync.Mutex
	allowed := 0
	finished := map[string]bool{}
	finish := func(p *corev1.Pod) (int32, bool) {
		mu.Lock()
		defer mu.Unlock()
		name := p.GetMetadata().GetName()
		if !finished[name] && len(finished) < allowed {
			finished[name] = true
		}
		return 0, finished[name]
	}
	setAllowed := func(n int) {
		mu.Lock()
		allowed = n
		mu.Unlock()
	}
	node := env.SimNode(simnode.Options{Finish: finish})
	jobs := informer.For(env.Manager.Informers, client.Jobs(env.Conn))
	managertest.Watch(env, jobs)
	first := New(env.Manager, Options{SyncBatchPeriod: 10 * time.Millisecond})
	env.StartInformers()
	ctx1, kill := context.WithCancel(env.Ctx)
	done1 := make(chan error, 1)
	go func() { done1 <- first.Run(ctx1) }()

	if _, err := client.Jobs(env.Conn).Create(env.Ctx, newJob("twenty", 20, 5)); err != nil {
		t.Fatal(err)
	}
	get := func() *batchv1.Job { j, _ := jobs.Store().GetByName("default", "twenty"); return j }
	// Let pods finish a few at a time; kill the controller while it is
	// tracking (some finished, counted or not).
	for step := 3; step <= 9; step += 3 {
		setAllowed(step)
		node.Recheck()
		env.Await(patience, fmt.Sprintf("%d pods finished", step), func() (bool, string) {
			n := 0
			for _, p := range env.Pods().Store().List() {
				if p.GetStatus().GetPhase() == "Succeeded" {
					n++
				}
			}
			return n >= step, managertest.Explain("%d succeeded", n)
		})
	}
	kill()
	if err := <-done1; err != nil {
		t.Fatalf("first controller: %v", err)
	}
	t.Logf("killed with status %v", get().GetStatus())

	// A new process: its own informers and controller.
	env2 := managertest.NewEnv(t, env.Server, env.Conn, env.Logger)
	second := New(env2.Manager, Options{SyncBatchPeriod: 10 * time.Millisecond})
	env2.Manager.Informers.Start(env2.Ctx)
	env2.GoErr(second.Run)
	setAllowed(1000)
	node.Recheck()
	c := &cluster{Env: env, jobs: jobs}
	j := c.awaitCondition("twenty", "Complete")
	if st := j.GetStatus(); st.GetSucceeded() != 20 || st.GetFailed() != 0 {
		t.Errorf("status %v, want exactly 20 succeeded", st)
	}
	succeeded := 0
	for _, p := range c.podsOf(j) {
		if p.GetStatus().GetPhase() == "Succeeded" {
			succeeded++
		}
	}
	if succeeded != 20 {
		t.Errorf("%d pods succeeded, want 20", succeeded)
	}
}

func TestJobSuspendAndResume(t *testing.T) {
	var mu sync.Mutex
	exits := false
	finish := func(*corev1.Pod) (int32, bool) { mu.Lock(); defer mu.Unlock(); return 0, exits }
	c := start(t, finish, Options{})
	j := newJob("later", 2, 2)
	c.create(j)
	c.Await(patience, "two pods running", func() (bool, string) {
		return c.job("later").GetStatus().GetActive() == 2, managertest.Explain("%v", c.job("later").GetStatus())
	})
	setSuspend := func(v bool) {
		err := client.RetryOnConflict(c.Ctx, client.DefaultRetry, func() error {
			cur, err := client.Jobs(c.Conn).Get(c.Ctx, "default", "later")
			if err != nil {
				return err
			}
			cur.Spec.Suspend = proto.Bool(v)
			_, err = client.Jobs(c.Conn).Update(c.Ctx, cur)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	setSuspend(true)
	j = c.awaitCondition("later", "Suspended")
	c.Await(patience, "pods deleted, not counted as failures", func() (bool, string) {
		j = c.job("later")
		return j.GetStatus().GetActive() == 0 && len(c.podsOf(j)) == 0, managertest.Explain("%v, %d pods", j.GetStatus(), len(c.podsOf(j)))
	})
	if j.GetStatus().GetFailed() != 0 {
		t.Errorf("suspension counted failures: %v", j.GetStatus())
	}
	mu.Lock()
	exits = true
	mu.Unlock()
	setSuspend(false)
	j = c.awaitCondition("later", "Complete")
	if cond := findCondition(j.GetStatus(), "Suspended"); cond.GetStatus() != "False" || cond.GetReason() != "JobResumed" {
		t.Errorf("Suspended condition %v", cond)
	}
}

// TestJobDeletedReleasesPods: once a Job is gone, its pods lose the
// tracking finalizer (else the garbage collector's deletion of them would
// wait forever). No garbage collector runs here: the pods stay, orphans.
func TestJobDeletedReleasesPods(t *testing.T) {
	c := start(t, func(*corev1.Pod) (int32, bool) { return 0, false }, Options{})
	j := c.create(newJob("gone", 3, 2))
	c.Await(patience, "two pods running", func() (bool, string) {
		return c.job("gone").GetStatus().GetActive() == 2, managertest.Explain("%v", c.job("gone").GetStatus())
	})
	if _, err := client.Jobs(c.Conn).Delete(c.Ctx, &metav1.DeleteRequest{Namespace: "default", Name: "gone", PropagationPolicy: "Background"}); err != nil {
		t.Fatal(err)
	}
	c.Await(patience, "pods released", func() (bool, string) {
		pods := c.podsOf(j)
		for _, p := range pods {
			if hasTrackingFinalizer(p) {
				return false, p.GetMetadata().GetName() + " keeps the finalizer"
			}
		}
		return len(pods) == 2, managertest.Explain("%d pods", len(pods))
	})
}

// TestJobBackoffLimitPerIndex: index 1 always fails; with one retry per
// index it fails twice, the other indexes succeed, and the Job fails with
// FailedIndexes.
func TestJobBackoffLimitPerIndex(t *testing.T) {
	finish := func(p *corev1.Pod) (int32, bool) {
		if p.GetMetadata().GetAnnotations()[CompletionIndexAnnotation] == "1" {
			return 1, true
		}
		return 0, true
	}
	c := start(t, finish, Options{BackoffBase: time.Millisecond, BackoffMax: 10 * time.Millisecond})
	j := newJob("perindex", 3, 3)
	j.Spec.CompletionMode = "Indexed"
	j.Spec.BackoffLimitPerIndex = proto.Int32(1)
	c.create(j)
	j = c.awaitCondition("perindex", "Failed")
	st := j.GetStatus()
	if findCondition(st, "Failed").GetReason() != ReasonFailedIndexes || st.GetCompletedIndexes() != "0,2" || st.GetFailedIndexes() != "1" || st.GetFailed() != 2 || st.GetSucceeded() != 2 {
		t.Errorf("status %v", st)
	}
	var counts []string
	for _, p := range c.podsOf(j) {
		if p.GetMetadata().GetAnnotations()[CompletionIndexAnnotation] == "1" {
			counts = append(counts, p.GetMetadata().GetAnnotations()[IndexFailureCountAnnotation])
		}
	}
	slices.Sort(counts)
	if fmt.Sprint(counts) != "[0 1]" {
		t.Errorf("index 1's pods' failure counts %v, want [0 1]", counts)
	}
}
