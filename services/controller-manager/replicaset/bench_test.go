package replicaset

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"skiff.dev/internal/client"
	"skiff.dev/internal/informer"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/controller-manager/controllerutil"
	"skiff.dev/services/controller-manager/manager/managertest"
)

// BenchmarkScaleUp compares the pods per second a ReplicaSet scaled up
// from 0 to 10,000 gets with the raw API creates per second of the same
// pods from 64 concurrent clients. The two alternate in rounds of 2,500
// pods, so that a machine's changing load weighs on both alike. Metrics:
// pods/s (the ReplicaSet's), raw_pods/s, and their ratio.
func BenchmarkScaleUp(b *testing.B) {
	const total, rounds, clients = 10000, 4, 64
	for range b.N {
		env := managertest.Start(b)
		ctrl := New(env.Manager, Options{})
		// Count the ReplicaSet's pods as the shared informer sees them.
		var seen atomic.Int64
		env.Pods().AddHandler(informer.Handler[*corev1.Pod]{OnAdd: func(p *corev1.Pod) {
			if controllerutil.ControllerOf(p.GetMetadata()) != nil {
				seen.Add(1)
			}
		}})
		env.StartInformers()
		env.GoErr(ctrl.Run)
		rs := newRS("web", 0, 0)
		if _, err := client.ReplicaSets(env.Conn).Create(env.Ctx, rs); err != nil {
			b.Fatal(err)
		}

		pods := client.Pods(env.Conn)
		tmpl := rs.Spec.Template
		var rawTime, rsTime time.Duration
		for r := 1; r <= rounds; r++ {
			n := total / rounds
			var next atomic.Int64
			var wg sync.WaitGroup
			start := time.Now()
			for range clients {
				wg.Go(func() {
					for next.Add(1) <= int64(n) {
						_, err := pods.Create(env.Ctx, &corev1.Pod{
							Metadata: &metav1.ObjectMeta{GenerateName: "raw-", Namespace: "raw", Labels: map[string]string{"app": "raw"}},
							Spec:     tmpl.Spec,
						})
						if err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			rawTime += time.Since(start)

			start = time.Now()
			want := int64(r * n)
			err := client.RetryOnConflict(env.Ctx, client.DefaultRetry, func() error {
				cur, err := client.ReplicaSets(env.Conn).Get(env.Ctx, "default", "web")
				if err != nil {
					return err
				}
				cur.Spec.Replicas = proto.Int32(int32(want))
				_, err = client.ReplicaSets(env.Conn).Update(env.Ctx, cur)
				return err
			})
			if err != nil {
				b.Fatal(err)
			}
			env.Await(time.Minute, "the pods", func() (bool, string) {
				return seen.Load() >= want, managertest.Explain("%d of %d pods", seen.Load(), want)
			})
			rsTime += time.Since(start)
		}
		raw := float64(total) / rawTime.Seconds()
		got := float64(total) / rsTime.Seconds()
		b.ReportMetric(got, "pods/s")
		b.ReportMetric(raw, "raw_pods/s")
		b.ReportMetric(got/raw, "ratio")
		env.Stop()
	}
}
