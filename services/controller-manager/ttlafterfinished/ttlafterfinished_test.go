package ttlafterfinished

import (
	"context"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"skiff.dev/internal/client"
	"skiff.dev/internal/informer"
	"skiff.dev/internal/workqueue"
	batchv1 "skiff.dev/proto/batch/v1"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/controller-manager/manager/managertest"
)

func TestTimeLeft(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	cases := []struct {
		name    string
		ttl     *int32
		cond    string
		now     time.Duration
		cleanup bool
		left    time.Duration
	}{
		{"no ttl", nil, "Complete", 0, false, 0},
		{"not finished", proto.Int32(10), "", 0, false, 0},
		{"complete, ttl running", proto.Int32(10), "Complete", 4 * time.Second, true, 6 * time.Second},
		{"failed, ttl over", proto.Int32(10), "Failed", 11 * time.Second, true, -time.Second},
		{"ttl 0: at once", proto.Int32(0), "Complete", 0, true, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			j := finishedJob("j", c.ttl, c.cond, t0)
			if got := needsCleanup(j); got != c.cleanup {
				t.Fatalf("needsCleanup %v, want %v", got, c.cleanup)
			}
			if !c.cleanup {
				return
			}
			if left, err := timeLeft(j, t0.Add(c.now)); err != nil || left != c.left {
				t.Errorf("timeLeft %v %v, want %v", left, err, c.left)
			}
		})
	}
}

func finishedJob(name string, ttl *int32, cond string, at time.Time) *batchv1.Job {
	j := &batchv1.Job{
		Metadata: &metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: &batchv1.JobSpec{TtlSecondsAfterFinished: ttl, Template: &corev1.PodTemplateSpec{
			Spec: &corev1.PodSpec{RestartPolicy: "Never", Containers: []*corev1.Container{{Name: "c", Image: "busybox"}}}}},
		Status: &batchv1.JobStatus{},
	}
	if cond != "" {
		j.Status.Conditions = []*batchv1.JobCondition{{Type: cond, Status: "True", LastTransitionTime: timestamppb.New(at)}}
	}
	return j
}

func TestDeletesExpiredJobs(t *testing.T) {
	env := managertest.Start(t)
	t0 := time.Now().Truncate(time.Second)
	clock := workqueue.NewFakeClock(t0)
	env.Manager.Clock = clock
	jobs := informer.For(env.Manager.Informers, client.Jobs(env.Conn))
	managertest.Watch(env, jobs)
	ctrl := New(env.Manager, Options{})
	env.StartInformers()
	env.GoErr(ctrl.Run)

	jc := client.Jobs(env.Conn)
	for _, j := range []*batchv1.Job{finishedJob("short", proto.Int32(30), "Complete", t0), finishedJob("keep", nil, "Complete", t0)} {
		st := j.Status
		created, err := jc.Create(env.Ctx, j)
		if err != nil {
			t.Fatal(err)
		}
		created.Status = st
		if _, err := jc.UpdateStatus(env.Ctx, created); err != nil {
			t.Fatal(err)
		}
	}
	// The TTL'd Job waits on the clock.
	ctx, cancel := context.WithTimeout(env.Ctx, 10*time.Second)
	defer cancel()
	if err := clock.BlockUntilWaiters(ctx, 1); err != nil {
		t.Fatalf("the controller did not wait on the clock: %v", err)
	}
	clock.Step(31 * time.Second)
	env.Await(10*time.Second, "short deleted", func() (bool, string) {
		_, ok := jobs.Store().GetByName("default", "short")
		return !ok, "still there"
	})
	for _, name := range []string{"keep"} {
		if _, ok := jobs.Store().GetByName("default", name); !ok {
			t.Errorf("%s deleted", name)
		}
	}
}
