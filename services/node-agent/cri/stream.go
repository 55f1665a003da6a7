package cri

import (
	"context"
	"encoding/json"
	"fmt"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// The streaming calls: each returns the URL of the runtime's streaming
// server (containerd's CRI stream server) where the caller then speaks
// Kubernetes' remotecommand (exec, attach) or port-forward protocol.

// Exec prepares a streaming exec of req.Cmd in req.ContainerId.
func (c *Client) Exec(ctx context.Context, req *runtimeapi.ExecRequest) (string, error) {
	return call(ctx, c, "exec", 0, func(ctx context.Context) (string, error) {
		r, err := c.rt.Exec(ctx, req)
		return r.GetUrl(), err
	})
}

// Attach prepares a streaming attach to req.ContainerId's main process.
func (c *Client) Attach(ctx context.Context, req *runtimeapi.AttachRequest) (string, error) {
	return call(ctx, c, "attach", 0, func(ctx context.Context) (string, error) {
		r, err := c.rt.Attach(ctx, req)
		return r.GetUrl(), err
	})
}

// PortForward prepares a streaming port-forward into a sandbox's network
// namespace.
func (c *Client) PortForward(ctx context.Context, req *runtimeapi.PortForwardRequest) (string, error) {
	return call(ctx, c, "port_forward", 0, func(ctx context.Context) (string, error) {
		r, err := c.rt.PortForward(ctx, req)
		return r.GetUrl(), err
	})
}

// ContainerPID is the host pid of a running container's main process,
// from the runtime's verbose status (containerd's info.pid); 0 when the
// runtime does not say.
func (c *Client) ContainerPID(ctx context.Context, id string) (int, error) {
	r, err := call(ctx, c, "container_status", 0, func(ctx context.Context) (*runtimeapi.ContainerStatusResponse, error) {
		return c.rt.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: id, Verbose: true})
	})
	if err != nil {
		return 0, err
	}
	var info struct {
		Pid int `json:"pid"`
	}
	if s, ok := r.GetInfo()["info"]; ok {
		if err := json.Unmarshal([]byte(s), &info); err != nil {
			return 0, fmt.Errorf("container %s: verbose info: %w", id, err)
		}
	}
	return info.Pid, nil
}
