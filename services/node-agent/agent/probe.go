package agent

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/node-agent/cri"
)

// probeKind is one of the three probes a container may have.
type probeKind int

const (
	liveness probeKind = iota
	readiness
	startup
)

func (k probeKind) String() string {
	return [...]string{"Liveness", "Readiness", "Startup"}[k]
}

func probeOf(c *corev1.Container, k probeKind) *corev1.Probe {
	switch k {
	case liveness:
		return c.GetLivenessProbe()
	case readiness:
		return c.GetReadinessProbe()
	}
	return c.GetStartupProbe()
}

// probeResult is a probe's verdict after its thresholds.
type probeResult int

const (
	resultUnknown probeResult = iota
	resultSuccess
	resultFailure
)

// probeCounter applies a probe's thresholds to its outcomes: the result
// turns to success after successThreshold successes in a row and to
// failure after failureThreshold failures in a row. It is pure.
type probeCounter struct {
	result              probeResult
	successes, failures int32
}

// observe records one outcome and reports whether the result changed.
func (c *probeCounter) observe(ok bool, successThreshold, failureThreshold int32) bool {
	successThreshold, failureThreshold = max(successThreshold, 1), max(failureThreshold, 1)
	before := c.result
	if ok {
		c.failures = 0
		c.successes++
		if c.successes >= successThreshold {
			c.result = resultSuccess
		}
	} else {
		c.successes = 0
		c.failures++
		if c.failures >= failureThreshold {
			c.result = resultFailure
		}
	}
	return c.result != before
}

// probeRunner runs one probe attempt of any kind.
type probeRunner struct {
	rt     *cri.Client
	client *http.Client
	dial   func(ctx context.Context, network, addr string) (net.Conn, error)
}

func newProbeRunner(rt *cri.Client, dial func(ctx context.Context, network, addr string) (net.Conn, error)) *probeRunner {
	if dial == nil {
		dial = (&net.Dialer{}).DialContext
	}
	return &probeRunner{
		rt:   rt,
		dial: dial,
		client: &http.Client{Transport: &http.Transport{
			DialContext:       dial,
			DisableKeepAlives: true,
			TLSClientConfig:   &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // probes do not verify, as in Kubernetes
		}},
	}
}

// run probes once: exec (exit 0), httpGet (a status from 200 to 399),
// tcpSocket (a connection) or grpc (SERVING, probe_grpc.go), within the
// probe's timeout. It returns the outcome and, on failure, why.
func (r *probeRunner) run(ctx context.Context, pr *corev1.Probe, c *corev1.Container, containerID, podIP string) (bool, string) {
	timeout := time.Duration(max(pr.GetTimeoutSeconds(), 1)) * time.Second
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	switch {
	case pr.GetExec() != nil:
		cmd := pr.GetExec().GetCommand()
		res, err := r.rt.ExecSync(ctx, containerID, cmd, timeout)
		if err != nil {
			return false, fmt.Sprintf("command %q failed: %s", strings.Join(cmd, " "), cri.Message(err))
		}
		if res.GetExitCode() != 0 {
			out := strings.TrimSpace(string(res.GetStdout()) + string(res.GetStderr()))
			if out == "" {
				out = fmt.Sprintf("command %q exited with %d", strings.Join(cmd, " "), res.GetExitCode())
			}
			return false, out
		}
		return true, ""
	case pr.GetHttpGet() != nil:
		u, err := probeURL(pr.GetHttpGet(), c, podIP)
		if err != nil {
			return false, err.Error()
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if err != nil {
			return false, err.Error()
		}
		req.Header.Set("User-Agent", "kube-probe/skiff")
		for _, h := range pr.GetHttpGet().GetHttpHeaders() {
			if strings.EqualFold(h.GetName(), "Host") {
				req.Host = h.GetValue()
			} else {
				req.Header.Add(h.GetName(), h.GetValue())
			}
		}
		resp, err := r.client.Do(req)
		if err != nil {
			return false, err.Error()
		}
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 10<<10))
		resp.Body.Close()
		if resp.StatusCode < 200 || resp.StatusCode >= 400 {
			return false, fmt.Sprintf("HTTP probe failed with statuscode: %d", resp.StatusCode)
		}
		return true, ""
	case pr.GetTcpSocket() != nil:
		port, err := resolvePort(pr.GetTcpSocket().GetPort(), c)
		if err != nil {
			return false, err.Error()
		}
		host := pr.GetTcpSocket().GetHost()
		if host == "" {
			host = podIP
		}
		conn, err := r.dial(ctx, "tcp", net.JoinHostPort(host, strconv.Itoa(port)))
		if err != nil {
			return false, err.Error()
		}
		conn.Close()
		return true, ""
	case pr.GetGrpc() != nil:
		return r.runGRPC(ctx, pr.GetGrpc(), podIP, timeout)
	}
	return false, "probe has no exec, httpGet, tcpSocket or grpc handler"
}

// probeURL is the URL an httpGet probe asks: scheme (HTTP by default),
// host (the pod's IP by default), port (a number or a container port's
// name) and path.
func probeURL(h *corev1.HTTPGetAction, c *corev1.Container, podIP string) (string, error) {
	port, err := resolvePort(h.GetPort(), c)
	if err != nil {
		return "", err
	}
	scheme := strings.ToLower(h.GetScheme())
	if scheme == "" {
		scheme = "http"
	}
	host := h.GetHost()
	if host == "" {
		host = podIP
	}
	path := h.GetPath()
	if path == "" {
		path = "/"
	} else if !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	u := &url.URL{Scheme: scheme, Host: net.JoinHostPort(host, strconv.Itoa(port))}
	pu, err := url.Parse(path)
	if err != nil {
		return "", fmt.Errorf("path %q: %w", path, err)
	}
	u.Path, u.RawQuery = pu.Path, pu.RawQuery
	return u.String(), nil
}

// resolvePort is a probe's port: a number, or the name of one of the
// container's ports.
func resolvePort(p *metav1.IntOrString, c *corev1.Container) (int, error) {
	if p == nil {
		return 0, fmt.Errorf("probe has no port")
	}
	if _, ok := p.GetValue().(*metav1.IntOrString_IntVal); ok {
		if v := int(p.GetIntVal()); v > 0 && v < 65536 {
			return v, nil
		}
		return 0, fmt.Errorf("invalid port number: %d", p.GetIntVal())
	}
	name := p.GetStrVal()
	if n, err := strconv.Atoi(name); err == nil && n > 0 && n < 65536 {
		return n, nil
	}
	for _, cp := range c.GetPorts() {
		if cp.GetName() == name {
			return int(cp.GetContainerPort()), nil
		}
	}
	return 0, fmt.Errorf("couldn't find port %q in container %s", name, c.GetName())
}
