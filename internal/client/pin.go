package client

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"strings"
)

// A machine that joins the cluster (a node agent with --join, a
// control-plane member with --join) has no CA yet to verify the apiserver
// with. As kubeadm's discovery, it is given the CA's hash instead
// (--ca-cert-hash sha256:<hex>, the SHA-256 of the CA certificate's
// SubjectPublicKeyInfo, which `skiff-apiserver token create
// --print-join-command` prints): the apiserver sends the CA after its
// serving certificate in the TLS handshake, the joiner keeps the CA
// whose hash is the pinned one and verifies the serving certificate
// against it. A man in the middle has no certificate chained to that CA.

// CACertHash is the pin of a CA certificate: "sha256:" and the hex SHA-256
// of its SubjectPublicKeyInfo (kubeadm's --discovery-token-ca-cert-hash).
func CACertHash(ca *x509.Certificate) string {
	sum := sha256.Sum256(ca.RawSubjectPublicKeyInfo)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// ParseCACertHash checks a pin's form: "sha256:" and 64 hex digits.
func ParseCACertHash(pin string) (string, error) {
	h, ok := strings.CutPrefix(strings.TrimSpace(pin), "sha256:")
	if b, err := hex.DecodeString(h); !ok || err != nil || len(b) != sha256.Size {
		return "", fmt.Errorf("%q: want sha256:<64 hex digits>, the hash `skiff-apiserver token create --print-join-command` prints", pin)
	}
	return "sha256:" + strings.ToLower(h), nil
}

// FetchPinnedCA connects to the apiserver at addr (host:port), finds
// among the certificates it presents the CA whose hash is pin, checks that
// the serving certificate is issued by it for addr's host, and returns
// it PEM-encoded.
func FetchPinnedCA(ctx context.Context, addr, pin string) ([]byte, error) {
	want, err := ParseCACertHash(pin)
	if err != nil {
		return nil, err
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("%s: want host:port: %w", addr, err)
	}
	var found *x509.Certificate
	cfg := &tls.Config{
		MinVersion: tls.VersionTLS12,
		// Verified below against the pinned CA, not the system's roots.
		InsecureSkipVerify: true,
		NextProtos:         []string{"http/1.1"},
		VerifyConnection: func(cs tls.ConnectionState) error {
			certs := cs.PeerCertificates
			for _, c := range certs {
				if c.IsCA && CACertHash(c) == want {
					found = c
				}
			}
			if found == nil || len(certs) == 0 {
				return fmt.Errorf("the apiserver at %s presents no CA whose hash is %s: not the cluster it claims to be, or its CA is another", addr, want)
			}
			roots := x509.NewCertPool()
			roots.AddCert(found)
			_, err := certs[0].Verify(x509.VerifyOptions{DNSName: host, Roots: roots})
			return err
		},
	}
	d := tls.Dialer{Config: cfg}
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("fetching the cluster CA from %s: %w", addr, err)
	}
	conn.Close()
	if found == nil {
		return nil, errors.New("no CA") // VerifyConnection refused the handshake already
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: found.Raw}), nil
}
