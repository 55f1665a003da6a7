package scenarios

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"skiff.dev/internal/apierrors"
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
	figRSAPIRate   = Figure{Name: "controllers.api_create_per_s", Unit: "objects/s"}
	figRSVsAPIRate = Figure{Name: "controllers.create_vs_api_ratio", Unit: "ratio", Target: AtLeast(0.8)}
)

const controllersNamespace = "controllers-bench"

// rsAPIRound numbers the API create rounds around the ramp, apart from
// the write scenario's rounds (the round is part of the names).
const rsAPIRound = 1000

func controllersScenario() *Scenario {
	return &Scenario{
		Name:    "controllers.rs",
		Summary: "the ReplicaSet controller scales one ReplicaSet from 0 to 10,000 pods; a simulated node marks them running and ready; API creates measured just before and after",
		Figures: []Figure{figRSPodsPerS, figRSPodCPU, figRSReadyS, figRSAPIRate, figRSVsAPIRate},
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

	// The observer counts pod ADDED events from the raw watch bytes (no
	// decoding: it stands for a client that only counts), and learns that
	// every pod is ready from the ReplicaSet's status.
	created := countAdded(ctx, conns[2], n)
	allReady := make(chan struct{})
	var readyOnce sync.Once
	rsObs := informer.New(informer.FromClient(client.ReplicaSets(conns[2])), informer.Options{ListOptions: &metav1.ListOptions{Namespace: controllersNamespace}})
	rsObs.AddHandler(informer.Handler[*appsv1.ReplicaSet]{
		OnUpdate: func(_, cur *appsv1.ReplicaSet) {
			if cur.GetStatus().GetReadyReplicas() == int32(n) {
				readyOnce.Do(func() { close(allReady) })
			}
		},
	})

	rsc := client.ReplicaSets(conns[2])
	set, err := rsc.Create(ctx, benchReplicaSet())
	if err != nil {
		return fmt.Errorf("creating the ReplicaSet: %w", err)
	}
	mc.Informers.Start(ctx)
	go rsObs.Run(ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = ctrl.Run(ctx) }()
	defer func() { cancel(); <-done; mc.Informers.Wait(); nodeInformers.Wait() }()
	if !mc.Informers.WaitForSync(ctx) || !informer.WaitForSync(ctx, rsObs) {
		return ctx.Err()
	}

	// The API's create rate to compare with is measured right before the
	// ramp and right after it (as the write scenario measures, one round
	// each), on the server the ramp runs against: the write scenario's
	// api.create_per_s, a minute earlier, was measured on a server holding
	// fewer objects (before the scheduler's nodes and pods) and on a host
	// whose speed drifts over tens of seconds; it runs 20-30% faster than
	// the same measurement here. The figure's note gives both ratios.
	creator, err := newAPICreator(env)
	if err != nil {
		return err
	}
	defer creator.close()
	window := env.Config.Duration / time.Duration(max(env.Config.Rounds, 1))
	var api loadResult
	measureAPI := func(round int) error {
		res, err := creator.run(ctx, env.Config, window, round)
		if err == nil {
			api.add(res)
		}
		return err
	}
	if err := measureAPI(rsAPIRound); err != nil {
		return err
	}

	env.logf("controllers: scaling a ReplicaSet from 0 to %d pods", n)
	settle()
	cpu0, t0 := cpuTime(), time.Now()
	err = client.RetryOnConflict(ctx, client.DefaultRetry, func() error {
		cur, err := rsc.Get(ctx, controllersNamespace, set.GetMetadata().GetName())
		if err != nil {
			return err
		}
		cur.Spec.Replicas = proto.Int32(int32(n))
		_, err = rsc.Update(ctx, cur)
		return err
	})
	if err != nil {
		return fmt.Errorf("scaling the ReplicaSet: %w", err)
	}
	timeout := time.NewTimer(env.Config.RSTimeout)
	defer timeout.Stop()
	select {
	case <-created.all:
	case err := <-created.failed:
		return fmt.Errorf("watching pods: %w", err)
	case <-timeout.C:
		return fmt.Errorf("after %v only %d of %d pods were created", env.Config.RSTimeout, created.n.Load(), n)
	}
	createElapsed, cpu := time.Since(t0), cpuTime()-cpu0
	// The node starts once every pod exists: its status writes (and its
	// informer) would otherwise take half the CPU from the creations
	// measured. It stands for a kubelet in another process.
	nodeInformers.Start(ctx)
	go node.Run(ctx)
	select {
	case <-allReady:
	case <-timeout.C:
		return fmt.Errorf("after %v not all %d pods were ready", env.Config.RSTimeout, n)
	}
	readyElapsed := time.Since(t0)
	if err := measureAPI(rsAPIRound + 1); err != nil {
		return err
	}

	perS := float64(n) / createElapsed.Seconds()
	watchNote := ""
	if r := created.resumed.Load(); r > 0 {
		watchNote = fmt.Sprintf(" (cut off as too slow and resumed %d times)", r)
	}
	rs.Add(figRSPodsPerS, perS, fmt.Sprintf("%d pods created in %.1fs, from the scale to the last ADDED event of a watch%s", n, createElapsed.Seconds(), watchNote))
	rs.Add(figRSPodCPU, float64(cpu.Microseconds())/float64(n), "process CPU (apiserver + etcd + controller + observer) / pods, until all were created")
	rs.Add(figRSReadyS, readyElapsed.Seconds(), fmt.Sprintf("from the scale until the ReplicaSet reported %d ready (the node marks them once all exist)", n))
	rs.Add(figRSAPIRate, api.perSecond(), fmt.Sprintf("%d clients as api.create (1 KiB ConfigMaps), one %v round before the ramp and one after all were ready", env.Config.Clients, window))
	note := fmt.Sprintf("%.0f pods/s / %.0f API creates/s measured around the ramp", perS, api.perSecond())
	if w, ok := rs.Get(figAPICreatePerS.Name); ok && w > 0 {
		note += fmt.Sprintf("; against api.create_per_s of the write scenario (%.0f/s, earlier): %.3f", w, perS/w)
	}
	rs.Add(figRSVsAPIRate, perS/api.perSecond(), note)
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

// addedCounter counts the ADDED events of a pods watch. When the server
// cuts the watch off as too slow (ServiceUnavailable: a busy machine), it
// watches again from the last resourceVersion it received, as the error
// tells a client to, so that no event is missed or counted twice.
type addedCounter struct {
	n       atomic.Int64
	all     chan struct{} // closed at the want-th
	allRV   string        // the resourceVersion of the want-th event; set before all is closed
	resumed atomic.Int64  // watches started again after a cut-off
	failed  chan error
}

func countAdded(ctx context.Context, conn *grpc.ClientConn, want int) *addedCounter {
	c := &addedCounter{all: make(chan struct{}), failed: make(chan error, 1)}
	// The newest resourceVersion received. From "" the watch starts with
	// the pods that exist as ADDED events (in the order of their names, not
	// of their resourceVersions); so does a watch started again before any
	// event arrived.
	var rv []byte
	watch := func() (grpc.ClientStream, error) {
		stream, err := corev1.NewPodsClient(conn).Watch(ctx, &metav1.ListOptions{Namespace: controllersNamespace, ResourceVersion: string(rv)}, client.RawWatch())
		if err == nil {
			_, err = stream.Header()
		}
		return stream, err
	}
	stream, err := watch()
	if err != nil {
		c.failed <- err
		return c
	}
	go func() {
		var resp []byte
		for {
			if err := stream.RecvMsg(&resp); err != nil {
				if ctx.Err() != nil {
					return
				}
				if !apierrors.IsServiceUnavailable(err) {
					c.failed <- err
					return
				}
				c.resumed.Add(1)
				if stream, err = watch(); err != nil {
					if ctx.Err() == nil {
						c.failed <- err
					}
					return
				}
				continue
			}
			err := client.WatchEvents(resp, func(typ string, object []byte) error {
				v, err := resourceVersionOf(object)
				if err != nil {
					return err
				}
				if newerRV(v, rv) {
					rv = append(rv[:0], v...)
				}
				if typ == "ADDED" && c.n.Add(1) == int64(want) {
					c.allRV = string(v)
					close(c.all)
				}
				return nil
			})
			if err != nil {
				c.failed <- err
				return
			}
		}
	}()
	return c
}

// newerRV says whether resourceVersion a is after b: decimal etcd
// revisions, without leading zeros ("" is before every one).
func newerRV(a, b []byte) bool {
	if len(a) != len(b) {
		return len(a) > len(b)
	}
	return bytes.Compare(a, b) > 0
}
