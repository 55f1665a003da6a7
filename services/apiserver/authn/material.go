package authn

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"time"

	"skiff.dev/services/apiserver/authn/pki"
	"skiff.dev/services/apiserver/user"
)

// Files the apiserver makes in its PKI directory besides the CA.
const (
	ServingName         = "apiserver"                   // apiserver.crt, apiserver.key
	NodeAgentClientName = "apiserver-node-agent-client" // .crt, .key
	ServiceAccountKey   = "sa.key"
)

// Material is the apiserver's TLS material and signing key.
type Material struct {
	// CA is the cluster CA in PKIDir; nil when the serving certificate and
	// the client CA were both given as files (then nothing is issued).
	CA *pki.CA
	// Serving is the serving certificate (with its Leaf).
	Serving tls.Certificate
	// ClientCAs verify client certificates.
	ClientCAs *x509.CertPool
	// NodeAgentClient is shown to node agents; nil when none could be had.
	NodeAgentClient *tls.Certificate
	// NodeAgentCAs verify node agents' serving certificates.
	NodeAgentCAs *x509.CertPool
	// ServiceAccountKey signs service-account tokens (ECDSA P-256).
	ServiceAccountKey *ecdsa.PrivateKey

	// dir is the PKI directory the issued certificates are kept in.
	dir string
	// serving and nodeAgentClient are the certificates the apiserver
	// issued itself from CA, what handshakes show (nil: given as files);
	// issued lists them with the certificates others read from their
	// files (IssueFile): Renew renews every one.
	serving, nodeAgentClient *issued
	issued                   []*issued
}

// issued is a certificate the apiserver issues itself from the CA, in its
// PKI directory, and renews while it runs.
type issued struct {
	name  string
	issue func(now time.Time) (tls.Certificate, error)
	cur   atomic.Pointer[tls.Certificate]
	// prev is the certificate the last renewal replaced: a handshake
	// under way then may have been shown it.
	prev atomic.Pointer[tls.Certificate]
}

// issue issues (or keeps, when the files still cover it) the certificate
// name for r in the PKI directory and keeps it to renew.
func (m *Material) issue(name string, r pki.Request, now time.Time, chain ...[]byte) (*issued, error) {
	c := &issued{name: name, issue: func(now time.Time) (tls.Certificate, error) {
		pair, err := m.CA.EnsurePair(m.dir, name, r, now, servingCertMinLeft)
		pair.Certificate = append(pair.Certificate, chain...)
		return pair, err
	}}
	pair, err := c.issue(now)
	if err != nil {
		return nil, err
	}
	c.cur.Store(&pair)
	m.issued = append(m.issued, c)
	return c, nil
}

// IssueFile issues from the CA, into the PKI directory (name.crt,
// name.key), a certificate another component reads from its files at
// each handshake, as the embedded etcd does its peer certificate; Renew
// renews it with the apiserver's own. The files are kept when they cover
// r for more than 30 days.
func (m *Material) IssueFile(name string, r pki.Request, now time.Time) error {
	if m.CA == nil {
		return errors.New("no cluster CA to issue " + name + " from")
	}
	_, err := m.issue(name, r, now)
	return err
}

// Renew issues again, from the CA, the certificates the apiserver issued
// itself (its serving certificate, the node agents' client certificate,
// IssueFile's) when within 30 days of their expiry (or, for the serving
// certificate, no longer naming every --tls-san): the TLS configurations
// show the new ones from the next handshake. It says which it renewed.
// Certificates given as files are left alone.
func (m *Material) Renew(now time.Time) (renewed []string, err error) {
	for _, c := range m.issued {
		old := c.cur.Load()
		pair, err := c.issue(now)
		if err != nil {
			return renewed, fmt.Errorf("renewing %s: %w", c.name, err)
		}
		if !bytes.Equal(pair.Certificate[0], old.Certificate[0]) {
			c.prev.Store(old)
			c.cur.Store(&pair)
			renewed = append(renewed, c.name)
		}
	}
	return renewed, nil
}

// current is the serving certificate handshakes show.
func (m *Material) current() *tls.Certificate {
	if m.serving != nil {
		return m.serving.cur.Load()
	}
	return &m.Serving
}

// ownServing says whether der is the apiserver's serving certificate:
// the current one or, issued by the apiserver, the one its last renewal
// replaced (the server may have shown it in a handshake the renewal
// overtook: the loopback then failed, and with it the apiserver's start).
func (m *Material) ownServing(der []byte) bool {
	if bytes.Equal(der, m.current().Certificate[0]) {
		return true
	}
	if m.serving == nil {
		return false
	}
	prev := m.serving.prev.Load()
	return prev != nil && bytes.Equal(der, prev.Certificate[0])
}

// PKIDirIn is the directory of the apiserver's CA and certificates.
func (o *Options) PKIDirIn(dataDir string) string {
	if o.PKIDir != "" {
		return o.PKIDir
	}
	return filepath.Join(dataDir, "pki")
}

// Material loads (or on first start makes) the TLS material. The
// apiserver calls it once and keeps the result.
func (o *Options) Material(dataDir string, now time.Time) (*Material, error) {
	if o.PKIDir == "" && dataDir == "" {
		return nil, errors.New("TLS needs a directory for its certificates: set --pki-dir or --data-dir")
	}
	return loadMaterial(o, o.PKIDirIn(dataDir), now)
}

func loadMaterial(o *Options, dir string, now time.Time) (*Material, error) {
	if (o.TLSCertFile == "") != (o.TLSKeyFile == "") {
		return nil, errors.New("--tls-cert-file and --tls-key-file go together")
	}
	if (o.NodeAgentClientCertFile == "") != (o.NodeAgentClientKeyFile == "") {
		return nil, errors.New("--node-agent-client-cert-file and --node-agent-client-key-file go together")
	}
	m := &Material{dir: dir}
	if o.TLSCertFile == "" || o.ClientCAFile == "" {
		ca, _, err := pki.InitCA(dir, now)
		if err != nil {
			return nil, fmt.Errorf("--pki-dir: %w", err)
		}
		m.CA = ca
	}
	var err error
	if o.TLSCertFile != "" {
		if m.Serving, err = tls.LoadX509KeyPair(o.TLSCertFile, o.TLSKeyFile); err != nil {
			return nil, fmt.Errorf("--tls-cert-file/--tls-key-file: %w", err)
		}
	} else {
		hosts := append([]string{"localhost", "127.0.0.1", "::1"}, o.TLSSANs...)
		if h, err := os.Hostname(); err == nil && h != "" {
			hosts = append(hosts, h)
		}
		// The CA follows the serving certificate in the handshake: a
		// machine that joins with only the CA's hash (--ca-cert-hash)
		// finds it there (client.FetchPinnedCA).
		if m.serving, err = m.issue(ServingName, pki.Request{CommonName: "skiff-apiserver", Hosts: hosts, Server: true}, now, m.CA.Cert.Raw); err != nil {
			return nil, fmt.Errorf("serving certificate in %s: %w", dir, err)
		}
		m.Serving = *m.serving.cur.Load()
	}
	if o.ClientCAFile != "" {
		if m.ClientCAs, err = pki.ReadPool(o.ClientCAFile); err != nil {
			return nil, fmt.Errorf("--client-ca-file: %w", err)
		}
	} else {
		m.ClientCAs = m.CA.Pool()
	}
	switch {
	case o.NodeAgentClientCertFile != "":
		pair, err := tls.LoadX509KeyPair(o.NodeAgentClientCertFile, o.NodeAgentClientKeyFile)
		if err != nil {
			return nil, fmt.Errorf("--node-agent-client-cert-file/--node-agent-client-key-file: %w", err)
		}
		m.NodeAgentClient = &pair
	case m.CA != nil:
		if m.nodeAgentClient, err = m.issue(NodeAgentClientName, pki.Request{CommonName: user.APIServer, Organizations: []string{user.Masters}, Client: true}, now); err != nil {
			return nil, fmt.Errorf("node agent client certificate in %s: %w", dir, err)
		}
		m.NodeAgentClient = m.nodeAgentClient.cur.Load()
	}
	switch {
	case o.NodeAgentCAFile != "":
		if m.NodeAgentCAs, err = pki.ReadPool(o.NodeAgentCAFile); err != nil {
			return nil, fmt.Errorf("--node-agent-ca-file: %w", err)
		}
	default:
		m.NodeAgentCAs = m.ClientCAs
	}
	keyPath := o.ServiceAccountKeyFile
	if keyPath == "" {
		keyPath = filepath.Join(dir, ServiceAccountKey)
	}
	var key crypto.Signer
	if o.ServiceAccountKeyFile != "" {
		key, err = pki.ReadKey(keyPath)
	} else {
		key, err = pki.EnsureKey(keyPath)
	}
	if err != nil {
		return nil, fmt.Errorf("--service-account-key-file: %w", err)
	}
	ek, ok := key.(*ecdsa.PrivateKey)
	if !ok || ek.Curve != elliptic.P256() {
		return nil, fmt.Errorf("--service-account-key-file %s: want an ECDSA P-256 key, got %T", keyPath, key)
	}
	m.ServiceAccountKey = ek
	return m, nil
}

// ServingNames are the DNS names and IPs of the serving certificate.
func (m *Material) ServingNames() []string {
	out := slices.Clone(m.Serving.Leaf.DNSNames)
	for _, ip := range m.Serving.Leaf.IPAddresses {
		out = append(out, ip.String())
	}
	return out
}

// ServerTLS is the serving configuration: TLS 1.3, the serving
// certificate, and client certificates, when given (a bearer token is the
// alternative), verified against the client CAs but for the leaf's
// validity dates (verifyClientChain): a certificate of another CA fails
// the handshake, while an expired one gets through to the authenticator,
// which refuses each call saying when it expired.
func (m *Material) ServerTLS() *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS13,
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
			return m.current(), nil
		},
		// Asks for a certificate, and sends the CAs' names; the check is
		// VerifyConnection's (resumed sessions included).
		ClientAuth: tls.RequestClientCert,
		ClientCAs:  m.ClientCAs,
		VerifyConnection: func(cs tls.ConnectionState) error {
			return verifyClientChain(m.ClientCAs, cs.PeerCertificates, time.Now())
		},
	}
}

// LoopbackTLS is the configuration of the apiserver's connection to
// itself: it trusts exactly the serving certificate (whatever its names
// and issuer), so no host name needs to match.
func (m *Material) LoopbackTLS() *tls.Config {
	return &tls.Config{
		MinVersion:         tls.VersionTLS13,
		InsecureSkipVerify: true, // replaced by the pin below
		VerifyPeerCertificate: func(raw [][]byte, _ [][]*x509.Certificate) error {
			if len(raw) == 0 || !m.ownServing(raw[0]) {
				return errors.New("loopback: the server's certificate is not the apiserver's own")
			}
			return nil
		},
	}
}

// NodeAgentTLS is the configuration of connections to node agents: their
// serving certificate verified against NodeAgentCAs for serverName (the
// Node's name: issue agents' certificates with it as a SAN), and the
// apiserver's client certificate.
func (m *Material) NodeAgentTLS() *tls.Config {
	c := &tls.Config{MinVersion: tls.VersionTLS13, RootCAs: m.NodeAgentCAs}
	if m.NodeAgentClient != nil {
		c.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			if m.nodeAgentClient != nil {
				return m.nodeAgentClient.cur.Load(), nil
			}
			return m.NodeAgentClient, nil
		}
	}
	return c
}
