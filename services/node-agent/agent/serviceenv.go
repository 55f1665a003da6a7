package agent

import (
	"context"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"skiff.dev/internal/client"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
)

// Services' environment variables, as the kubelet gives every container:
// the `kubernetes` Service of `default` always (KUBERNETES_SERVICE_HOST,
// KUBERNETES_SERVICE_PORT, KUBERNETES_PORT_443_TCP...), and with
// enableServiceLinks (default true) every Service of the pod's namespace
// that has a cluster IP, in Docker's link format.

// serviceEnvTTL: how long a namespace's Services are reused before they
// are listed again (from the apiserver's watch cache).
const serviceEnvTTL = 10 * time.Second

// serviceEnvCache lists Services per namespace, at most once per TTL.
type serviceEnvCache struct {
	services *client.Resource[*corev1.Service, *corev1.ServiceList]
	now      func() time.Time

	mu    sync.Mutex
	byNS  map[string]serviceList
	fresh time.Duration
}

type serviceList struct {
	items  []*corev1.Service
	listed time.Time
}

func newServiceEnvCache(services *client.Resource[*corev1.Service, *corev1.ServiceList], now func() time.Time) *serviceEnvCache {
	return &serviceEnvCache{services: services, now: now, byNS: map[string]serviceList{}, fresh: serviceEnvTTL}
}

func (c *serviceEnvCache) list(ctx context.Context, ns string) ([]*corev1.Service, error) {
	now := c.now()
	c.mu.Lock()
	l, ok := c.byNS[ns]
	c.mu.Unlock()
	if ok && now.Sub(l.listed) < c.fresh {
		return l.items, nil
	}
	res, err := c.services.List(ctx, &metav1.ListOptions{Namespace: ns, ResourceVersion: "0"})
	if err != nil {
		if ok {
			return l.items, nil // the last list, rather than no variables
		}
		return nil, err
	}
	c.mu.Lock()
	c.byNS[ns] = serviceList{items: res.GetItems(), listed: now}
	c.mu.Unlock()
	return res.GetItems(), nil
}

// forPod returns the Services' variables of p's containers.
func (c *serviceEnvCache) forPod(ctx context.Context, p *corev1.Pod) (map[string]string, error) {
	if c == nil {
		return nil, nil
	}
	ns := p.GetMetadata().GetNamespace()
	links := p.GetSpec().EnableServiceLinks == nil || p.GetSpec().GetEnableServiceLinks()
	var svcs []*corev1.Service
	def, err := c.list(ctx, "default")
	if err != nil {
		return nil, err
	}
	for _, s := range def {
		if s.GetMetadata().GetName() == "kubernetes" {
			svcs = append(svcs, s)
		}
	}
	if links {
		own, err := c.list(ctx, ns)
		if err != nil {
			return nil, err
		}
		for _, s := range own {
			if ns == "default" && s.GetMetadata().GetName() == "kubernetes" {
				continue
			}
			svcs = append(svcs, s)
		}
	}
	return serviceEnv(svcs), nil
}

// serviceEnv is the kubelet's envvars.FromServices: for each Service with
// a cluster IP, <NAME>_SERVICE_HOST, <NAME>_SERVICE_PORT (the first
// port), <NAME>_SERVICE_PORT_<PORT NAME> for named ports, and Docker's
// link variables <NAME>_PORT, <NAME>_PORT_<port>_<PROTO>[_PROTO|_PORT|_ADDR].
// A later Service of the same name replaces an earlier one.
func serviceEnv(svcs []*corev1.Service) map[string]string {
	env := map[string]string{}
	for _, s := range svcs {
		ip := s.GetSpec().GetClusterIp()
		if ip == "" || ip == "None" || len(s.GetSpec().GetPorts()) == 0 {
			continue
		}
		name := envName(s.GetMetadata().GetName())
		env[name+"_SERVICE_HOST"] = ip
		for i, port := range s.GetSpec().GetPorts() {
			num := strconv.Itoa(int(port.GetPort()))
			if i == 0 {
				env[name+"_SERVICE_PORT"] = num
			}
			if port.GetName() != "" {
				env[name+"_SERVICE_PORT_"+envName(port.GetName())] = num
			}
			proto := port.GetProtocol()
			if proto == "" {
				proto = "TCP"
			}
			url := strings.ToLower(proto) + "://" + net.JoinHostPort(ip, num)
			prefix := name + "_PORT_" + num + "_" + strings.ToUpper(proto)
			if i == 0 {
				env[name+"_PORT"] = url
			}
			env[prefix] = url
			env[prefix+"_PROTO"] = strings.ToLower(proto)
			env[prefix+"_PORT"] = num
			env[prefix+"_ADDR"] = ip
		}
	}
	return env
}

func envName(s string) string { return strings.ToUpper(strings.ReplaceAll(s, "-", "_")) }
