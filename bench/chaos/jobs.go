package chaos

import (
	"context"
	"fmt"
	"slices"
	"time"

	"google.golang.org/protobuf/proto"

	"skiff.dev/internal/client"
	batchv1 "skiff.dev/proto/batch/v1"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/node-agent/sim"
)

const (
	jobsNamespace = "chaos-jobs"
	jobName       = "batch"
	jobImage      = "chaos/job:1"
	// The Job controller's finalizer on the pods it has not counted yet.
	jobTrackingFinalizer = "batch.kubernetes.io/job-tracking"
)

// jobKilling runs a Job of JobCompletions pods, a tenth of them at once,
// whose containers exit 0 as soon as they start (the simulated runtimes'
// OnStart, for the pods of jobsNamespace), and SIGKILLs the controller-manager once a third have succeeded. The
// Job must complete with exactly JobCompletions successes counted, as
// many pods Succeeded, and no pod left with the tracking finalizer: a
// controller that restarts neither loses nor counts twice a finished pod.
func (r *run) jobKilling(ctx context.Context) error {
	n := int32(r.cfg.JobCompletions)
	for _, nd := range r.c.nodes {
		nd.sim.SetOnStart(func(c sim.Container) (bool, int32) { return c.PodNamespace == jobsNamespace, 0 })
	}
	jobs := client.Jobs(r.c.conn)
	t0 := time.Now()
	if _, err := jobs.Create(ctx, &batchv1.Job{
		Metadata: &metav1.ObjectMeta{Namespace: jobsNamespace, Name: jobName},
		Spec: &batchv1.JobSpec{Completions: proto.Int32(n), Parallelism: proto.Int32(max(n/10, 1)),
			Template: &corev1.PodTemplateSpec{Spec: &corev1.PodSpec{RestartPolicy: "Never",
				Containers: []*corev1.Container{{Name: "work", Image: jobImage}}}}},
	}); err != nil {
		return err
	}
	// Read at each snapshot (every 100 ms).
	var st *batchv1.JobStatus
	status := func(*snapshot) *batchv1.JobStatus {
		if j, err := jobs.Get(ctx, jobsNamespace, jobName); err == nil {
			st = j.GetStatus()
		}
		return st
	}
	if err := r.samples.until(ctx, r.cfg.Converge, func(s *snapshot) bool { return status(s).GetSucceeded() >= n/3 }); err != nil {
		return fmt.Errorf("the Job made no progress (%v): %w", st, err)
	}
	killedAt := st.GetSucceeded()
	down, err := r.c.restart(ctx, ControllerManager)
	if err != nil {
		return err
	}
	complete := func(s *snapshot) bool {
		return slices.ContainsFunc(status(s).GetConditions(), func(c *batchv1.JobCondition) bool {
			return c.GetType() == "Complete" && c.GetStatus() == "True"
		})
	}
	if err := r.samples.until(ctx, r.cfg.Converge, complete); err != nil {
		return fmt.Errorf("the Job did not complete (%v): %w", st, err)
	}
	took := time.Since(t0)
	pods, err := client.Pods(r.c.conn).List(ctx, &metav1.ListOptions{Namespace: jobsNamespace, LabelSelector: "batch.kubernetes.io/job-name=" + jobName})
	if err != nil {
		return err
	}
	var succeeded, tracked int32
	for _, p := range pods.GetItems() {
		if p.GetStatus().GetPhase() == "Succeeded" {
			succeeded++
		}
		if slices.Contains(p.GetMetadata().GetFinalizers(), jobTrackingFinalizer) {
			tracked++
		}
	}
	if st.GetSucceeded() != n || succeeded != n || st.GetFailed() != 0 || tracked != 0 {
		r.violate(fmt.Sprintf("the Job completed with %d successes counted and %d failures, %d pods Succeeded, %d pods still tracked; want exactly %d, 0, %d, 0",
			st.GetSucceeded(), st.GetFailed(), succeeded, tracked, n, n))
	}
	r.figure(Figure{Name: "job.kill_controller_manager_ms", Value: ms(took), Unit: "ms", Bound: ms(r.cfg.Converge),
		Note: fmt.Sprintf("a Job of %d completions, %d at once, from its create to Complete; the controller-manager SIGKILLed at %d succeeded and up again %.0f ms later; %d successes counted, %d pods Succeeded",
			n, max(n/10, 1), killedAt, ms(down), st.GetSucceeded(), succeeded)})
	return nil
}
