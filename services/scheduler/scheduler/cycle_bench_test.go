package scheduler

import (
	"context"
	"fmt"
	"testing"

	"go.uber.org/zap"

	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/scheduler/framework"
)

// BenchmarkSchedulingCycle measures one pod's cycle (snapshot, filter,
// score, select, assume) against 1,000 nodes, without the apiserver:
// go test -run XXX -bench SchedulingCycle ./scheduler/
func BenchmarkSchedulingCycle(b *testing.B) {
	for _, n := range []int{100, 1000, 5000} {
		b.Run(fmt.Sprintf("nodes=%d", n), func(b *testing.B) {
			s, err := New(nil, Config{Logger: zap.NewNop()})
			if err != nil {
				b.Fatal(err)
			}
			for i := range n {
				s.cache.AddNode(&corev1.Node{
					Metadata: &metav1.ObjectMeta{Name: fmt.Sprintf("node-%05d", i), Labels: map[string]string{"kubernetes.io/hostname": fmt.Sprintf("node-%05d", i)}},
					Status:   &corev1.NodeStatus{Allocatable: map[string]string{"cpu": "32", "memory": "256Gi", "pods": "110"}},
				})
			}
			fwk := s.profiles["default-scheduler"]
			ctx := context.Background()
			pods := make([]*framework.PodInfo, b.N)
			for i := range pods {
				pods[i] = framework.NewPodInfo(&corev1.Pod{
					Metadata: &metav1.ObjectMeta{Namespace: "bench", Name: fmt.Sprintf("pod-%d", i), Uid: fmt.Sprintf("uid-%d", i)},
					Spec: &corev1.PodSpec{Containers: []*corev1.Container{{
						Name: "c", Resources: &corev1.ResourceRequirements{Requests: map[string]string{"cpu": "100m", "memory": "128Mi"}},
					}}},
				})
			}
			b.ResetTimer()
			b.ReportAllocs()
			for i := range b.N {
				// Keep the nodes from filling up: at most ~100 pods each.
				if i > 0 && i%(n*100) == 0 {
					b.StopTimer()
					for j := i - n*100; j < i; j++ {
						_ = s.cache.ForgetPod(pods[j])
					}
					b.StartTimer()
				}
				state := framework.NewCycleState()
				state.RecordPluginMetrics = s.rand.IntN(100) < pluginMetricsSamplePercent
				s.cache.UpdateSnapshot(s.snapshot)
				host, err := s.schedulePod(ctx, fwk, state, pods[i])
				if err != nil {
					b.Fatal(err)
				}
				if err := s.cache.AssumePod(pods[i], host); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
