package certificates

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"skiff.dev/services/apiserver/authn/pki"
)

// TestCertDuration: the signer's duration, shortened by expirationSeconds
// but never below 10 minutes, as Kubernetes' signer.duration.
func TestCertDuration(t *testing.T) {
	s := &Signer{duration: 24 * time.Hour}
	secs := func(n int32) *int32 { return &n }
	for _, c := range []struct {
		name string
		exp  *int32
		want time.Duration
	}{
		{"not asked", nil, 24 * time.Hour},
		{"shorter", secs(3600), time.Hour},
		{"longer", secs(7 * 24 * 3600), 24 * time.Hour},
		{"below the minimum", secs(60), 10 * time.Minute},
	} {
		if got := s.certDuration(c.exp); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

// TestSignNeverOutlivesTheCA: a certificate asked for longer than the CA
// has left ends with the CA; it starts 5 minutes back.
func TestSignNeverOutlivesTheCA(t *testing.T) {
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "ca"}, NotBefore: now.Add(-time.Hour), NotAfter: now.Add(48 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, caKey.Public(), caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	reqDER, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: "jane"}}, key)
	if err != nil {
		t.Fatal(err)
	}
	req, err := x509.ParseCertificateRequest(reqDER)
	if err != nil {
		t.Fatal(err)
	}
	certPEM, err := (&CA{Cert: caCert, Key: caKey}).Sign(req, []string{"digital signature", "client auth"}, 365*24*time.Hour, now)
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(certPEM)
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if !cert.NotAfter.Equal(caCert.NotAfter) || !cert.NotBefore.Equal(now.Add(-5*time.Minute)) {
		t.Errorf("valid %v to %v, want %v to the CA's %v", cert.NotBefore, cert.NotAfter, now.Add(-5*time.Minute), caCert.NotAfter)
	}
	if _, err := (&CA{Cert: caCert, Key: caKey}).Sign(req, []string{"flying"}, time.Hour, now); err == nil {
		t.Error("an unknown usage was signed")
	}
}

// TestLoadCARefusesAKeyNotTheCertificates: --cluster-signing-key-file
// must be the key of --cluster-signing-cert-file; the error names both.
func TestLoadCARefusesAKeyNotTheCertificates(t *testing.T) {
	a, _, err := pki.InitCA(t.TempDir(), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	bDir := t.TempDir()
	if _, _, err := pki.InitCA(bDir, time.Now()); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "ca.crt"), filepath.Join(dir, "ca.key")
	if err := os.WriteFile(certFile, a.CertPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	keyPEM, err := os.ReadFile(filepath.Join(bDir, pki.CAKeyFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, keyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = LoadCA(certFile, keyFile)
	if err == nil || !strings.Contains(err.Error(), "--cluster-signing-key-file "+keyFile+" is not the key of --cluster-signing-cert-file "+certFile) {
		t.Fatalf("LoadCA of a key that is not the certificate's: %v", err)
	}
}
