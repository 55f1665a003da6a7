// Command demo is the test workload of Skiff's node agent: a small HTTP
// server whose behaviour is driven by flags and environment variables so
// that tests can exercise probes, restarts and logs on a real runtime. It is
// built static by imagebuild and imported as skiff.local/demo:v1 and :v2 (the
// version is baked in with -ldflags "-X main.version=v1").
//
// Server (the default):
//
//	GET /         "demo <version> on <hostname>\n"
//	GET /healthz  200, or 500 once /fail was called or the file -unhealthy-file
//	              (default /tmp/unhealthy) exists: drives liveness probes
//	GET /fail     makes /healthz answer 500 from now on
//	GET /ready    200 only once -ready-after has elapsed since start, else 503:
//	              drives readiness probes
//	GET /env      the environment, one KEY=value a line, sorted
//	GET /file?path=P  the contents of file P (volume tests), 404 if missing
//	GET /exit?code=N  answers, then exits with code N
//	GET /bytes?n=N  N zero bytes (throughput of port-forward)
//	GET /call     with -backend URL (the frontend mode): GETs URL and
//	              answers "frontend <version> on <hostname> -> <its answer>",
//	              or 502 with the error; 404 without -backend
//	GET /resolve?name=N  the addresses N resolves to, one a line, sorted
//	              (the pod's resolv.conf: cluster DNS), 404 when none
//	GET /grpc-health?service=S&status=NOT_SERVING  sets the gRPC health
//	              status of service S (with -grpc-listen): drives grpc probes
//
// Every request is logged to stdout as one line. Flags, each defaulting to
// the environment variable in brackets:
//
//	-listen       [PORT, as ":$PORT"] address to listen on, default ":8080"
//	-version      [VERSION] the version to report, default the built-in one
//	-ready-after  [READY_AFTER] delay before /ready answers 200 ("2s" or "2")
//	-exit-after   [EXIT_AFTER] exit on its own after this delay (0: never)
//	-exit-code    [EXIT_CODE] the code of that exit, default 0
//	-ignore-sigterm [IGNORE_SIGTERM=1] ignore SIGTERM (grace period tests)
//	-backend      [BACKEND] the URL /call gets (a Service's name: two tiers)
//	-shutdown-delay [SHUTDOWN_DELAY] on SIGTERM, keep serving this long
//	              (while the Service's endpoints drop the pod), then close
//	              the connections and exit 0
//	-grpc-listen  [GRPC_PORT, as ":$GRPC_PORT"] also serve the standard gRPC
//	              health service (grpc.health.v1.Health) there, in plain
//	              text, the overall service "" SERVING; none by default
//	-grpc-services [GRPC_SERVICES] more health services at start, comma
//	              separated, each NAME (SERVING) or NAME=STATUS
//
// SIGTERM and SIGINT make it exit 0. With a tool name as first argument it
// runs that tool instead of the server, which gives exec probes and init
// containers something to run in a FROM-scratch image:
//
//	true | false | exit N | sleep DUR | echo ARGS... | env | cat [FILE...] |
//	write FILE TEXT | touch FILE | rm FILE | test-file FILE | get URL |
//	tar cf - [-C DIR] PATH... | tar xf - [-C DIR] | ttysize | install SRC DST |
//	alloc SIZE
//
// and called by a tool's name (argv[0] "tar": a copy made by install, in
// an emptyDir on PATH) it is that tool.
//
// (cat without FILE copies stdin; ttysize prints the terminal's ROWSxCOLS
// and again on each SIGWINCH until stdin ends: exec and cp tests.)
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"google.golang.org/grpc/health"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func main() {
	// Called by a tool's name (a copy of /demo named tar, say), it is
	// that tool, as busybox is.
	if tool, ok := tools[filepath.Base(os.Args[0])]; ok {
		os.Exit(tool(os.Args[1:], os.Stdout, os.Stderr))
	}
	if len(os.Args) > 1 {
		if tool, ok := tools[os.Args[1]]; ok {
			os.Exit(tool(os.Args[2:], os.Stdout, os.Stderr))
		}
	}
	os.Exit(serve(os.Args[1:]))
}

func serve(args []string) int {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	listen := fs.String("listen", defaultListen(), "address to listen on [PORT]")
	ver := fs.String("version", envOr("VERSION", version), "version to report [VERSION]")
	readyAfter := fs.String("ready-after", envOr("READY_AFTER", "0"), "delay before /ready answers 200 [READY_AFTER]")
	exitAfter := fs.String("exit-after", envOr("EXIT_AFTER", "0"), "exit after this delay, 0 for never [EXIT_AFTER]")
	exitCode := fs.Int("exit-code", envInt("EXIT_CODE", 0), "code of the -exit-after exit [EXIT_CODE]")
	unhealthy := fs.String("unhealthy-file", "/tmp/unhealthy", "/healthz answers 500 while this file exists")
	ignoreTerm := fs.Bool("ignore-sigterm", os.Getenv("IGNORE_SIGTERM") == "1", "ignore SIGTERM [IGNORE_SIGTERM=1]")
	backend := fs.String("backend", os.Getenv("BACKEND"), "the URL /call gets [BACKEND]")
	shutdownDelay := fs.String("shutdown-delay", envOr("SHUTDOWN_DELAY", "0"), "on SIGTERM, keep serving this long, then exit [SHUTDOWN_DELAY]")
	grpcListen := fs.String("grpc-listen", defaultGRPCListen(), "also serve grpc.health.v1 at this address [GRPC_PORT]")
	grpcServices := fs.String("grpc-services", os.Getenv("GRPC_SERVICES"), "health services at start: NAME or NAME=STATUS, comma separated [GRPC_SERVICES]")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	ready, err := parseDelay(*readyAfter)
	if err != nil {
		fmt.Fprintln(os.Stderr, "demo: -ready-after:", err)
		return 2
	}
	drain, err := parseDelay(*shutdownDelay)
	if err != nil {
		fmt.Fprintln(os.Stderr, "demo: -shutdown-delay:", err)
		return 2
	}
	exitIn, err := parseDelay(*exitAfter)
	if err != nil {
		fmt.Fprintln(os.Stderr, "demo: -exit-after:", err)
		return 2
	}
	host, _ := os.Hostname()
	srv := &server{
		version:       *ver,
		hostname:      host,
		started:       time.Now(),
		readyAfter:    ready,
		unhealthyFile: *unhealthy,
		backend:       *backend,
		// A connection per call: each call is balanced by the Service
		// anew (a kept-alive connection stays on one endpoint).
		client: &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}},
		lookup: net.DefaultResolver.LookupHost,
		now:    time.Now,
		out:    os.Stdout,
		exit:   os.Exit,
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		return 1
	}
	fmt.Printf("demo %s on %s listening on %s\n", srv.version, host, ln.Addr())
	if *grpcListen != "" {
		if srv.health, err = newHealth(*grpcServices); err != nil {
			fmt.Fprintln(os.Stderr, "demo: -grpc-services:", err)
			return 2
		}
		gln, err := net.Listen("tcp", *grpcListen)
		if err != nil {
			fmt.Fprintln(os.Stderr, "demo:", err)
			return 1
		}
		fmt.Printf("demo %s on %s serving grpc.health.v1 on %s\n", srv.version, host, gln.Addr())
		serveGRPCHealth(gln, srv.health)
	}

	hs := &http.Server{Handler: srv.handler(), ReadHeaderTimeout: 10 * time.Second}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		for sig := range sigs {
			if sig == syscall.SIGTERM && *ignoreTerm {
				fmt.Println("demo: ignoring SIGTERM")
				continue
			}
			if drain > 0 {
				fmt.Printf("demo: %v, serving %v more, then exiting\n", sig, drain)
				time.Sleep(drain) // a real app's drain: its endpoints go meanwhile
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				_ = hs.Shutdown(ctx) // closes idle keep-alive connections
				cancel()
			}
			fmt.Printf("demo: %v, exiting\n", sig)
			os.Exit(0)
		}
	}()
	if exitIn > 0 {
		code := *exitCode
		time.AfterFunc(exitIn, func() {
			fmt.Printf("demo: exiting with code %d after %v\n", code, exitIn)
			os.Exit(code)
		})
	}
	if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		fmt.Fprintln(os.Stderr, "demo:", err)
		return 1
	}
	return 0
}

// server answers the demo endpoints; its clock, output and exit are
// injected for the unit tests.
type server struct {
	version       string
	hostname      string
	started       time.Time
	readyAfter    time.Duration
	unhealthyFile string
	backend       string // the URL /call gets
	client        *http.Client
	lookup        func(ctx context.Context, host string) ([]string, error)
	health        *health.Server // with -grpc-listen
	failed        atomic.Bool
	now           func() time.Time
	out           io.Writer
	exit          func(code int)
}

func (s *server) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/{$}", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "demo %s on %s\n", s.version, s.hostname)
	})
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		if s.failed.Load() {
			http.Error(w, "unhealthy: /fail was called", http.StatusInternalServerError)
			return
		}
		if _, err := os.Stat(s.unhealthyFile); err == nil {
			http.Error(w, "unhealthy: "+s.unhealthyFile+" exists", http.StatusInternalServerError)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("/fail", func(w http.ResponseWriter, r *http.Request) {
		s.failed.Store(true)
		fmt.Fprintln(w, "failing: /healthz answers 500 from now on")
	})
	mux.HandleFunc("/ready", func(w http.ResponseWriter, r *http.Request) {
		if left := s.readyAfter - s.now().Sub(s.started); left > 0 {
			http.Error(w, fmt.Sprintf("not ready for %v more", left.Round(time.Millisecond)), http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ready")
	})
	mux.HandleFunc("/call", s.call)
	mux.HandleFunc("/grpc-health", s.setGRPCHealth)
	mux.HandleFunc("/resolve", func(w http.ResponseWriter, r *http.Request) {
		addrs, err := s.lookup(r.Context(), r.URL.Query().Get("name"))
		if err != nil || len(addrs) == 0 {
			http.Error(w, fmt.Sprintf("resolving %q: %v", r.URL.Query().Get("name"), err), http.StatusNotFound)
			return
		}
		sort.Strings(addrs)
		fmt.Fprintln(w, strings.Join(addrs, "\n"))
	})
	mux.HandleFunc("/env", func(w http.ResponseWriter, r *http.Request) {
		env := os.Environ()
		sort.Strings(env)
		fmt.Fprintln(w, strings.Join(env, "\n"))
	})
	mux.HandleFunc("/bytes", serveBytes)
	mux.HandleFunc("/file", func(w http.ResponseWriter, r *http.Request) {
		b, err := os.ReadFile(r.URL.Query().Get("path"))
		if err != nil {
			http.Error(w, err.Error(), http.StatusNotFound)
			return
		}
		w.Write(b)
	})
	mux.HandleFunc("/exit", func(w http.ResponseWriter, r *http.Request) {
		code, err := strconv.Atoi(r.URL.Query().Get("code"))
		if err != nil {
			http.Error(w, "code: "+err.Error(), http.StatusBadRequest)
			return
		}
		fmt.Fprintf(w, "exiting with code %d\n", code)
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
		// Exit once the handler has returned and the answer is out.
		go func() {
			<-r.Context().Done()
			fmt.Fprintf(s.out, "demo: exiting with code %d (GET /exit)\n", code)
			s.exit(code)
		}()
	})
	return s.logged(mux)
}

// logged writes one line per request to s.out.
func (s *server) logged(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
		h.ServeHTTP(rec, r)
		fmt.Fprintf(s.out, "%s %s %s %s %d\n", s.now().UTC().Format(time.RFC3339Nano), r.RemoteAddr, r.Method, r.URL.RequestURI(), rec.status)
	})
}

type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (r *statusRecorder) WriteHeader(code int) {
	r.status = code
	r.ResponseWriter.WriteHeader(code)
}

func (r *statusRecorder) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// tools are the one-shot commands run when the first argument names one.
var tools = map[string]func(args []string, stdout, stderr io.Writer) int{
	"true":  func([]string, io.Writer, io.Writer) int { return 0 },
	"false": func([]string, io.Writer, io.Writer) int { return 1 },
	"exit": func(args []string, _, stderr io.Writer) int {
		if len(args) != 1 {
			fmt.Fprintln(stderr, "usage: exit CODE")
			return 2
		}
		code, err := strconv.Atoi(args[0])
		if err != nil {
			fmt.Fprintln(stderr, "exit:", err)
			return 2
		}
		return code
	},
	"sleep": func(args []string, _, stderr io.Writer) int {
		if len(args) != 1 {
			fmt.Fprintln(stderr, "usage: sleep DURATION")
			return 2
		}
		d, err := parseDelay(args[0])
		if err != nil {
			fmt.Fprintln(stderr, "sleep:", err)
			return 2
		}
		time.Sleep(d)
		return 0
	},
	"echo": func(args []string, stdout, _ io.Writer) int {
		fmt.Fprintln(stdout, strings.Join(args, " "))
		return 0
	},
	"env": func(_ []string, stdout, _ io.Writer) int {
		env := os.Environ()
		sort.Strings(env)
		for _, kv := range env {
			fmt.Fprintln(stdout, kv)
		}
		return 0
	},
	"cat": func(args []string, stdout, stderr io.Writer) int {
		if len(args) == 0 || (len(args) == 1 && args[0] == "-") {
			return catStdin(stdout)
		}
		for _, p := range args {
			b, err := os.ReadFile(p)
			if err != nil {
				fmt.Fprintln(stderr, "cat:", err)
				return 1
			}
			stdout.Write(b)
		}
		return 0
	},
	"write": func(args []string, _, stderr io.Writer) int {
		if len(args) < 1 {
			fmt.Fprintln(stderr, "usage: write FILE [TEXT...]")
			return 2
		}
		if err := os.WriteFile(args[0], []byte(strings.Join(args[1:], " ")+"\n"), 0o644); err != nil {
			fmt.Fprintln(stderr, "write:", err)
			return 1
		}
		return 0
	},
	"touch": func(args []string, _, stderr io.Writer) int {
		for _, p := range args {
			f, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY, 0o644)
			if err != nil {
				fmt.Fprintln(stderr, "touch:", err)
				return 1
			}
			f.Close()
		}
		return 0
	},
	"rm": func(args []string, _, stderr io.Writer) int {
		for _, p := range args {
			if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
				fmt.Fprintln(stderr, "rm:", err)
				return 1
			}
		}
		return 0
	},
	"test-file": func(args []string, _, stderr io.Writer) int {
		if len(args) != 1 {
			fmt.Fprintln(stderr, "usage: test-file FILE")
			return 2
		}
		if _, err := os.Stat(args[0]); err != nil {
			fmt.Fprintln(stderr, "test-file:", err)
			return 1
		}
		return 0
	},
	"install": installTool,
	"tar":     tarTool,
	"ttysize": ttySize,
	"alloc":   allocTool,
	"get": func(args []string, stdout, stderr io.Writer) int {
		if len(args) != 1 {
			fmt.Fprintln(stderr, "usage: get URL")
			return 2
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, args[0], nil)
		if err != nil {
			fmt.Fprintln(stderr, "get:", err)
			return 2
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			fmt.Fprintln(stderr, "get:", err)
			return 1
		}
		defer resp.Body.Close()
		io.Copy(stdout, resp.Body)
		if resp.StatusCode/100 != 2 {
			fmt.Fprintln(stderr, "get:", resp.Status)
			return 1
		}
		return 0
	},
}

func defaultListen() string {
	if p := os.Getenv("PORT"); p != "" {
		return ":" + p
	}
	return ":8080"
}

func defaultGRPCListen() string {
	if p := os.Getenv("GRPC_PORT"); p != "" {
		return ":" + p
	}
	return ""
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

func envInt(key string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(key)); err == nil {
		return n
	}
	return def
}

// parseDelay accepts a Go duration ("1.5s", "200ms") or a number of seconds.
func parseDelay(s string) (time.Duration, error) {
	if s == "" {
		return 0, nil
	}
	if secs, err := strconv.ParseFloat(s, 64); err == nil {
		return time.Duration(secs * float64(time.Second)), nil
	}
	return time.ParseDuration(s)
}

// call is the frontend mode: it asks the backend and shows its answer.
func (s *server) call(w http.ResponseWriter, r *http.Request) {
	if s.backend == "" {
		http.Error(w, "no -backend (BACKEND) to call", http.StatusNotFound)
		return
	}
	req, err := http.NewRequestWithContext(r.Context(), http.MethodGet, s.backend, nil)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	resp, err := s.client.Do(req)
	if err != nil {
		http.Error(w, fmt.Sprintf("frontend %s on %s -> %v", s.version, s.hostname, err), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil || resp.StatusCode != http.StatusOK {
		http.Error(w, fmt.Sprintf("frontend %s on %s -> %s: %s %v", s.version, s.hostname, s.backend, resp.Status, err), http.StatusBadGateway)
		return
	}
	fmt.Fprintf(w, "frontend %s on %s -> %s", s.version, s.hostname, body)
}
