package scenarios

import (
	"context"
	"fmt"
	"time"

	"go.uber.org/zap"

	"skiff.dev/internal/apierrors"
	"skiff.dev/internal/client"
	"skiff.dev/internal/informer"
	appsv1 "skiff.dev/proto/apps/v1"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/controller-manager/daemonset"
	"skiff.dev/services/controller-manager/simnode"
	"skiff.dev/services/scheduler/scheduler"
)

// The DaemonSet figures: a DaemonSet on SchedNodes (1,000) simulated nodes,
// its pods placed by the real scheduler (the controller pins each to its
// node by node affinity) and made ready by a simulated node agent; then
// its image changes with maxUnavailable 10% and the rollout is timed until
// every node runs an updated, available pod.
var (
	figDSRolloutS = Figure{Name: "daemonset.rollout_1000_nodes_s", Unit: "s"}
	figDSCPU      = Figure{Name: "daemonset.rollout_cpu_us_per_pod", Unit: "us CPU/pod"}
)

const daemonSetNamespace = "daemonset-bench"

// daemonSetNodeLabel marks the scenario's nodes (other scenarios leave
// nodes of their own behind): the DaemonSet selects them.
const daemonSetNodeLabel = "bench.skiff.dev/daemonset"

func daemonSetScenario() *Scenario {
	return &Scenario{
		Name:    "daemonset",
		Summary: "a DaemonSet on 1,000 simulated nodes (the real DaemonSet controller and scheduler; a simulated agent makes pods ready), then an image change rolled out with maxUnavailable 10%",
		Figures: []Figure{figDSRolloutS, figDSCPU},
		Run:     runDaemonSet,
	}
}

func runDaemonSet(ctx context.Context, env *Env, rs *Results) error {
	cfg := env.Config
	n := cfg.SchedNodes
	if n <= 0 {
		return fmt.Errorf("nothing to measure: %d nodes", n)
	}
	timeout := cfg.RSTimeout
	// Connections as separate processes would have them: the controller
	// manager, the scheduler, the node agents, the benchmark's observer.
	conns, err := env.dial(4)
	if err != nil {
		return err
	}
	defer closeAll(conns)
	cmConn, schedConn, nodeConn, obsConn := conns[0], conns[1], conns[2], conns[3]
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	if _, err := client.Namespaces(obsConn).Create(ctx, &corev1.Namespace{Metadata: &metav1.ObjectMeta{Name: daemonSetNamespace}}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	env.logf("daemonset: creating %d nodes", n)
	if err := inParallel(ctx, 16, n, func(ctx context.Context, i int) error {
		nodes := client.Nodes(obsConn)
		name := fmt.Sprintf("ds-node-%04d", i)
		node, err := nodes.Create(ctx, &corev1.Node{Metadata: &metav1.ObjectMeta{Name: name, Labels: map[string]string{"kubernetes.io/hostname": name, daemonSetNodeLabel: "true"}}})
		if err != nil {
			return err
		}
		node.Status = &corev1.NodeStatus{Allocatable: map[string]string{"cpu": "32", "memory": "256Gi", "pods": "110"}}
		_, err = nodes.UpdateStatus(ctx, node)
		return err
	}); err != nil {
		return fmt.Errorf("creating nodes: %w", err)
	}

	mc, stopCM, err := benchManagerContext(ctx, cmConn)
	if err != nil {
		return err
	}
	defer stopCM()
	dsc := daemonset.New(mc, daemonset.Options{})
	sched, err := scheduler.New(schedConn, scheduler.Config{Logger: zap.NewNop()})
	if err != nil {
		return err
	}
	nodeInformers := informer.NewFactory(informer.FactoryOptions{})
	agent := simnode.New(nodeConn, informer.For(nodeInformers, client.Pods(nodeConn)), simnode.Options{
		Workers: 32,
		Accept:  func(p *corev1.Pod) bool { return p.GetSpec().GetNodeName() != "" },
	})

	// The observer: the DaemonSet's status.
	changed := make(chan struct{}, 1)
	poke := func() {
		select {
		case changed <- struct{}{}:
		default:
		}
	}
	obs := informer.New(informer.FromClient(client.DaemonSets(obsConn)), informer.Options{ListOptions: &metav1.ListOptions{Namespace: daemonSetNamespace}})
	obs.AddHandler(informer.Handler[*appsv1.DaemonSet]{OnAdd: func(*appsv1.DaemonSet) { poke() }, OnUpdate: func(_, _ *appsv1.DaemonSet) { poke() }})

	var running []chan struct{}
	goRun := func(fn func(ctx context.Context)) {
		done := make(chan struct{})
		running = append(running, done)
		go func() { defer close(done); fn(ctx) }()
	}
	defer func() {
		cancel()
		for _, d := range running {
			<-d
		}
	}()
	mc.Informers.Start(ctx)
	nodeInformers.Start(ctx)
	goRun(func(ctx context.Context) { _ = dsc.Run(ctx) })
	goRun(func(ctx context.Context) { _ = sched.Run(ctx) })
	goRun(agent.Run)
	goRun(obs.Run)
	goRun(func(context.Context) { mc.Informers.Wait(); nodeInformers.Wait() })
	select {
	case <-sched.Synced():
	case <-ctx.Done():
		return ctx.Err()
	}
	if !informer.WaitForSync(ctx, obs) {
		return ctx.Err()
	}

	// rolledOut waits until generation gen is observed with every one of
	// the n nodes running an updated, available pod.
	rolledOut := func(gen int64, what string) error {
		deadline := time.NewTimer(timeout)
		defer deadline.Stop()
		for {
			ds, ok := obs.Store().GetByName(daemonSetNamespace, "bench")
			st := ds.GetStatus()
			if ok && st.GetObservedGeneration() >= gen && st.GetDesiredNumberScheduled() == int32(n) &&
				st.GetUpdatedNumberScheduled() == int32(n) && st.GetNumberAvailable() == int32(n) {
				return nil
			}
			select {
			case <-changed:
			case <-deadline.C:
				return fmt.Errorf("%s: after %v the status is %v", what, timeout, st)
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	}

	env.logf("daemonset: one pod on each of %d nodes", n)
	t0 := time.Now()
	dsClient := client.DaemonSets(obsConn)
	if _, err := dsClient.Create(ctx, benchDaemonSet("skiff.local/demo:v1")); err != nil {
		return err
	}
	if err := rolledOut(1, "creating"); err != nil {
		return err
	}
	created := time.Since(t0)

	env.logf("daemonset: rolling a new image out with maxUnavailable 10%%")
	settle()
	cpu0, t1 := cpuTime(), time.Now()
	if err := client.RetryOnConflict(ctx, client.DefaultRetry, func() error {
		ds, err := dsClient.Get(ctx, daemonSetNamespace, "bench")
		if err != nil {
			return err
		}
		ds.Spec.Template.Spec.Containers[0].Image = "skiff.local/demo:v2"
		_, err = dsClient.Update(ctx, ds)
		return err
	}); err != nil {
		return err
	}
	if err := rolledOut(2, "rolling out"); err != nil {
		return err
	}
	elapsed, cpu := time.Since(t1), cpuTime()-cpu0
	rs.Add(figDSRolloutS, elapsed.Seconds(), fmt.Sprintf("%d nodes, maxUnavailable 10%%: from the image change to every node running an updated available pod (the first %d pods: %.2fs)", n, n, created.Seconds()))
	rs.Add(figDSCPU, float64(cpu.Microseconds())/float64(n), "process CPU (apiserver + etcd + controller + scheduler + simulated agent + observer) of the rollout / pods replaced")
	return nil
}

func benchDaemonSet(image string) *appsv1.DaemonSet {
	labels := map[string]string{"app": "ds-bench"}
	ten := &metav1.IntOrString{Value: &metav1.IntOrString_StrVal{StrVal: "10%"}}
	return &appsv1.DaemonSet{
		Metadata: &metav1.ObjectMeta{Namespace: daemonSetNamespace, Name: "bench"},
		Spec: &appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: &corev1.PodTemplateSpec{
				Metadata: &metav1.ObjectMeta{Labels: labels},
				Spec: &corev1.PodSpec{
					NodeSelector: map[string]string{daemonSetNodeLabel: "true"},
					Containers: []*corev1.Container{{
						Name: "agent", Image: image,
						Resources: &corev1.ResourceRequirements{Requests: map[string]string{"cpu": "10m", "memory": "16Mi"}},
					}},
				},
			},
			UpdateStrategy: &appsv1.DaemonSetUpdateStrategy{Type: "RollingUpdate", RollingUpdate: &appsv1.RollingUpdateDaemonSet{MaxUnavailable: ten}},
		},
	}
}
