package scenarios

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"skiff.dev/internal/client"
	"skiff.dev/internal/events"
	"skiff.dev/internal/informer"
	"skiff.dev/internal/workqueue"
	appsv1 "skiff.dev/proto/apps/v1"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/controller-manager/manager"
	"skiff.dev/services/controller-manager/replicaset"
	"skiff.dev/services/controller-manager/simnode"
)

// The controller figures: one ReplicaSet scaled from 0 to RSReplicas pods
// by the real ReplicaSet controller, while a simulated node marks the pods
// running, all against the same apiserver as the write scenario.
var (
	figRSPodsPerS  = Figure{Name: "controllers.rs_10k_pods_per_s", Unit: "pods/s"}
	figRSPodCPU    = Figure{Name: "controllers.rs_cpu_us_per_pod", Unit: "us CPU/pod"}
	figRSReadyS    = Figure{Name: "controllers.rs_10k_all_ready_s", Unit: "s"}
	figRSVsAPIRate = Figure{Name: "controllers.create_vs_api_ratio", Unit: "ratio", Target: AtLeast(0.8)}
)

const controllersNamespace = "controllers-bench"

func controllersScenario() *Scenario {
	return &Scenario{
		Name:    "controllers.rs",
		Summary: "the ReplicaSet controller scales one ReplicaSet from 0 to 10,000 pods; a simulated node marks them running and ready",
		Figures: []Figure{figRSPodsPerS, figRSPodCPU, figRSReadyS, figRSVsAPIRate},
		Needs:   []string{"write"},
		Run:     runControllers,
	}
}

func runControllers(ctx context.Context, env *Env, rs *Results) error {
	n := env.Config.RSReplicas
	if n <= 0 {
		return fmt.Errorf("nothing to measure: %d replicas", n)
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
	ctrl := replicaset.New(mc, replicaset.Options{})

	nodeInformers := informer.NewFactory(informer.FactoryOptions{})
	node := simnode.New(conns[1], informer.For(nodeInformers, client.Pods(conns[1])), simnode.Options{Workers: 32})

	// The observer counts the pods as they appear and become ready.
	var created, ready atomic.Int64
	allCreated, allReady := make(chan struct{}), make(chan struct{})
	obs := informer.New(informer.FromClient(client.Pods(conns[2])), informer.Options{ListOptions: &metav1.ListOptions{Namespace: controllersNamespace}})
	obs.AddHandler(informer.Handler[*corev1.Pod]{
		OnAdd: func(p *corev1.Pod) {
			if created.Add(1) == int64(n) {
				close(allCreated)
			}
		},
		OnUpdate: func(old, cur *corev1.Pod) {
			if !simnode.IsReady(old) && simnode.IsReady(cur) && ready.Add(1) == int64(n) {
				close(allReady)
			}
		},
	})

	rsc := client.ReplicaSets(conns[2])
	set, err := rsc.Create(ctx, benchReplicaSet())
	if err != nil {
		return fmt.Errorf("creating the ReplicaSet: %w", err)
	}
	mc.Informers.Start(ctx)
	nodeInformers.Start(ctx)
	go obs.Run(ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = ctrl.Run(ctx) }()
	go node.Run(ctx)
	defer func() { cancel(); <-done; mc.Informers.Wait(); nodeInformers.Wait() }()
	if !mc.Informers.WaitForSync(ctx) || !nodeInformers.WaitForSync(ctx) || !informer.WaitForSync(ctx, obs) {
		return ctx.Err()
	}

	env.logf("controllers: scaling a ReplicaSet from 0 to %d pods", n)
	cpu0, t0 := cpuTime(), time.Now()
	scaled := proto.Clone(set).(*appsv1.ReplicaSet)
	scaled.Spec.Replicas = proto.Int32(int32(n))
	if _, err := rsc.Update(ctx, scaled); err != nil {
		return fmt.Errorf("scaling the ReplicaSet: %w", err)
	}
	timeout := time.NewTimer(env.Config.RSTimeout)
	defer timeout.Stop()
	select {
	case <-allCreated:
	case <-timeout.C:
		return fmt.Errorf("after %v only %d of %d pods were created", env.Config.RSTimeout, created.Load(), n)
	}
	createElapsed, cpu := time.Since(t0), cpuTime()-cpu0
	select {
	case <-allReady:
	case <-timeout.C:
		return fmt.Errorf("after %v only %d of %d pods were ready", env.Config.RSTimeout, ready.Load(), n)
	}
	readyElapsed := time.Since(t0)

	perS := float64(n) / createElapsed.Seconds()
	rs.Add(figRSPodsPerS, perS, fmt.Sprintf("%d pods created in %.1fs (observed through a watch), node marking them ready meanwhile", n, createElapsed.Seconds()))
	rs.Add(figRSPodCPU, float64(cpu.Microseconds())/float64(n), "process CPU (apiserver + etcd + controller + node + observer) / pods, until all were created")
	rs.Add(figRSReadyS, readyElapsed.Seconds(), fmt.Sprintf("until all %d pods were Running and Ready", n))
	if api, ok := rs.Get(figAPICreatePerS.Name); ok && api > 0 {
		rs.Add(figRSVsAPIRate, perS/api, fmt.Sprintf("%.0f pods/s / %.0f API creates/s in this run", perS, api))
	}
	return nil
}

// benchManagerContext builds what the controller-manager gives its
// controllers, with metrics unregistered.
func benchManagerContext(ctx context.Context, conn *grpc.ClientConn) (*manager.Context, func(), error) {
	b, err := events.NewBroadcaster(events.Config{Client: client.Events(conn), Component: "controller-manager"})
	if err != nil {
		return nil, nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); b.Run(ctx) }()
	return &manager.Context{
		Conn:         conn,
		Informers:    informer.NewFactory(informer.FactoryOptions{}),
		Recorder:     b.NewRecorder,
		Logger:       zap.NewNop(),
		QueueMetrics: workqueue.NewMetrics(nil),
		Clock:        workqueue.RealClock(),
	}, func() { cancel(); <-done }, nil
}

func benchReplicaSet() *appsv1.ReplicaSet {
	labels := map[string]string{"app": "bench"}
	return &appsv1.ReplicaSet{
		Metadata: &metav1.ObjectMeta{Namespace: controllersNamespace, Name: "bench"},
		Spec: &appsv1.ReplicaSetSpec{
			Replicas: proto.Int32(0),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: &corev1.PodTemplateSpec{
				Metadata: &metav1.ObjectMeta{Labels: labels},
				Spec: &corev1.PodSpec{Containers: []*corev1.Container{{
					Name: "web", Image: "skiff.local/demo:v1",
					Resources: &corev1.ResourceRequirements{Requests: map[string]string{"cpu": "10m", "memory": "16Mi"}},
				}}},
			},
		},
	}
}
