// Command skiff-flooder is the flooding user of skiff-bench's
// fairness.flood scenario, as a process of its own: a client on another
// machine does not take the apiserver's CPU to read its answers, and one
// on this machine takes it through the kernel's scheduler, not through
// the apiserver's Go scheduler. (It still shares this machine's CPUs.)
//
// It connects as the user of its client certificate and waits for lines
// on its standard input: "start" launches -callers goroutines, each
// Listing -limit ConfigMaps of -namespace back to back (reading each
// answer's bytes without decoding them); "stop" ends them and prints one
// line on its standard output:
//
//	stopped served=<Lists answered> refused=<refusals> cpu_ns=<process CPU so far>
//
// A refusal (ResourceExhausted) is followed by the client's wait of the
// retry hint, as Skiff's components do. Any other error ends the process
// with it on its standard error. End of input ends it.
//
// With -spin-cores, it calls nobody: "start" keeps that many CPUs busy
// (spinning goroutines, each busy for its share of every 10 ms), the
// load of the benchmark's CPU floor: what another process's CPU use alone
// does to the victim's latency, with no request to the apiserver.
//
// With -stream-bytes-per-s, it calls nobody either: "start" sends that
// many bytes a second over -conns TLS connections on the loopback
// interface to itself, in messages of -stream-message bytes (as large as
// a List's answer), and reads them back: the load of the benchmark's
// traffic floor, the flood's bytes through the kernel's TCP and its
// encryption, on the same CPUs, with no apiserver in the way. Its stop
// line counts the messages read as served.
//
// With -victim-namespace, it is the user whose latency the benchmark
// measures: "start" Lists that namespace one at a time, at most one per
// -victim-interval, each answer to hold -victim-items items; its stop
// line adds each List's start and duration (victim.report).
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"skiff.dev/internal/apierrors"
	"skiff.dev/internal/client"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "skiff-flooder:", err)
		os.Exit(1)
	}
}

func run() error {
	var (
		cfg       client.Config
		callers   = flag.Int("callers", 128, "goroutines listing back to back")
		conns     = flag.Int("conns", 4, "gRPC connections the goroutines share")
		namespace = flag.String("namespace", "", "namespace of the ConfigMaps listed")
		limit     = flag.Int64("limit", 500, "limit of each List")
		spin      = flag.Float64("spin-cores", 0, "call nobody: keep this many CPUs busy")
		stream    = flag.Float64("stream-bytes-per-s", 0, "call nobody: send this many bytes a second to itself over -conns TLS connections (its certificate: -tls-cert-file)")
		message   = flag.Int("stream-message", 512<<10, "bytes of each message -stream-bytes-per-s sends")
		victimNS  = flag.String("victim-namespace", "", "be the victim: List this namespace one at a time")
		items     = flag.Int("victim-items", 0, "items each of the victim's Lists must hold")
		interval  = flag.Duration("victim-interval", 2*time.Millisecond, "the victim starts a List at most this often")
	)
	cfg.AddFlags(flag.CommandLine, "")
	flag.Parse()
	if *spin > 0 {
		return serve(&spinner{cores: *spin})
	}
	if *stream > 0 {
		st, err := newStreamer(cfg, *conns, *stream, *message)
		if err != nil {
			return err
		}
		defer st.close()
		return serve(st)
	}
	if *victimNS != "" {
		c, err := client.Dial(cfg)
		if err != nil {
			return err
		}
		defer c.Close()
		return serve(newVictim(c, *victimNS, *items, *interval))
	}
	if *callers <= 0 || *conns <= 0 || *limit <= 0 || *namespace == "" {
		return fmt.Errorf("-callers %d, -conns %d, -limit %d, -namespace %q: each must be given and positive", *callers, *conns, *limit, *namespace)
	}
	f := &flooder{callers: *callers, req: &metav1.ListOptions{Namespace: *namespace, Limit: *limit}}
	count := grpc.WithChainUnaryInterceptor(func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		err := invoker(ctx, method, req, reply, cc, opts...)
		if status.Code(err) == codes.ResourceExhausted {
			f.refused.Add(1)
		}
		return err
	})
	for range *conns {
		c, err := client.Dial(cfg, append(client.RetryThrottled(), count)...)
		if err != nil {
			return err
		}
		defer c.Close()
		f.conns = append(f.conns, c)
	}

	return serve(f)
}

// load is what start and stop command.
type load interface {
	start()
	stop() error
	counts() (served, refused int64)
}

func serve(l load) error {
	in := bufio.NewScanner(os.Stdin)
	running := false
	for in.Scan() {
		switch in.Text() {
		case "start":
			if !running {
				l.start()
				running = true
			}
		case "stop":
			if !running {
				return errors.New("stop without start")
			}
			running = false
			if err := l.stop(); err != nil {
				return err
			}
			served, refused := l.counts()
			line := fmt.Sprintf("stopped served=%d refused=%d cpu_ns=%d", served, refused, cpuTime())
			if r, ok := l.(interface{ report() string }); ok {
				line += " " + r.report()
			}
			fmt.Println(line)
		default:
			return fmt.Errorf("unknown command %q (start, stop)", in.Text())
		}
	}
	if running {
		return l.stop()
	}
	return in.Err()
}

type flooder struct {
	conns   []*grpc.ClientConn
	callers int
	req     *metav1.ListOptions
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	served  atomic.Int64
	refused atomic.Int64
	errOnce sync.Once
	err     error
}

func (f *flooder) counts() (int64, int64) { return f.served.Load(), f.refused.Load() }

func (f *flooder) start() {
	var ctx context.Context
	ctx, f.cancel = context.WithCancel(context.Background())
	for g := range f.callers {
		conn := f.conns[g%len(f.conns)]
		f.wg.Add(1)
		go func() {
			defer f.wg.Done()
			var raw []byte // the answer's bytes, reused
			for ctx.Err() == nil {
				err := conn.Invoke(ctx, corev1.ConfigMaps_List_FullMethodName, f.req, &raw, client.RawWatch())
				switch {
				case err == nil:
					f.served.Add(1)
				case ctx.Err() != nil:
				case apierrors.IsTooManyRequests(err):
					// Refused after the client's retries: go on flooding.
				default:
					f.errOnce.Do(func() { f.err = err })
					return
				}
			}
		}()
	}
}

func (f *flooder) stop() error {
	f.cancel()
	f.wg.Wait()
	return f.err
}

// spinner keeps cores CPUs busy: ceil(cores) goroutines, each spinning
// for its share of every period and sleeping the rest.
type spinner struct {
	cores float64
	stopc chan struct{}
	wg    sync.WaitGroup
}

const spinPeriod = 10 * time.Millisecond

func (s *spinner) counts() (int64, int64) { return 0, 0 }

func (s *spinner) start() {
	s.stopc = make(chan struct{})
	n := int(math.Ceil(s.cores))
	busy := time.Duration(float64(spinPeriod) * s.cores / float64(n))
	for range n {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			for {
				select {
				case <-s.stopc:
					return
				default:
				}
				until := time.Now().Add(busy)
				for time.Now().Before(until) {
				}
				time.Sleep(spinPeriod - busy)
			}
		}()
	}
}

func (s *spinner) stop() error {
	close(s.stopc)
	s.wg.Wait()
	return nil
}

func cpuTime() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
