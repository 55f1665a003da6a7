// Package pki is the cluster's certificate authority: it creates a CA
// (ECDSA P-256, ten years) and issues certificates signed by it — the
// apiserver's serving certificate, client certificates (CN = user,
// O = groups) and node agents' serving certificates — and keeps them in a
// directory (private keys 0600, every file written atomically).
//
// It owns the files and the X.509 arithmetic; what a certificate means to
// authentication is package authn's, and who calls Issue (the apiserver at
// start, `skiff-apiserver certs`, tests) is theirs.
package pki

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// File names in a PKI directory.
const (
	CACertFile = "ca.crt"
	CAKeyFile  = "ca.key"
)

// CAValidity is how long a CA made by InitCA is valid.
const CAValidity = 10 * 365 * 24 * time.Hour

// DefaultValidity is how long an issued certificate is valid unless the
// request says otherwise.
const DefaultValidity = 365 * 24 * time.Hour

// CA is a certificate authority: its certificate and signing key.
type CA struct {
	Cert    *x509.Certificate
	CertPEM []byte
	Key     crypto.Signer
}

// Pool is a pool holding only this CA.
func (ca *CA) Pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.Cert)
	return p
}

// InitCA loads the CA in dir, or creates it (and dir) when neither file
// exists. created says which.
func InitCA(dir string, now time.Time) (ca *CA, created bool, err error) {
	certPath, keyPath := filepath.Join(dir, CACertFile), filepath.Join(dir, CAKeyFile)
	_, certErr := os.Stat(certPath)
	_, keyErr := os.Stat(keyPath)
	switch {
	case certErr == nil && keyErr == nil:
		ca, err := LoadCA(dir)
		return ca, false, err
	case !errors.Is(certErr, os.ErrNotExist) || !errors.Is(keyErr, os.ErrNotExist):
		return nil, false, fmt.Errorf("pki %s: %s and %s must both exist or both be absent", dir, CACertFile, CAKeyFile)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, false, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "skiff-ca"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(CAValidity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, false, err
	}
	keyPEM, err := EncodeKey(key)
	if err != nil {
		return nil, false, err
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, false, err
	}
	// The key first: a cert without its key would make the next start fail.
	if err := WriteFile(keyPath, keyPEM, 0o600); err != nil {
		return nil, false, err
	}
	if err := WriteFile(certPath, certPEM, 0o644); err != nil {
		return nil, false, err
	}
	cert, _ := x509.ParseCertificate(der)
	return &CA{Cert: cert, CertPEM: certPEM, Key: key}, true, nil
}

// LoadCA reads the CA in dir.
func LoadCA(dir string) (*CA, error) {
	certPEM, err := os.ReadFile(filepath.Join(dir, CACertFile))
	if err != nil {
		return nil, fmt.Errorf("pki: %w (create it with `skiff-apiserver certs init`)", err)
	}
	cert, err := ParseCert(certPEM)
	if err != nil {
		return nil, fmt.Errorf("pki %s: %w", filepath.Join(dir, CACertFile), err)
	}
	key, err := ReadKey(filepath.Join(dir, CAKeyFile))
	if err != nil {
		return nil, err
	}
	if !KeyMatches(cert, key) {
		return nil, fmt.Errorf("pki %s: %s does not belong to %s", dir, CAKeyFile, CACertFile)
	}
	return &CA{Cert: cert, CertPEM: certPEM, Key: key}, nil
}

// Request describes a certificate to issue.
type Request struct {
	// CommonName is the user (client certificates) or the host.
	CommonName string
	// Organizations are the user's groups.
	Organizations []string
	// Hosts are the subject alternative names: IP addresses or DNS names.
	Hosts []string
	// Client and Server choose the extended key usages (at least one).
	Client, Server bool
	// Validity: DefaultValidity when zero.
	Validity time.Duration
}

// Issue makes a new key and a certificate for it signed by the CA,
// both PEM-encoded.
func (ca *CA) Issue(r Request, now time.Time) (certPEM, keyPEM []byte, err error) {
	if r.CommonName == "" {
		return nil, nil, errors.New("certificate: a common name is required")
	}
	if !r.Client && !r.Server {
		return nil, nil, errors.New("certificate: client or server usage required")
	}
	if r.Validity <= 0 {
		r.Validity = DefaultValidity
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		Subject:  pkix.Name{CommonName: r.CommonName, Organization: r.Organizations},
		KeyUsage: x509.KeyUsageDigitalSignature,
	}
	if r.Client {
		tmpl.ExtKeyUsage = append(tmpl.ExtKeyUsage, x509.ExtKeyUsageClientAuth)
	}
	if r.Server {
		tmpl.ExtKeyUsage = append(tmpl.ExtKeyUsage, x509.ExtKeyUsageServerAuth)
	}
	for _, h := range r.Hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else if h != "" {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	if certPEM, err = ca.Sign(tmpl, key.Public(), r.Validity, now); err != nil {
		return nil, nil, fmt.Errorf("certificate %q: %w", r.CommonName, err)
	}
	if keyPEM, err = EncodeKey(key); err != nil {
		return nil, nil, err
	}
	return certPEM, keyPEM, nil
}

// Sign signs tmpl (its subject, names and usages) for pub with a new
// serial, valid from 5 minutes before now (clock skew between machines)
// for validity, never beyond the CA's own expiry, PEM-encoded. Issue and
// the controller-manager's csrsigning sign so.
func (ca *CA) Sign(tmpl *x509.Certificate, pub crypto.PublicKey, validity time.Duration, now time.Time) ([]byte, error) {
	t := *tmpl
	t.SerialNumber = serial()
	t.NotBefore = now.Add(-Backdate)
	t.NotAfter = now.Add(validity)
	if t.NotAfter.After(ca.Cert.NotAfter) {
		t.NotAfter = ca.Cert.NotAfter
	}
	der, err := x509.CreateCertificate(rand.Reader, &t, ca.Cert, pub, ca.Key)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), nil
}

// Backdate is how long before its issue a certificate is valid from.
const Backdate = 5 * time.Minute

// Covers says whether cert is signed by the CA, valid from now for at
// least minLeft, and names every host in hosts: a certificate worth
// keeping.
func (ca *CA) Covers(cert *x509.Certificate, hosts []string, now time.Time, minLeft time.Duration) bool {
	if cert.CheckSignatureFrom(ca.Cert) != nil || now.Before(cert.NotBefore) || now.Add(minLeft).After(cert.NotAfter) {
		return false
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			if !slices.ContainsFunc(cert.IPAddresses, ip.Equal) {
				return false
			}
		} else if !slices.Contains(cert.DNSNames, h) {
			return false
		}
	}
	return true
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		panic(err) // crypto/rand does not fail
	}
	return n
}

// KeyMatches says whether key is the private key of cert's public key.
func KeyMatches(cert *x509.Certificate, key crypto.Signer) bool {
	pub, ok := key.Public().(interface{ Equal(crypto.PublicKey) bool })
	return ok && pub.Equal(cert.PublicKey)
}
