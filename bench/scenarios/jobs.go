package scenarios

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"skiff.dev/internal/apierrors"
	"skiff.dev/internal/client"
	"skiff.dev/internal/defaults"
	"skiff.dev/internal/informer"
	batchv1 "skiff.dev/proto/batch/v1"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/controller-manager/controllerutil"
	"skiff.dev/services/controller-manager/job"
	"skiff.dev/services/controller-manager/simnode"
)

// The Job figures: one Job of RSReplicas completions (10,000), 500 pods at
// once, run by the real Job controller while a simulated node finishes
// each pod (exit code 0) as soon as it sees it.
//
// The floor: the same API writes for as many pods (create one with the
// tracking finalizer, write its terminal status as the node does, update
// it without the finalizer as the controller does), by Clients writers
// and no controller, half before the Job and half after it (the host's
// speed drifts over tens of seconds). jobs.pods_per_s can come close to
// it, not above: it is what the apiserver allows for a Job pod's writes.
var (
	figJobsPodsPerS  = Figure{Name: "jobs.pods_per_s", Unit: "pods/s"}
	figJobsPodCPU    = Figure{Name: "jobs.cpu_us_per_pod", Unit: "us CPU/pod"}
	figJobsVsRS      = Figure{Name: "jobs.vs_rs_ratio", Unit: "ratio", Target: AtLeast(0.8)}
	figJobsFloor     = Figure{Name: "jobs.api_floor_pods_per_s", Unit: "pods/s"}
	figJobsFloorCPU  = Figure{Name: "jobs.api_floor_cpu_us_per_pod", Unit: "us CPU/pod"}
	figJobsFloorVsRS = Figure{Name: "jobs.floor_vs_rs_ratio", Unit: "ratio"}
	figJobsVsFloor   = Figure{Name: "jobs.vs_floor_ratio", Unit: "ratio"}
)

const (
	jobsNamespace      = "jobs-bench"
	jobsFloorNamespace = "jobs-floor"
	jobsParallelism    = 500
)

func jobsScenario() *Scenario {
	return &Scenario{
		Name:    "jobs",
		Summary: "the Job controller runs one Job of 10,000 completions, 500 pods at once, to Complete; a simulated node finishes each pod at once (exit 0); compared with the ReplicaSet controller's creation rate and with the same pod writes made without a controller (the floor)",
		Figures: []Figure{figJobsPodsPerS, figJobsPodCPU, figJobsVsRS, figJobsFloor, figJobsFloorCPU, figJobsFloorVsRS, figJobsVsFloor},
		Needs:   []string{"controllers.rs"},
		Run:     runJobs,
	}
}

func runJobs(ctx context.Context, env *Env, rs *Results) error {
	n := env.Config.RSReplicas
	if n <= 0 {
		return fmt.Errorf("nothing to measure: %d completions", n)
	}
	// Three connections, as three processes would have: the controller,
	// the node, and the benchmark's own observer.
	conns, err := env.dial(3)
	if err != nil {
		return err
	}
	defer closeAll(conns)
	for _, ns := range []string{jobsNamespace, jobsFloorNamespace} {
		if _, err := client.Namespaces(conns[0]).Create(ctx, &corev1.Namespace{Metadata: &metav1.ObjectMeta{Name: ns}}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating namespace %s: %w", ns, err)
		}
	}
	writers := max(env.Config.Clients, 1)
	env.logf("jobs: the floor, %d pods' writes by %d writers, before the Job", n/2, writers)
	before, err := runJobsFloor(ctx, conns, n/2, writers)
	if err != nil {
		return err
	}
	run, err := runJob(ctx, env, conns, n)
	if err != nil {
		return err
	}
	env.logf("jobs: the floor, %d pods' writes by %d writers, after the Job", n-n/2, writers)
	after, err := runJobsFloor(ctx, conns, n-n/2, writers)
	if err != nil {
		return err
	}

	perS := float64(n) / run.elapsed.Seconds()
	rs.Add(figJobsPodsPerS, perS, fmt.Sprintf("%d pods created, finished and counted in %.1fs, from the Job's create to its Complete condition (parallelism %d)", n, run.elapsed.Seconds(), jobsParallelism))
	rs.Add(figJobsPodCPU, float64(run.cpu.Microseconds())/float64(n), "process CPU (apiserver + etcd + controller + node + observer) / pods, until the Job was complete")
	note := "controllers.rs_10k_pods_per_s not measured"
	ratio := 0.0
	rsPerS, rsOK := rs.Get(figRSPodsPerS.Name)
	if rsOK && rsPerS > 0 {
		ratio = perS / rsPerS
		note = fmt.Sprintf("%.0f Job pods/s (each created, finished and counted) / %.0f ReplicaSet pods/s (created only)", perS, rsPerS)
	}
	rs.Add(figJobsVsRS, ratio, note)

	floorElapsed := before.elapsed + after.elapsed
	floor := float64(n) / floorElapsed.Seconds()
	rs.Add(figJobsFloor, floor, fmt.Sprintf("%d pods created (tracking finalizer), given a terminal status, updated without the finalizer, by %d writers and no controller or informer, in %.1fs (%.0f/s before the Job, %.0f/s after)",
		n, writers, floorElapsed.Seconds(), float64(n/2)/before.elapsed.Seconds(), float64(n-n/2)/after.elapsed.Seconds()))
	rs.Add(figJobsFloorCPU, float64((before.cpu+after.cpu).Microseconds())/float64(n), "process CPU (apiserver + etcd + writers) / pods, for the floor's three writes of each pod")
	floorRatio, floorNote := 0.0, "controllers.rs_10k_pods_per_s not measured"
	if rsOK && rsPerS > 0 {
		floorRatio = floor / rsPerS
		floorNote = fmt.Sprintf("%.0f floor pods/s (three writes each) / %.0f ReplicaSet pods/s (one write each): the best jobs.vs_rs_ratio the apiserver allows", floor, rsPerS)
	}
	rs.Add(figJobsFloorVsRS, floorRatio, floorNote)
	rs.Add(figJobsVsFloor, perS/floor, fmt.Sprintf("%.0f Job pods/s / %.0f floor pods/s: the part of the apiserver's pace the Job controller and node reach", perS, floor))
	return nil
}

// jobsRun is what one measured phase took: wall time and process CPU.
type jobsRun struct {
	elapsed, cpu time.Duration
}

// runJob runs one Job of n completions to Complete with the real
// controller and a simulated node, and stops them before it returns.
func runJob(ctx context.Context, env *Env, conns []*grpc.ClientConn, n int) (jobsRun, error) {
	var run jobsRun
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	mc, stopCM, err := benchManagerContext(ctx, conns[0])
	if err != nil {
		return run, err
	}
	defer stopCM()
	ctrl := job.New(mc, job.Options{})

	nodeInformers := informer.NewFactory(informer.FactoryOptions{})
	node := simnode.New(conns[1], informer.For(nodeInformers, client.Pods(conns[1])), simnode.Options{
		Workers: 32,
		Finish:  func(*corev1.Pod) (int32, bool) { return 0, true },
	})

	complete := make(chan *batchv1.Job, 1)
	obs := informer.New(informer.FromClient(client.Jobs(conns[2])), informer.Options{ListOptions: &metav1.ListOptions{Namespace: jobsNamespace}})
	seen := func(j *batchv1.Job) {
		if job.IsFinished(j) {
			select {
			case complete <- j:
			default:
			}
		}
	}
	obs.AddHandler(informer.Handler[*batchv1.Job]{OnAdd: seen, OnUpdate: func(_, j *batchv1.Job) { seen(j) }})

	mc.Informers.Start(ctx)
	nodeInformers.Start(ctx)
	go obs.Run(ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = ctrl.Run(ctx) }()
	nodeDone := make(chan struct{})
	go func() { defer close(nodeDone); node.Run(ctx) }()
	defer func() { cancel(); <-done; <-nodeDone; mc.Informers.Wait(); nodeInformers.Wait() }()
	if !mc.Informers.WaitForSync(ctx) || !nodeInformers.WaitForSync(ctx) || !informer.WaitForSync(ctx, obs) {
		return run, ctx.Err()
	}

	env.logf("jobs: a Job of %d completions, %d at once", n, jobsParallelism)
	settle()
	cpu0, t0 := cpuTime(), time.Now()
	if _, err := client.Jobs(conns[2]).Create(ctx, benchJob(n)); err != nil {
		return run, fmt.Errorf("creating the Job: %w", err)
	}
	timeout := time.NewTimer(env.Config.RSTimeout)
	defer timeout.Stop()
	var finished *batchv1.Job
	select {
	case finished = <-complete:
	case <-timeout.C:
		cur, _ := obs.Store().GetByName(jobsNamespace, "bench")
		return run, fmt.Errorf("after %v the Job was not finished: %v", env.Config.RSTimeout, cur.GetStatus())
	}
	run.elapsed, run.cpu = time.Since(t0), cpuTime()-cpu0
	st := finished.GetStatus()
	if c := st.GetConditions(); len(c) == 0 || c[len(c)-1].GetType() != "Complete" || st.GetSucceeded() != int32(n) {
		return run, fmt.Errorf("the Job finished with %v, want Complete with %d succeeded", st, n)
	}
	return run, nil
}

// runJobsFloor makes a Job pod's API writes for n pods with writers
// goroutines: create it (as the controller, on conns[0]), write its
// terminal status (as the node, on conns[1]), update it without the
// tracking finalizer (as the controller, from the status write's answer:
// a conditional update, as the controller's from its cache). Nothing
// watches the pods: no controller, no node, no informer.
func runJobsFloor(ctx context.Context, conns []*grpc.ClientConn, n, writers int) (jobsRun, error) {
	var run jobsRun
	if n <= 0 {
		return run, nil
	}
	tmpl := floorPod()
	ctrlPods, nodePods := client.Pods(conns[0]), client.Pods(conns[1])
	onePod := func() error {
		p, err := ctrlPods.Create(ctx, proto.Clone(tmpl).(*corev1.Pod))
		if err != nil {
			return fmt.Errorf("creating: %w", err)
		}
		if p, err = nodePods.UpdateStatus(ctx, succeededPod(p)); err != nil {
			return fmt.Errorf("writing the terminal status: %w", err)
		}
		p.Metadata.Finalizers = slices.DeleteFunc(p.Metadata.Finalizers, func(f string) bool { return f == job.TrackingFinalizer })
		if _, err := ctrlPods.Update(ctx, p); err != nil {
			return fmt.Errorf("removing the tracking finalizer: %w", err)
		}
		return nil
	}
	settle()
	cpu0, t0 := cpuTime(), time.Now()
	var next atomic.Int64
	errs := make(chan error, writers)
	var wg sync.WaitGroup
	for range writers {
		wg.Go(func() {
			for next.Add(1) <= int64(n) {
				if err := onePod(); err != nil {
					errs <- fmt.Errorf("the floor's pod writes: %w", err)
					return
				}
			}
		})
	}
	wg.Wait()
	run.elapsed, run.cpu = time.Since(t0), cpuTime()-cpu0
	close(errs)
	return run, <-errs
}

// floorPod is the pod the Job controller makes of benchJob (a NonIndexed
// Job's: its template with the generated labels, a controller reference,
// the tracking finalizer), for a Job that does not exist.
func floorPod() *corev1.Pod {
	j := benchJob(1)
	j.Metadata.Namespace, j.Metadata.Name, j.Metadata.Uid = jobsFloorNamespace, "floor", "00000000-0000-4000-8000-00000000f100"
	j.ApiVersion, j.Kind = "batch/v1", "Job"
	defaults.Job(j)
	t := j.GetSpec().GetTemplate()
	return &corev1.Pod{
		Metadata: &metav1.ObjectMeta{
			Namespace:       jobsFloorNamespace,
			GenerateName:    "floor-",
			Labels:          maps.Clone(t.GetMetadata().GetLabels()),
			OwnerReferences: []*metav1.OwnerReference{controllerutil.NewControllerRef(j)},
			Finalizers:      []string{job.TrackingFinalizer},
		},
		Spec: proto.Clone(t.GetSpec()).(*corev1.PodSpec),
	}
}

// succeededPod is p with the status the simulated node writes for a pod
// whose containers exited 0 (simnode.MarkFinished's).
func succeededPod(p *corev1.Pod) *corev1.Pod {
	now := timestamppb.Now()
	st := &corev1.PodStatus{Phase: "Succeeded", StartTime: now}
	for _, c := range p.GetSpec().GetContainers() {
		st.ContainerStatuses = append(st.ContainerStatuses, &corev1.ContainerStatus{
			Name: c.GetName(), Image: c.GetImage(),
			State: &corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed", StartedAt: now, FinishedAt: now}},
		})
	}
	for _, typ := range []string{"ContainersReady", "Ready"} {
		st.Conditions = append(st.Conditions, &corev1.PodCondition{Type: typ, Status: "False", Reason: "PodCompleted", LastTransitionTime: now})
	}
	p.Status = st
	return p
}

func benchJob(completions int) *batchv1.Job {
	return &batchv1.Job{
		Metadata: &metav1.ObjectMeta{Namespace: jobsNamespace, Name: "bench"},
		Spec: &batchv1.JobSpec{
			Completions: proto.Int32(int32(completions)),
			Parallelism: proto.Int32(jobsParallelism),
			Template: &corev1.PodTemplateSpec{
				Spec: &corev1.PodSpec{RestartPolicy: "Never", Containers: []*corev1.Container{{
					Name: "work", Image: "skiff.local/demo:v1",
					Resources: &corev1.ResourceRequirements{Requests: map[string]string{"cpu": "10m", "memory": "16Mi"}},
				}}},
			},
		},
	}
}
