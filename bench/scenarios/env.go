package scenarios

import (
	"crypto/tls"
	"fmt"
	"io"
	"runtime"
	"syscall"
	"time"

	"google.golang.org/grpc"

	"skiff.dev/internal/client"
)

// Config sizes the scenarios. DefaultConfig is what the issues' targets are
// stated for; the tests shrink it.
type Config struct {
	// Warmup runs the load before each measured window; Duration is the window.
	Warmup   time.Duration
	Duration time.Duration
	// Rounds splits the write scenario's Duration into alternating rounds
	// of etcd puts and API creates.
	Rounds int
	// Clients is the number of concurrent writers of etcd.put and api.create.
	Clients int
	// Conns is the number of gRPC connections api.create spreads them
	// over: by default one, as etcd.put's one clientv3 client has (the
	// ratio compares like with like) and as one client process has (the
	// ReplicaSet controller's creations, client-go's HTTP/2 connection).
	Conns int
	// GetObjects is how many ConfigMaps api.get reads from.
	GetObjects int
	// ListObjects is how many ConfigMaps api.list_1000 lists; ListMinCalls
	// is the least number of Lists measured, however long they take.
	ListObjects  int
	ListMinCalls int
	// Watchers watch over WatchConns connections while WatchWriters write
	// WatchRate ConfigMaps per second for WatchDuration.
	Watchers      int
	WatchConns    int
	WatchWriters  int
	WatchRate     int
	WatchDuration time.Duration
	// WatchDrain bounds the wait for the last events after the last write.
	WatchDrain time.Duration
	// RSReplicas is the scale the ReplicaSet controller is asked for;
	// RSTimeout bounds the wait for the pods to be created and ready.
	RSReplicas int
	RSTimeout  time.Duration
	// SchedNodes nodes; SchedPods pods created by SchedClients clients
	// for the scheduler; SchedTimeout bounds the wait for the binds.
	SchedNodes   int
	SchedPods    int
	SchedClients int
	SchedTimeout time.Duration
	// NodePods pods are started at once on one node with a real
	// containerd; NodeTimeout bounds the wait for them to run.
	NodePods    int
	NodeTimeout time.Duration
	// MemoryObjects 1 KiB ConfigMaps are created on the memory scenario's
	// own apiserver, then listed MemoryLists times, MemoryListLimit at a
	// time (following continue, from the start again at the end).
	MemoryObjects   int
	MemoryLists     int
	MemoryListLimit int
	// MemoryLimit, when set, is that apiserver's --memory-limit.
	MemoryLimit string
	// LeaderLeaseDuration is the leader scenario's
	// --leader-elect-lease-duration (the renew deadline and retry period
	// follow in Kubernetes' ratios, 10/15 and 2/15 of it).
	LeaderLeaseDuration time.Duration
	// The services.programming scenario: SvcProgServices Services of
	// SvcProgEndpoints pods each on SvcProgNodes simulated nodes (one
	// service proxy each); SvcProgSamples pods made Ready again.
	SvcProgServices, SvcProgEndpoints, SvcProgNodes, SvcProgSamples int
}

// DefaultConfig is the configuration of `make bench`.
func DefaultConfig() Config {
	return Config{
		Warmup:        time.Second,
		Duration:      10 * time.Second,
		Rounds:        5,
		Clients:       64,
		Conns:         1,
		GetObjects:    100,
		ListObjects:   1000,
		ListMinCalls:  50,
		Watchers:      1000,
		WatchConns:    16,
		WatchWriters:  64,
		WatchRate:     1000,
		WatchDuration: 10 * time.Second,
		WatchDrain:    30 * time.Second,
		RSReplicas:    10000,
		RSTimeout:     5 * time.Minute,
		SchedNodes:    1000,
		SchedPods:     5000,
		SchedClients:  32,
		SchedTimeout:  5 * time.Minute,
		NodePods:      30,
		NodeTimeout:   2 * time.Minute,
		// The case: 65,000 ConfigMaps (an etcd database of some
		// 80 MB), 50 lists of 10,000.
		MemoryObjects:   65000,
		MemoryLists:     50,
		MemoryListLimit: 10000,
		// Kubernetes' default, as skiff-controller-manager's.
		LeaderLeaseDuration: 15 * time.Second,
		// The case: 1,000 Services x 10 endpoints.
		SvcProgServices: 1000, SvcProgEndpoints: 10, SvcProgNodes: 10, SvcProgSamples: 200,
	}
}

// Env is where the scenarios run: one apiserver and the etcd under it.
type Env struct {
	// Addr is the apiserver's gRPC address.
	Addr string
	// Client, when set, is how the scenarios' connections reach the
	// apiserver (TLS, client certificate, token); its Server is replaced
	// by Addr. nil: plain text (an apiserver with security off).
	Client *client.Config
	// EtcdEndpoint is the client URL of the etcd the apiserver stores in,
	// EtcdTLS the TLS it requires (an embedded etcd: the client
	// certificate its apiserver holds; etcdTLSIn).
	EtcdEndpoint string
	EtcdTLS      *tls.Config
	Config       Config
	// Progress receives one line per step; nil discards them.
	Progress io.Writer
	// ServingCert, with a secure apiserver, issues a serving certificate
	// of the cluster CA for a host (a node agent's NodeAgent service,
	// which the apiserver reaches over TLS); nil: plain text.
	ServingCert func(host string) (tls.Certificate, error)
}

func (e *Env) logf(format string, args ...any) {
	if e.Progress != nil {
		fmt.Fprintf(e.Progress, "skiff-bench: "+format+"\n", args...)
	}
}

// dial opens n gRPC connections to the apiserver. Close them with closeAll.
func (e *Env) dial(n int) ([]*grpc.ClientConn, error) {
	conns := make([]*grpc.ClientConn, 0, n)
	for range n {
		cfg := client.Config{Insecure: true}
		if e.Client != nil {
			cfg = *e.Client
		}
		cfg.Server = e.Addr
		c, err := client.Dial(cfg)
		if err != nil {
			closeAll(conns)
			return nil, fmt.Errorf("dialing apiserver %s: %w", e.Addr, err)
		}
		conns = append(conns, c)
	}
	return conns, nil
}

func closeAll(conns []*grpc.ClientConn) {
	for _, c := range conns {
		c.Close()
	}
}

// settle collects the garbage earlier phases left before a phase is
// measured, as Go's testing.B does before each benchmark. Everything runs
// in this one process, so without it a collection triggered by one
// phase's garbage (the etcd puts', say) is done, and charged, in
// whichever phase comes next (the API creates'), and a ratio of two
// phases measures where the collector happened to run. Collections a
// phase's own garbage triggers still count in it.
func settle() { runtime.GC() }

// cpuTime is the CPU (user + system) this process has used: the apiserver,
// its embedded etcd and the benchmark's own clients, which share it.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
