package scenarios

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/protobuf/proto"

	"skiff.dev/internal/client"
	"skiff.dev/internal/informer"
	batchv1 "skiff.dev/proto/batch/v1"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/controller-manager/job"
	"skiff.dev/services/controller-manager/simnode"
)

// The Job figures: one Job of RSReplicas completions (10,000), 500 pods at
// once, run by the real Job controller while a simulated node finishes
// each pod (exit code 0) as soon as it sees it.
var (
	figJobsPodsPerS = Figure{Name: "jobs.pods_per_s", Unit: "pods/s"}
	figJobsPodCPU   = Figure{Name: "jobs.cpu_us_per_pod", Unit: "us CPU/pod"}
	figJobsVsRS     = Figure{Name: "jobs.vs_rs_ratio", Unit: "ratio"}
)

const (
	jobsNamespace   = "jobs-bench"
	jobsParallelism = 500
)

func jobsScenario() *Scenario {
	return &Scenario{
		Name:    "jobs",
		Summary: "the Job controller runs one Job of 10,000 completions, 500 pods at once, to Complete; a simulated node finishes each pod at once (exit 0); compared with the ReplicaSet controller's creation rate",
		Figures: []Figure{figJobsPodsPerS, figJobsPodCPU, figJobsVsRS},
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
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	mc, stopCM, err := benchManagerContext(ctx, conns[0])
	if err != nil {
		return err
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
		return ctx.Err()
	}

	env.logf("jobs: a Job of %d completions, %d at once", n, jobsParallelism)
	settle()
	cpu0, t0 := cpuTime(), time.Now()
	if _, err := client.Jobs(conns[2]).Create(ctx, benchJob(n)); err != nil {
		return fmt.Errorf("creating the Job: %w", err)
	}
	timeout := time.NewTimer(env.Config.RSTimeout)
	defer timeout.Stop()
	var finished *batchv1.Job
	select {
	case finished = <-complete:
	case <-timeout.C:
		cur, _ := obs.Store().GetByName(jobsNamespace, "bench")
		return fmt.Errorf("after %v the Job was not finished: %v", env.Config.RSTimeout, cur.GetStatus())
	}
	elapsed, cpu := time.Since(t0), cpuTime()-cpu0
	st := finished.GetStatus()
	if c := st.GetConditions(); len(c) == 0 || c[len(c)-1].GetType() != "Complete" || st.GetSucceeded() != int32(n) {
		return fmt.Errorf("the Job finished with %v, want Complete with %d succeeded", st, n)
	}
	perS := float64(n) / elapsed.Seconds()
	rs.Add(figJobsPodsPerS, perS, fmt.Sprintf("%d pods created, finished and counted in %.1fs, from the Job's create to its Complete condition (parallelism %d)", n, elapsed.Seconds(), jobsParallelism))
	rs.Add(figJobsPodCPU, float64(cpu.Microseconds())/float64(n), "process CPU (apiserver + etcd + controller + node + observer) / pods, until the Job was complete")
	note := "controllers.rs_10k_pods_per_s not measured"
	ratio := 0.0
	if v, ok := rs.Get(figRSPodsPerS.Name); ok && v > 0 {
		ratio = perS / v
		note = fmt.Sprintf("%.0f Job pods/s (each created, finished and counted) / %.0f ReplicaSet pods/s (created only)", perS, v)
	}
	rs.Add(figJobsVsRS, ratio, note)
	return nil
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
