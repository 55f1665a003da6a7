package scenarios

import (
	"context"
	"fmt"
	"strings"
	"time"

	"google.golang.org/grpc"
	kcorev1 "k8s.io/api/core/v1"
	kapierrors "k8s.io/apimachinery/pkg/api/errors"
	kmetav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"skiff.dev/internal/apierrors"
	"skiff.dev/internal/client"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
)

// The HTTP API figures (issue 22): Kubernetes' HTTP API as client-go
// speaks it (httpclient.go), on the same apiserver and port as the gRPC
// figures, compared with the gRPC API under the same load.
var (
	figHTTPCreatePerS = Figure{Name: "http.create_per_s", Unit: "objects/s"}
	figHTTPCreateCPU  = Figure{Name: "http.create_cpu_us_per_object", Unit: "us CPU/object"}
	figHTTPCreateP99  = Figure{Name: "http.create_p99_ms", Unit: "ms"}
	figHTTPConns      = Figure{Name: "http.create_connections", Unit: "connections"}
	figHTTPGRPCPerS   = Figure{Name: "http.grpc_create_per_s", Unit: "objects/s"}
	figHTTPGRPCCPU    = Figure{Name: "http.grpc_create_cpu_us_per_object", Unit: "us CPU/object"}
	figHTTPVsGRPC     = Figure{Name: "http.create_vs_grpc_ratio", Unit: "ratio", Target: AtLeast(0.7)}
	figHTTPList1000   = Figure{Name: "http.list_1000_p99_ms", Unit: "ms", Target: AtMost(100)}
	figHTTPListCPU    = Figure{Name: "http.list_cpu_us_per_object", Unit: "us CPU/object"}
	// The floor under http.list_1000_p99_ms: the same Lists answered with
	// the apiserver's answer by a server that does nothing else, so
	// client-go's decoding and the protocol alone.
	figHTTPListFloor = Figure{Name: "http.list_floor_p99_ms", Unit: "ms"}
)

const (
	// httpListNamespace holds the pods http.list lists.
	httpListNamespace = "http-list-bench"
	// httpGRPCRound numbers the gRPC create rounds of http.create apart
	// from the write scenario's and the controllers' (the round is part
	// of the names: all create in createNamespace).
	httpGRPCRound = 2000
)

func httpCreateScenario() *Scenario {
	return &Scenario{
		Name:    "http.create",
		Summary: "ConfigMap creates (1 KiB) by client-go over HTTP (JSON, one HTTP/2 connection) and by the gRPC API, same concurrency, alternating rounds",
		Figures: []Figure{figHTTPCreatePerS, figHTTPCreateCPU, figHTTPCreateP99, figHTTPConns, figHTTPGRPCPerS, figHTTPGRPCCPU, figHTTPVsGRPC,
			figHTTPFloorCPU, figGRPCFloorCPU, figHTTPCeiling},
		Run: runHTTPCreates,
	}
}

func httpListScenario() *Scenario {
	return &Scenario{
		Name:    "http.list",
		Summary: "one client-go client Lists a namespace of 1,000 pods over HTTP (JSON, consistent reads)",
		Figures: []Figure{figHTTPList1000, figHTTPListCPU, figHTTPListFloor},
		Run:     runHTTPList,
	}
}

// runHTTPCreates measures client-go's creates against the gRPC API's own
// (api.create's harness: the same clients, object and namespace) in
// alternating rounds, as the write scenario measures the API against etcd,
// so the ratio compares two loads on the same machine within seconds (its
// speed drifts over tens of seconds: see controllers.create_vs_api_ratio).
// Rounds alternate which goes first, so neither always meets the objects
// the other just wrote.
func runHTTPCreates(ctx context.Context, env *Env, rs *Results) error {
	cfg := env.Config
	grpcC, err := newAPICreator(env)
	if err != nil {
		return err
	}
	defer grpcC.close()
	if err := createNamespaces(ctx, grpcC.conns[0], createNamespace); err != nil {
		return err
	}
	httpC, err := newHTTPCreator(ctx, env)
	if err != nil {
		return err
	}
	defer httpC.close()
	grpcAnswer, err := grpcC.first(ctx)
	if err != nil {
		return err
	}
	floors, err := startEchoFloors(httpC.answer, grpcAnswer)
	if err != nil {
		return err
	}
	defer floors.close()
	rounds := max(cfg.Rounds, 1)
	window := cfg.Duration / time.Duration(rounds)
	// Each load is followed by its floor's, in the same round.
	httpTotal, grpcTotal, ratios, err := pairedRounds(rounds, true,
		func(r int) (*loadResult, error) {
			res, err := httpC.run(ctx, cfg, window, r)
			if err == nil {
				err = floors.runHTTP(ctx, cfg, window, r)
			}
			return res, err
		},
		func(r int) (*loadResult, error) {
			res, err := grpcC.run(ctx, cfg, window, httpGRPCRound+r)
			if err == nil {
				err = floors.runGRPC(ctx, cfg, window, r)
			}
			return res, err
		})
	if err != nil {
		return err
	}
	dialed, _ := httpC.kube.conns.counts()
	rs.Add(figHTTPCreatePerS, httpTotal.perSecond(), fmt.Sprintf("%d goroutines of one clientset, %s; %d creates in %.1fs over %d rounds",
		cfg.Clients, httpC.kube.wire(), httpTotal.ops, httpTotal.elapsed.Seconds(), rounds))
	rs.Add(figHTTPCreateCPU, httpTotal.cpuPerOp(), "process CPU (apiserver + etcd + client-go's JSON and HTTP) / creates")
	rs.Add(figHTTPCreateP99, ms(httpTotal.latency.Percentile(99)), latencyNote(&httpTotal.latency, "calls"))
	rs.Add(figHTTPConns, float64(dialed), "TCP connections client-go dialed for http.create (one create before the load opens it, as a program's first request would)")
	rs.Add(figHTTPGRPCPerS, grpcTotal.perSecond(), fmt.Sprintf("api.create's harness: %d clients over %d gRPC conns, %d creates in %.1fs over %d rounds",
		cfg.Clients, len(grpcC.clients), grpcTotal.ops, grpcTotal.elapsed.Seconds(), rounds))
	rs.Add(figHTTPGRPCCPU, grpcTotal.cpuPerOp(), "process CPU (apiserver + etcd + gRPC clients) / creates")
	note := fmt.Sprintf("http.create_per_s / http.grpc_create_per_s; per round %s", strings.Join(ratios, " "))
	if a, ok := rs.Get(figAPICreatePerS.Name); ok && a > 0 {
		note += fmt.Sprintf("; against api.create_per_s of the write scenario (%.0f/s, earlier): %.3f", a, httpTotal.perSecond()/a)
	}
	rs.Add(figHTTPVsGRPC, httpTotal.perSecond()/grpcTotal.perSecond(), note)
	floors.report(grpcTotal.cpuPerOp(), rs)
	return nil
}

// httpCreator creates 1 KiB ConfigMaps through client-go, as apiCreator
// does through gRPC.
type httpCreator struct {
	kube *kubeClient
	data string
	// answer is the body the apiserver answered the first create with.
	answer []byte
}

func newHTTPCreator(ctx context.Context, env *Env) (*httpCreator, error) {
	kube, err := newKubeClient(env)
	if err != nil {
		return nil, err
	}
	c := &httpCreator{kube: kube, data: string(payload(1024))}
	// One create first opens the connection the load's goroutines share
	// (as a program's discovery or first list does: 64 first requests at
	// once would each dial, and all but one connection be dropped), and
	// has the apiserver make what it makes once, on the first HTTP write
	// (its OpenAPI models, for field management: 0.5 s here, 3 s with the
	// race detector), which is not the steady state measured.
	// Its answer, as the apiserver wrote it, is what the floor's echo
	// answers (httpfloor.go).
	rc := kube.CoreV1().RESTClient()
	answer, err := rc.Post().Namespace(createNamespace).Resource("configmaps").Body(c.configMap("h-first")).DoRaw(ctx)
	if kapierrors.IsAlreadyExists(err) {
		answer, err = rc.Get().Namespace(createNamespace).Resource("configmaps").Name("h-first").DoRaw(ctx)
	}
	if err != nil {
		kube.close()
		return nil, fmt.Errorf("client-go's first create: %w", err)
	}
	c.answer = answer
	return c, nil
}

func (c *httpCreator) configMap(name string) *kcorev1.ConfigMap {
	return &kcorev1.ConfigMap{
		ObjectMeta: kmetav1.ObjectMeta{Name: name, Namespace: createNamespace},
		Data:       map[string]string{"data": c.data},
	}
}

func (c *httpCreator) close() { c.kube.close() }

func (c *httpCreator) run(ctx context.Context, cfg Config, window time.Duration, round int) (*loadResult, error) {
	cms := c.kube.CoreV1().ConfigMaps(createNamespace)
	res, err := load{
		clients:  cfg.Clients,
		warmup:   cfg.Warmup,
		duration: window,
		op: func(ctx context.Context, client, seq int) error {
			_, err := cms.Create(ctx, c.configMap(fmt.Sprintf("h-%d-%03d-%09d", round, client, seq)), kmetav1.CreateOptions{})
			return err
		},
	}.run(ctx)
	if err != nil {
		return nil, fmt.Errorf("creating ConfigMaps over HTTP: %w", err)
	}
	return res, nil
}

// runHTTPList creates ListObjects pods through gRPC (quickly: they are the
// fixture), then times client-go Lists of all of them, as api.list times
// gRPC Lists of ConfigMaps: one client, consistent reads, at least
// ListMinCalls of them.
func runHTTPList(ctx context.Context, env *Env, rs *Results) error {
	cfg := env.Config
	n := cfg.ListObjects
	conns, err := env.dial(1)
	if err != nil {
		return err
	}
	defer closeAll(conns)
	if err := createNamespaces(ctx, conns[0], httpListNamespace); err != nil {
		return err
	}
	pods := corev1.NewPodsClient(conns[0])
	if err := inParallel(ctx, 16, n, func(ctx context.Context, i int) error {
		_, err := pods.Create(ctx, benchPod(httpListNamespace, i, map[string]string{"app": "http-list"}))
		return err
	}); err != nil {
		return fmt.Errorf("creating %d pods in %s: %w", n, httpListNamespace, err)
	}
	kube, err := newKubeClient(env)
	if err != nil {
		return err
	}
	defer kube.close()
	// The first List, raw, opens the connection and gives the size of
	// what each List carries.
	raw, err := kube.CoreV1().RESTClient().Get().Namespace(httpListNamespace).Resource("pods").DoRaw(ctx)
	if err != nil {
		return fmt.Errorf("listing pods over HTTP: %w", err)
	}
	res, err := listPods(ctx, cfg, kube, n)
	if err != nil {
		return fmt.Errorf("listing pods over HTTP: %w", err)
	}
	floor, err := listFloor(ctx, cfg, raw, n)
	if err != nil {
		return fmt.Errorf("the floor of the Lists: %w", err)
	}
	// Unbound pods left behind would be the next scenarios' too: the
	// scheduler scenario's scheduler would bind them among its own. Not
	// bound, they go at once.
	if err := inParallel(ctx, 16, n, func(ctx context.Context, i int) error {
		_, err := pods.Delete(ctx, &metav1.DeleteRequest{Namespace: httpListNamespace, Name: benchPod(httpListNamespace, i, nil).GetMetadata().GetName()})
		return err
	}); err != nil {
		return fmt.Errorf("deleting the pods of %s: %w", httpListNamespace, err)
	}
	rs.Add(figHTTPList1000, ms(res.latency.Percentile(99)), fmt.Sprintf("%d pods (%d KiB of JSON a list), consistent lists; %s; %s",
		n, len(raw)/1024, kube.wire(), latencyNote(&res.latency, "calls")))
	rs.Add(figHTTPListCPU, res.cpuPerOp()/float64(n), "process CPU (apiserver + client-go's decoding) / listed pods")
	rs.Add(figHTTPListFloor, ms(floor.latency.Percentile(99)), fmt.Sprintf("the same Lists against Go's HTTP/2 server answering each with the apiserver's first answer and doing nothing else, right after: client-go's decoding and the protocol; %s; %.0f us CPU a pod",
		latencyNote(&floor.latency, "calls"), floor.cpuPerOp()/float64(n)))
	return nil
}

// listPods times client-go Lists of the n pods of httpListNamespace
// through kube: one client, at least ListMinCalls of them.
func listPods(ctx context.Context, cfg Config, kube *kubeClient, n int) (*loadResult, error) {
	list := kube.CoreV1().Pods(httpListNamespace)
	return load{
		clients:  1,
		warmup:   cfg.Warmup,
		duration: cfg.Duration,
		minOps:   int64(cfg.ListMinCalls),
		op: func(ctx context.Context, _, _ int) error {
			l, err := list.List(ctx, kmetav1.ListOptions{})
			if err != nil {
				return err
			}
			if got := len(l.Items); got != n {
				return fmt.Errorf("list of %s returned %d pods, want %d", httpListNamespace, got, n)
			}
			return nil
		},
	}.run(ctx)
}

// listFloor is listPods against an HTTP/2 server answering answer, the
// apiserver's List of the n pods.
func listFloor(ctx context.Context, cfg Config, answer []byte, n int) (*loadResult, error) {
	cert, err := selfSigned()
	if err != nil {
		return nil, err
	}
	addr, stop, err := httpEchoServer(cert, fixedAnswer(answer))
	if err != nil {
		return nil, err
	}
	defer stop()
	kube, err := kubeClientFor(&rest.Config{Host: "https://" + addr, TLSClientConfig: rest.TLSClientConfig{CAData: caPEM(cert)}})
	if err != nil {
		return nil, err
	}
	defer kube.close()
	return listPods(ctx, cfg, kube, n)
}

// createNamespaces creates the namespaces a scenario writes in, if they
// are missing (with NamespaceLifecycle admission they must exist).
func createNamespaces(ctx context.Context, conn grpc.ClientConnInterface, names ...string) error {
	for _, name := range names {
		_, err := client.Namespaces(conn).Create(ctx, &corev1.Namespace{Metadata: &metav1.ObjectMeta{Name: name}})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating namespace %s: %w", name, err)
		}
	}
	return nil
}
