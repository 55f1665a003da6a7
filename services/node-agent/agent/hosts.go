package agent

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	corev1 "skiff.dev/proto/core/v1"
)

// The kubelet's managed /etc/hosts (pkg/kubelet/kubelet_pods.go): every
// container of a pod mounts one file from the pod's directory at
// /etc/hosts, unless it mounts something there itself. Off the host
// network the file names localhost, the pod's IP with its hostname (and
// its FQDN with a subdomain), then spec.hostAliases; on the host network
// it is the node's /etc/hosts with the aliases after it.

const (
	etcHostsPath  = "/etc/hosts"
	hostsFileName = "etc-hosts" // in the pod's directory

	managedHostsHeader            = "# Kubernetes-managed hosts file.\n"
	managedHostsHeaderHostNetwork = "# Kubernetes-managed hosts file (host network).\n"
)

// maxHostnameLen is a DNS label's: longer pod names are cut, as the
// kubelet's truncatePodHostnameIfNeeded does.
const maxHostnameLen = 63

// podHostname is the pod's hostname and, with spec.subdomain, its domain
// (<subdomain>.<namespace>.svc.<clusterDomain>), as the kubelet's
// GeneratePodHostNameAndDomain: spec.hostname or else the pod's name, cut
// to 63 characters without a trailing '-' or '.'.
func podHostname(p *corev1.Pod, clusterDomain string) (hostname, domain string) {
	hostname = p.GetMetadata().GetName()
	if h := p.GetSpec().GetHostname(); h != "" {
		hostname = h
	}
	if len(hostname) > maxHostnameLen {
		hostname = strings.TrimRight(hostname[:maxHostnameLen], "-.")
	}
	if sub := p.GetSpec().GetSubdomain(); sub != "" {
		if clusterDomain == "" {
			clusterDomain = DefaultClusterDomain
		}
		domain = fmt.Sprintf("%s.%s.svc.%s", sub, p.GetMetadata().GetNamespace(), clusterDomain)
	}
	return hostname, domain
}

// managedHostsContent is the hosts file of a pod off the host network:
// the localhost and IPv6 lines, a line per pod IP with the hostname
// (FQDN first when there is a domain), then the aliases.
func managedHostsContent(podIPs []string, hostname, domain string, aliases []*corev1.HostAlias) []byte {
	var b bytes.Buffer
	b.WriteString(managedHostsHeader)
	b.WriteString("127.0.0.1\tlocalhost\n")
	b.WriteString("::1\tlocalhost ip6-localhost ip6-loopback\n")
	b.WriteString("fe00::0\tip6-localnet\n")
	b.WriteString("fe00::0\tip6-mcastprefix\n")
	b.WriteString("fe00::1\tip6-allnodes\n")
	b.WriteString("fe00::2\tip6-allrouters\n")
	for _, ip := range podIPs {
		if domain != "" {
			fmt.Fprintf(&b, "%s\t%s.%s\t%s\n", ip, hostname, domain, hostname)
		} else {
			fmt.Fprintf(&b, "%s\t%s\n", ip, hostname)
		}
	}
	b.Write(hostAliasEntries(aliases))
	return b.Bytes()
}

// nodeHostsContent is the hosts file of a pod on the host network: the
// node's own, then the aliases.
func nodeHostsContent(node []byte, aliases []*corev1.HostAlias) []byte {
	var b bytes.Buffer
	b.WriteString(managedHostsHeaderHostNetwork)
	b.Write(node)
	b.Write(hostAliasEntries(aliases))
	return b.Bytes()
}

// hostAliasEntries are the lines of spec.hostAliases: a blank line, a
// comment, then one line per alias with its hostnames tab-separated.
func hostAliasEntries(aliases []*corev1.HostAlias) []byte {
	if len(aliases) == 0 {
		return nil
	}
	var b bytes.Buffer
	b.WriteString("\n# Entries added by HostAliases.\n")
	for _, a := range aliases {
		fmt.Fprintf(&b, "%s\t%s\n", a.GetIp(), strings.Join(a.GetHostnames(), "\t"))
	}
	return b.Bytes()
}

// hostsFile is what a pod's hosts file should hold. nodeHosts reads the
// node's /etc/hosts (for pods on the host network).
func hostsFile(p *corev1.Pod, podIPs []string, clusterDomain string, nodeHosts func() ([]byte, error)) ([]byte, error) {
	aliases := p.GetSpec().GetHostAliases()
	if p.GetSpec().GetHostNetwork() {
		node, err := nodeHosts()
		if err != nil {
			return nil, fmt.Errorf("reading the node's hosts file: %w", err)
		}
		return nodeHostsContent(node, aliases), nil
	}
	hostname, domain := podHostname(p, clusterDomain)
	return managedHostsContent(podIPs, hostname, domain, aliases), nil
}

// mountsHosts says whether container c gets the managed hosts file: when
// the pod has an IP and c mounts nothing at /etc/hosts itself.
func mountsHosts(c *corev1.Container, podIP string) bool {
	if podIP == "" {
		return false
	}
	for _, vm := range c.GetVolumeMounts() {
		if vm.GetMountPath() == etcHostsPath {
			return false
		}
	}
	return true
}

// ensureHostsMount writes the pod's hosts file into its directory under
// root (rewritten at each container start, as the kubelet does) and
// returns its mount at /etc/hosts; nil when c does not get one.
func ensureHostsMount(root string, p *corev1.Pod, c *corev1.Container, podIP, clusterDomain string) (*runtimeapi.Mount, error) {
	if !mountsHosts(c, podIP) {
		return nil, nil
	}
	content, err := hostsFile(p, []string{podIP}, clusterDomain, func() ([]byte, error) { return os.ReadFile(etcHostsPath) })
	if err != nil {
		return nil, err
	}
	dir := podDir(root, p.GetMetadata().GetUid())
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("pod directory: %w", err)
	}
	path := filepath.Join(dir, hostsFileName)
	if err := os.WriteFile(path, content, 0o644); err != nil {
		return nil, fmt.Errorf("writing the pod's hosts file: %w", err)
	}
	// WriteFile keeps an existing file's mode; the kubelet chmods too.
	if err := os.Chmod(path, 0o644); err != nil {
		return nil, err
	}
	return &runtimeapi.Mount{ContainerPath: etcHostsPath, HostPath: path}, nil
}
