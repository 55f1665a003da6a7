package cri

import (
	"context"
	"fmt"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// DefaultEndpoint is containerd's CRI socket.
const DefaultEndpoint = "unix:///run/containerd/containerd.sock"

// DefaultTimeout bounds each call but image pulls (Kubernetes'
// --runtime-request-timeout).
const DefaultTimeout = 2 * time.Minute

// maxMsgSize is the kubelet's limit for CRI messages (16 MiB).
const maxMsgSize = 16 << 20

// Dial connects to a runtime endpoint: "unix:///path", "unix:/path", a
// bare "/path" to a socket, or "host:port". The connection is made lazily.
func Dial(endpoint string, opts ...grpc.DialOption) (*grpc.ClientConn, error) {
	target := endpoint
	switch {
	case strings.HasPrefix(endpoint, "/"):
		target = "unix://" + endpoint
	case strings.HasPrefix(endpoint, "tcp://"):
		target = strings.TrimPrefix(endpoint, "tcp://")
	}
	opts = append([]grpc.DialOption{
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(maxMsgSize), grpc.MaxCallSendMsgSize(maxMsgSize)),
	}, opts...)
	conn, err := grpc.NewClient(target, opts...)
	if err != nil {
		return nil, fmt.Errorf("container runtime endpoint %q: %w", endpoint, err)
	}
	return conn, nil
}

// Options configure a Client.
type Options struct {
	Metrics *Metrics      // nil: not measured
	Timeout time.Duration // per call, but pulls (default DefaultTimeout)
}

// Client calls a runtime's RuntimeService and ImageService.
type Client struct {
	rt      runtimeapi.RuntimeServiceClient
	img     runtimeapi.ImageServiceClient
	m       *Metrics
	timeout time.Duration
}

// New returns a client over conn.
func New(conn grpc.ClientConnInterface, o Options) *Client {
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	return &Client{
		rt: runtimeapi.NewRuntimeServiceClient(conn), img: runtimeapi.NewImageServiceClient(conn),
		m: o.Metrics, timeout: o.Timeout,
	}
}

// IsNotFound reports whether err is the runtime's NotFound.
func IsNotFound(err error) bool { return status.Code(err) == codes.NotFound }

// Message is the runtime's own words for err, without gRPC's "rpc error:
// code = ... desc =" wrapping.
func Message(err error) string {
	if s, ok := status.FromError(err); ok {
		return s.Message()
	}
	return err.Error()
}

// call runs fn with the timeout (extra added to it; none when extra < 0)
// and records its duration and outcome under op.
func call[T any](ctx context.Context, c *Client, op string, extra time.Duration, fn func(ctx context.Context) (T, error)) (T, error) {
	if extra >= 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.timeout+extra)
		defer cancel()
	}
	start := time.Now()
	out, err := fn(ctx)
	c.m.observe(op, time.Since(start).Seconds(), err)
	return out, err
}

// Version returns the runtime's name and version.
func (c *Client) Version(ctx context.Context) (*runtimeapi.VersionResponse, error) {
	return call(ctx, c, "version", 0, func(ctx context.Context) (*runtimeapi.VersionResponse, error) {
		return c.rt.Version(ctx, &runtimeapi.VersionRequest{Version: "v1"})
	})
}

// Status returns the runtime's conditions (RuntimeReady, NetworkReady).
func (c *Client) Status(ctx context.Context) (*runtimeapi.RuntimeStatus, error) {
	return call(ctx, c, "status", 0, func(ctx context.Context) (*runtimeapi.RuntimeStatus, error) {
		r, err := c.rt.Status(ctx, &runtimeapi.StatusRequest{})
		return r.GetStatus(), err
	})
}

// RunPodSandbox creates and starts a sandbox and returns its id.
func (c *Client) RunPodSandbox(ctx context.Context, cfg *runtimeapi.PodSandboxConfig, handler string) (string, error) {
	return call(ctx, c, "run_podsandbox", 0, func(ctx context.Context) (string, error) {
		r, err := c.rt.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: cfg, RuntimeHandler: handler})
		return r.GetPodSandboxId(), err
	})
}

// StopPodSandbox stops a sandbox and its containers.
func (c *Client) StopPodSandbox(ctx context.Context, id string) error {
	_, err := call(ctx, c, "stop_podsandbox", 0, func(ctx context.Context) (*runtimeapi.StopPodSandboxResponse, error) {
		return c.rt.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: id})
	})
	return err
}

// RemovePodSandbox removes a stopped sandbox and its containers.
func (c *Client) RemovePodSandbox(ctx context.Context, id string) error {
	_, err := call(ctx, c, "remove_podsandbox", 0, func(ctx context.Context) (*runtimeapi.RemovePodSandboxResponse, error) {
		return c.rt.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: id})
	})
	return err
}

// PodSandboxStatus returns a sandbox's status (its IP).
func (c *Client) PodSandboxStatus(ctx context.Context, id string) (*runtimeapi.PodSandboxStatus, error) {
	return call(ctx, c, "podsandbox_status", 0, func(ctx context.Context) (*runtimeapi.PodSandboxStatus, error) {
		r, err := c.rt.PodSandboxStatus(ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: id})
		return r.GetStatus(), err
	})
}

// ListPodSandbox lists the sandboxes that match filter (nil: all).
func (c *Client) ListPodSandbox(ctx context.Context, filter *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error) {
	return call(ctx, c, "list_podsandbox", 0, func(ctx context.Context) ([]*runtimeapi.PodSandbox, error) {
		r, err := c.rt.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{Filter: filter})
		return r.GetItems(), err
	})
}

// CreateContainer creates a container in a sandbox and returns its id.
func (c *Client) CreateContainer(ctx context.Context, sandboxID string, cfg *runtimeapi.ContainerConfig, sandboxCfg *runtimeapi.PodSandboxConfig) (string, error) {
	return call(ctx, c, "create_container", 0, func(ctx context.Context) (string, error) {
		r, err := c.rt.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: sandboxID, Config: cfg, SandboxConfig: sandboxCfg})
		return r.GetContainerId(), err
	})
}

// StartContainer starts a created container.
func (c *Client) StartContainer(ctx context.Context, id string) error {
	_, err := call(ctx, c, "start_container", 0, func(ctx context.Context) (*runtimeapi.StartContainerResponse, error) {
		return c.rt.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: id})
	})
	return err
}

// StopContainer stops a container: its stop signal, then a kill after
// timeout seconds.
func (c *Client) StopContainer(ctx context.Context, id string, timeout int64) error {
	_, err := call(ctx, c, "stop_container", time.Duration(timeout)*time.Second, func(ctx context.Context) (*runtimeapi.StopContainerResponse, error) {
		return c.rt.StopContainer(ctx, &runtimeapi.StopContainerRequest{ContainerId: id, Timeout: timeout})
	})
	return err
}

// RemoveContainer removes a container.
func (c *Client) RemoveContainer(ctx context.Context, id string) error {
	_, err := call(ctx, c, "remove_container", 0, func(ctx context.Context) (*runtimeapi.RemoveContainerResponse, error) {
		return c.rt.RemoveContainer(ctx, &runtimeapi.RemoveContainerRequest{ContainerId: id})
	})
	return err
}

// ListContainers lists the containers that match filter (nil: all).
func (c *Client) ListContainers(ctx context.Context, filter *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error) {
	return call(ctx, c, "list_containers", 0, func(ctx context.Context) ([]*runtimeapi.Container, error) {
		r, err := c.rt.ListContainers(ctx, &runtimeapi.ListContainersRequest{Filter: filter})
		return r.GetContainers(), err
	})
}

// ContainerStatus returns a container's status.
func (c *Client) ContainerStatus(ctx context.Context, id string) (*runtimeapi.ContainerStatus, error) {
	return call(ctx, c, "container_status", 0, func(ctx context.Context) (*runtimeapi.ContainerStatus, error) {
		r, err := c.rt.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: id})
		return r.GetStatus(), err
	})
}

// ListContainerStats returns the stats (CPU, memory) of the containers
// that match filter (nil: all); containerd gives an exited container's
// without CPU and memory.
func (c *Client) ListContainerStats(ctx context.Context, filter *runtimeapi.ContainerStatsFilter) ([]*runtimeapi.ContainerStats, error) {
	return call(ctx, c, "list_container_stats", 0, func(ctx context.Context) ([]*runtimeapi.ContainerStats, error) {
		r, err := c.rt.ListContainerStats(ctx, &runtimeapi.ListContainerStatsRequest{Filter: filter})
		return r.GetStats(), err
	})
}

// ListPodSandboxStats returns the stats of the (ready) sandboxes that
// match filter (nil: all): their pod cgroup's CPU and memory.
func (c *Client) ListPodSandboxStats(ctx context.Context, filter *runtimeapi.PodSandboxStatsFilter) ([]*runtimeapi.PodSandboxStats, error) {
	return call(ctx, c, "list_podsandbox_stats", 0, func(ctx context.Context) ([]*runtimeapi.PodSandboxStats, error) {
		r, err := c.rt.ListPodSandboxStats(ctx, &runtimeapi.ListPodSandboxStatsRequest{Filter: filter})
		return r.GetStats(), err
	})
}

// ExecSync runs cmd in a container and waits for it (at most timeout).
func (c *Client) ExecSync(ctx context.Context, id string, cmd []string, timeout time.Duration) (*runtimeapi.ExecSyncResponse, error) {
	return call(ctx, c, "exec_sync", timeout, func(ctx context.Context) (*runtimeapi.ExecSyncResponse, error) {
		return c.rt.ExecSync(ctx, &runtimeapi.ExecSyncRequest{ContainerId: id, Cmd: cmd, Timeout: int64(timeout / time.Second)})
	})
}

// ImageStatus returns the image ref names, or nil when it is not present.
func (c *Client) ImageStatus(ctx context.Context, ref string) (*runtimeapi.Image, error) {
	return call(ctx, c, "image_status", 0, func(ctx context.Context) (*runtimeapi.Image, error) {
		r, err := c.img.ImageStatus(ctx, &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: ref}})
		return r.GetImage(), err
	})
}

// PullImage pulls an image (no timeout but ctx's) and returns its ref.
func (c *Client) PullImage(ctx context.Context, ref string, sandboxCfg *runtimeapi.PodSandboxConfig) (string, error) {
	return call(ctx, c, "pull_image", -1, func(ctx context.Context) (string, error) {
		r, err := c.img.PullImage(ctx, &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: ref}, SandboxConfig: sandboxCfg})
		return r.GetImageRef(), err
	})
}

// PullImageWithAuth pulls an image with registry credentials (from the
// pod's imagePullSecrets).
func (c *Client) PullImageWithAuth(ctx context.Context, ref string, auth *runtimeapi.AuthConfig, sandboxCfg *runtimeapi.PodSandboxConfig) (string, error) {
	return call(ctx, c, "pull_image", -1, func(ctx context.Context) (string, error) {
		r, err := c.img.PullImage(ctx, &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: ref}, Auth: auth, SandboxConfig: sandboxCfg})
		return r.GetImageRef(), err
	})
}

// ListImages lists the images present.
func (c *Client) ListImages(ctx context.Context) ([]*runtimeapi.Image, error) {
	return call(ctx, c, "list_images", 0, func(ctx context.Context) ([]*runtimeapi.Image, error) {
		r, err := c.img.ListImages(ctx, &runtimeapi.ListImagesRequest{})
		return r.GetImages(), err
	})
}

// RemoveImage removes an image.
func (c *Client) RemoveImage(ctx context.Context, ref string) error {
	_, err := call(ctx, c, "remove_image", 0, func(ctx context.Context) (*runtimeapi.RemoveImageResponse, error) {
		return c.img.RemoveImage(ctx, &runtimeapi.RemoveImageRequest{Image: &runtimeapi.ImageSpec{Image: ref}})
	})
	return err
}
