package webhook

import (
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

	admissionv1 "skiff.dev/proto/admission/v1"
	admissionregistrationv1 "skiff.dev/proto/admissionregistration/v1"
)

// InsecurePrefix marks a webhook URL served in plain text (development).
const InsecurePrefix = "insecure://"

// Clients holds one gRPC connection per webhook address and CA bundle.
type Clients struct {
	clusterCA *x509.CertPool

	mu    sync.Mutex
	conns map[string]*grpc.ClientConn
}

// NewClients returns an empty set. clusterCA verifies webhooks that give no
// caBundle (nil: the system's roots).
func NewClients(clusterCA *x509.CertPool) *Clients {
	return &Clients{clusterCA: clusterCA, conns: map[string]*grpc.ClientConn{}}
}

// Key identifies the connection a client config uses.
func Key(cc *admissionregistrationv1.WebhookClientConfig) string {
	if len(cc.GetCaBundle()) == 0 {
		return cc.GetUrl()
	}
	sum := sha256.Sum256(cc.GetCaBundle())
	return cc.GetUrl() + "#" + hex.EncodeToString(sum[:8])
}

// Get returns the client of a webhook's address, dialing it on first use
// (gRPC connects lazily: a webhook that is down fails its calls, not this).
func (c *Clients) Get(cc *admissionregistrationv1.WebhookClientConfig) (admissionv1.AdmissionWebhookClient, error) {
	key := Key(cc)
	c.mu.Lock()
	defer c.mu.Unlock()
	if conn, ok := c.conns[key]; ok {
		return admissionv1.NewAdmissionWebhookClient(conn), nil
	}
	target, creds, err := c.transport(cc)
	if err != nil {
		return nil, err
	}
	conn, err := grpc.NewClient(target, grpc.WithTransportCredentials(creds))
	if err != nil {
		return nil, fmt.Errorf("clientConfig.url %q: %w", cc.GetUrl(), err)
	}
	c.conns[key] = conn
	return admissionv1.NewAdmissionWebhookClient(conn), nil
}

func (c *Clients) transport(cc *admissionregistrationv1.WebhookClientConfig) (string, credentials.TransportCredentials, error) {
	url := cc.GetUrl()
	if addr, ok := strings.CutPrefix(url, InsecurePrefix); ok {
		return addr, insecure.NewCredentials(), nil
	}
	host, _, err := net.SplitHostPort(url)
	if err != nil {
		return "", nil, fmt.Errorf("clientConfig.url %q: want \"host:port\" or \"insecure://host:port\": %w", url, err)
	}
	roots := c.clusterCA
	if b := cc.GetCaBundle(); len(b) > 0 {
		roots = x509.NewCertPool()
		if !roots.AppendCertsFromPEM(b) {
			return "", nil, errors.New("clientConfig.caBundle: no PEM certificate in it")
		}
	}
	return url, credentials.NewTLS(&tls.Config{RootCAs: roots, ServerName: host, MinVersion: tls.VersionTLS12}), nil
}

// Retain closes the connections whose key is not in keep.
func (c *Clients) Retain(keep map[string]bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for key, conn := range c.conns {
		if !keep[key] {
			_ = conn.Close()
			delete(c.conns, key)
		}
	}
}

// Len is the number of open connections.
func (c *Clients) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.conns)
}

// Close closes every connection.
func (c *Clients) Close() { c.Retain(nil) }
