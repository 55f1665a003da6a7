package crienv

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"skiff.dev/services/node-agent/imagebuild"
)

// Env is a running private containerd with its CRI plugin, bridge CNI and
// the project's images imported. Its exported fields are read-only.
type Env struct {
	// Dir holds everything of the Env: config, root, state, sockets,
	// network namespaces, IP allocations, logs. It is a tmpfs mounted on
	// /tmp/skiff-crienv-XXXX (unless OnDisk). Close removes it.
	Dir string
	// Socket is containerd's gRPC socket path; Endpoint is the same as a
	// CRI endpoint ("unix:///tmp/skiff-crienv-.../containerd.sock").
	Socket   string
	Endpoint string
	// PauseImage is the sandbox image (skiff.local/pause:3.9).
	PauseImage string
	// Subnet is the pods' subnet (10.88.<n>.0/24); Gateway, its first
	// address, is the host's address on Bridge.
	Subnet  netip.Prefix
	Gateway netip.Addr
	Bridge  string
	// Network is the CNI network name (skiff-crienv-<n>).
	Network string
	// Snapshotter is "overlayfs", or "native" where overlay mounts fail.
	Snapshotter string
	// LogPath is containerd's log (inside Dir: read it before Close).
	LogPath string
	// PodLogDir is a directory for pod sandboxes' log directories.
	PodLogDir string
	// RuntimeVersion is what CRI Version says, e.g. "containerd 1.6.20~ds1".
	RuntimeVersion string

	// Conn is the gRPC connection to Socket; Runtime and Images are the
	// CRI clients on it.
	Conn    *grpc.ClientConn
	Runtime runtimeapi.RuntimeServiceClient
	Images  runtimeapi.ImageServiceClient

	// Warnings are the problems Launch worked around (a previous Env's
	// leftovers cleaned, no FORWARD rule...).
	Warnings []string

	layout      layout
	slot        *slot
	proc        *process
	forwardRule bool
	closeOnce   sync.Once
	closeErr    error
}

// DemoImage is the demo image at version ("v1" and "v2" are imported).
func (e *Env) DemoImage(version string) string { return DemoRepository + ":" + version }

// ContainerdPID is the process id of the Env's containerd.
func (e *Env) ContainerdPID() int { return e.proc.pid() }

// LogTail returns the last n lines of containerd's log.
func (e *Env) LogTail(n int) string {
	b, err := os.ReadFile(e.LogPath)
	if err != nil {
		return fmt.Sprintf("(containerd log: %v)", err)
	}
	return tail(string(b), n)
}

// Option changes what Launch and Start do.
type Option func(*options)

type options struct {
	registry    string
	images      []imagebuild.Spec
	snapshotter string
	logLevel    string
	noInstall   bool
	onDisk      bool
}

// WithImages builds and imports more images besides pause and demo.
func WithImages(specs ...imagebuild.Spec) Option {
	return func(o *options) { o.images = append(o.images, specs...) }
}

// WithRegistry makes containerd pull skiff.local/... (and any other
// registry's images) from a plain-HTTP registry at hostport, e.g. a local
// docker-registry on "127.0.0.1:5000". Without it pulls go to NoRegistry
// and fail at once: PullImage of an image that was not imported gives
// ErrImagePull without any traffic leaving the machine.
func WithRegistry(hostport string) Option { return func(o *options) { o.registry = hostport } }

// WithSnapshotter forces containerd's snapshotter ("overlayfs", "native").
func WithSnapshotter(name string) Option { return func(o *options) { o.snapshotter = name } }

// WithLogLevel sets containerd's log level (default "info").
func WithLogLevel(level string) Option { return func(o *options) { o.logLevel = level } }

// OnDisk keeps the Env's directory on /tmp's filesystem instead of a tmpfs
// mounted on it. The tmpfs is the default: containerd's metadata (bolt)
// commits call fsync, and with 30 pods starting at once on a 2-core
// machine the bare CRI p50 measured about 20% lower on tmpfs.
func OnDisk() Option { return func(o *options) { o.onDisk = true } }

// WithoutInstall makes missing packages an ErrUnavailable instead of
// installing them with apt-get.
func WithoutInstall() Option { return func(o *options) { o.noInstall = true } }

// Start launches an Env for a test and closes it at the test's end,
// logging containerd's log if the test failed. When the machine cannot run
// it (ErrUnavailable) the test is skipped with the reason, or fails under
// CI=true, where these tests must run. In -short mode it skips, unless
// CI=true.
func Start(tb testing.TB, opts ...Option) *Env {
	tb.Helper()
	ci := os.Getenv("CI") == "true"
	if testing.Short() && !ci {
		tb.Skip("crienv: no real containerd in -short mode")
	}
	// Installing packages with apt-get can take a while the first time.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	env, err := Launch(ctx, "", opts...)
	if err != nil {
		if errors.Is(err, ErrUnavailable) && !ci {
			tb.Skip(err)
		}
		if errors.Is(err, ErrUnavailable) {
			tb.Fatalf("%v (CI=true: tests needing a real runtime must run)", err)
		}
		tb.Fatal(err)
	}
	for _, w := range env.Warnings {
		tb.Logf("crienv: %s", w)
	}
	tb.Cleanup(func() {
		if tb.Failed() {
			tb.Logf("crienv: containerd log %s (last 80 lines):\n%s", env.LogPath, env.LogTail(80))
		}
		if err := env.Close(); err != nil {
			tb.Errorf("crienv: %v", err)
		}
	})
	return env
}

// Launch starts an Env whose directory is created under parent ("" for
// /tmp; keep it short, the socket path must fit in 108 bytes). Close it
// when done. Errors wrapping ErrUnavailable mean the machine cannot run a
// private containerd (see CheckPrerequisites).
func Launch(ctx context.Context, parent string, opts ...Option) (*Env, error) {
	o := options{logLevel: "info", registry: NoRegistry}
	for _, opt := range opts {
		opt(&o)
	}
	if err := CheckPrerequisites(ctx, !o.noInstall); err != nil {
		return nil, err
	}
	if parent == "" {
		parent = "/tmp"
	}

	warnings := sweepStale()
	sl, err := acquireSlot()
	if err != nil {
		return nil, err
	}
	e := &Env{slot: sl, Bridge: sl.bridge(), Network: sl.network(), Subnet: sl.subnet(), Gateway: sl.gateway(), PauseImage: PauseImage, Warnings: warnings}
	if sl.stale != "" {
		e.Warnings = append(e.Warnings, cleanStale(sl)...)
	} else if w := removeNetwork(sl); w != nil {
		e.Warnings = append(e.Warnings, w.Error())
	}

	dir, err := os.MkdirTemp(parent, "skiff-crienv-")
	if err != nil {
		_ = sl.release()
		return nil, fmt.Errorf("crienv: %w", err)
	}
	e.layout = layout{dir: dir}
	e.Dir, e.Socket, e.LogPath, e.PodLogDir = dir, e.layout.socket(), e.layout.log(), e.layout.podLogs()
	e.Endpoint = "unix://" + e.Socket
	// Record the directory before anything is mounted or started in it,
	// so that a crash from here on is cleaned by the slot's next owner.
	if err := sl.record(dir); err != nil {
		e.Close()
		return nil, fmt.Errorf("crienv: slot %d: %w", sl.n, err)
	}
	if !o.onDisk {
		if err := mount("tmpfs", dir, "tmpfs", "mode=0755"); err != nil {
			e.Warnings = append(e.Warnings, fmt.Sprintf("no tmpfs on %s (%v): containerd's files stay on disk", dir, err))
		}
	}
	if err := e.launch(ctx, o); err != nil {
		logTail := e.LogTail(40)
		if cerr := e.Close(); cerr != nil {
			err = errors.Join(err, cerr)
		}
		return nil, fmt.Errorf("%w\ncontainerd log (last 40 lines):\n%s", err, logTail)
	}
	return e, nil
}

func (e *Env) launch(ctx context.Context, o options) error {
	if len(e.Socket) > 100 {
		return fmt.Errorf("crienv: socket path %s is too long for a unix socket (%d bytes): use a shorter parent directory", e.Socket, len(e.Socket))
	}
	// Build the images while containerd starts; an early failure cancels
	// the builds and waits for them.
	specs := append([]imagebuild.Spec{PauseSpec()}, o.images...)
	for _, v := range DemoVersions {
		specs = append(specs, DemoSpec(v))
	}
	type built struct {
		tars []string
		err  error
	}
	buildCtx, cancelBuilds := context.WithCancel(ctx)
	builds := make(chan built, 1)
	go func() {
		tars, err := buildAll(buildCtx, specs)
		builds <- built{tars, err}
	}()
	received := false
	defer func() {
		cancelBuilds()
		if !received {
			<-builds
		}
	}()

	if err := e.writeFiles(o); err != nil {
		return err
	}
	var err error
	if e.proc, err = startContainerd(e.layout); err != nil {
		return err
	}
	if e.Conn, err = dialCRI(e.Socket); err != nil {
		return fmt.Errorf("crienv: %w", err)
	}
	e.Runtime = runtimeapi.NewRuntimeServiceClient(e.Conn)
	e.Images = runtimeapi.NewImageServiceClient(e.Conn)
	readyCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	v, err := waitReady(readyCtx, e.Runtime, e.proc)
	cancel()
	if err != nil {
		return err
	}
	e.RuntimeVersion = v.GetRuntimeName() + " " + v.GetRuntimeVersion()

	b := <-builds
	received = true
	if b.err != nil {
		return b.err
	}
	refs := make([]string, len(specs))
	for i, s := range specs {
		refs[i] = s.Ref
	}
	if err := e.importAll(ctx, b.tars, refs); err != nil {
		return err
	}

	if w := e.addForwardRule(); w != "" {
		e.Warnings = append(e.Warnings, w)
	}
	return nil
}

// writeFiles lays out the Env's directory: containerd's config, the CNI
// conflist, the registry hosts, and the directories.
func (e *Env) writeFiles(o options) error {
	for _, d := range []string{e.layout.root(), e.layout.state(), e.layout.cniConf(), e.layout.cniIPAM(), e.layout.podLogs()} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	e.Snapshotter = o.snapshotter
	if e.Snapshotter == "" {
		e.Snapshotter = "overlayfs"
		if err := overlayWorks(e.Dir); err != nil {
			e.Snapshotter = "native"
			e.Warnings = append(e.Warnings, fmt.Sprintf("overlay mounts fail in %s (%v): using the native snapshotter", e.Dir, err))
		}
	}
	files := map[string]string{
		e.layout.config(): containerdConfig(containerdParams{layout: e.layout, sandboxImage: e.PauseImage, snapshotter: e.Snapshotter, logLevel: o.logLevel}),
	}
	conflist, err := cniConflist(cniParams{network: e.Network, bridge: e.Bridge, subnet: e.Subnet, ipamDir: e.layout.cniIPAM()})
	if err != nil {
		return err
	}
	files[filepath.Join(e.layout.cniConf(), "10-"+e.Network+".conflist")] = string(conflist)
	for name, content := range hostsFiles(o.registry) {
		files[filepath.Join(e.layout.certsD(), name)] = content
	}
	for path, content := range files {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// overlayWorks mounts a throwaway overlay in dir.
func overlayWorks(dir string) error {
	base, err := os.MkdirTemp(dir, ".overlay-check-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(base)
	var paths []string
	for _, d := range []string{"lower", "upper", "work", "merged"} {
		p := filepath.Join(base, d)
		if err := os.Mkdir(p, 0o755); err != nil {
			return err
		}
		paths = append(paths, p)
	}
	data := strings.Join([]string{"lowerdir=" + paths[0], "upperdir=" + paths[1], "workdir=" + paths[2]}, ",")
	if err := mount("overlay", paths[3], "overlay", data); err != nil {
		return err
	}
	return unmount(paths[3])
}
