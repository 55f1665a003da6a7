package scenarios

import (
	"context"
	"fmt"

	"skiff.dev/internal/apierrors"
	"skiff.dev/internal/client"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
)

// The inter-pod anti-affinity figures: the scheduler scenario again, on
// the same 1,000 nodes, but the 5,000 pods come in groups of 10 whose
// members may not share a node (required anti-affinity on
// kubernetes.io/hostname). Kubernetes' scheduler slows by several times
// with inter-pod affinity; the ratio says how much Skiff's does.
var (
	figAntiAffinityPodsPerS = Figure{Name: "scheduler.antiaffinity_pods_per_s", Unit: "pods/s"}
	figAntiAffinityRatio    = Figure{Name: "scheduler.antiaffinity_vs_basic_ratio", Unit: "x", Target: AtLeast(0.5)}
	figAntiAffinityP99      = Figure{Name: "scheduler.antiaffinity_create_to_bound_p99_ms", Unit: "ms"}
	figAntiAffinityCPU      = Figure{Name: "scheduler.antiaffinity_cpu_us_per_pod", Unit: "us CPU/pod"}
)

const (
	antiAffinityNamespace = "scheduler-affinity-bench"
	antiAffinityGroupSize = 10
)

func schedAffinityScenario() *Scenario {
	return &Scenario{
		Name:    "scheduler.antiaffinity",
		Summary: "the scheduler scenario's 1,000 nodes; 5,000 pods in groups of 10 with required anti-affinity on kubernetes.io/hostname, created by 32 clients; the scheduler binds them",
		Figures: []Figure{figAntiAffinityPodsPerS, figAntiAffinityRatio, figAntiAffinityP99, figAntiAffinityCPU},
		Needs:   []string{"scheduler"},
		Run:     runSchedAffinity,
	}
}

// antiAffinityPod is pod i: group i/10, kept off the nodes of its group.
func antiAffinityPod(i int) *corev1.Pod {
	group := fmt.Sprintf("g%04d", i/antiAffinityGroupSize)
	p := benchPod(antiAffinityNamespace, i, map[string]string{"app": "antiaffinity-bench", "group": group})
	p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: []*corev1.PodAffinityTerm{{
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"group": group}},
			TopologyKey:   "kubernetes.io/hostname",
		}},
	}}
	return p
}

func runSchedAffinity(ctx context.Context, env *Env, rs *Results) error {
	basic, ok := rs.Get(figSchedPodsPerS.Name)
	if !ok {
		return fmt.Errorf("needs %s from the scheduler scenario", figSchedPodsPerS.Name)
	}
	if err := clearSchedulerPods(ctx, env); err != nil {
		return err
	}
	n := env.Config.SchedPods
	m, err := measureScheduling(ctx, env, "scheduler.antiaffinity", antiAffinityNamespace, antiAffinityPod)
	if err != nil {
		return err
	}
	perS := float64(n) / m.elapsed.Seconds()
	rs.Add(figAntiAffinityPodsPerS, perS, fmt.Sprintf("%d pods in groups of %d with required anti-affinity on %d nodes, first create to last bind seen: %.2fs",
		n, antiAffinityGroupSize, env.Config.SchedNodes, m.elapsed.Seconds()))
	rs.Add(figAntiAffinityRatio, perS/basic, fmt.Sprintf("against scheduler.pods_per_s %.0f of the same run", basic))
	rs.Add(figAntiAffinityP99, ms(m.lat.Percentile(99)), latencyNote(&m.lat, "pods"))
	rs.Add(figAntiAffinityCPU, float64(m.cpu.Microseconds())/float64(n), "process CPU (apiserver + etcd + scheduler + clients + observer) / pods")
	return nil
}

// clearSchedulerPods deletes the scheduler scenario's pods (at once: no
// node agent runs them), so that this scenario's nodes hold only its own
// pods, and makes sure its namespace exists.
func clearSchedulerPods(ctx context.Context, env *Env) error {
	conns, err := env.dial(max(env.Config.Conns, 1))
	if err != nil {
		return err
	}
	defer closeAll(conns)
	_, err = client.Namespaces(conns[0]).Create(ctx, &corev1.Namespace{Metadata: &metav1.ObjectMeta{Name: antiAffinityNamespace}})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating namespace %s: %w", antiAffinityNamespace, err)
	}
	env.logf("scheduler.antiaffinity: deleting the scheduler scenario's %d pods", env.Config.SchedPods)
	zero := int64(0)
	return inParallel(ctx, env.Config.SchedClients, env.Config.SchedPods, func(ctx context.Context, i int) error {
		_, err := client.Pods(conns[i%len(conns)]).Delete(ctx, &metav1.DeleteRequest{
			Namespace: schedulerNamespace, Name: fmt.Sprintf("pod-%05d", i), GracePeriodSeconds: &zero,
		})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	})
}
