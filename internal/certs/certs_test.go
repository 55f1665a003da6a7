package certs

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// selfSigned is a certificate for cn, valid for a day, and its key.
func selfSigned(t *testing.T, cn string, serial int64) ([]byte, crypto.Signer) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: cn}, NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), key
}

// A renewal stopped between writing the new key and the new certificate
// (the process killed, the machine down) leaves files the next start
// loads: the new pair, and the certificate file is then the new one.
// Before, the new key sat beside the old certificate, which did not load,
// and the node or component had lost its credentials.
func TestRenewalStoppedBetweenItsFilesLoadsTheNewPair(t *testing.T) {
	dir := t.TempDir()
	cfg := NodeClient(dir, "n1")
	oldCert, oldKey := selfSigned(t, cfg.Subject.CommonName, 1)
	m := New(cfg)
	if err := m.keep(oldCert, oldKey); err != nil {
		t.Fatal(err)
	}

	newCert, newKey := selfSigned(t, cfg.Subject.CommonName, 2)
	stopped := errors.New("stopped before the certificate's rename")
	rename = func(from, to string) error {
		if to == cfg.CertFile {
			return stopped
		}
		return os.Rename(from, to)
	}
	t.Cleanup(func() { rename = os.Rename })
	if err := m.keep(newCert, newKey); !errors.Is(err, stopped) {
		t.Fatalf("the interrupted renewal: %v, want %v", err, stopped)
	}
	rename = os.Rename

	again := New(cfg)
	cur := again.Current()
	if cur == nil {
		t.Fatal("after the interrupted renewal, New loaded no certificate")
	}
	if cur.Leaf.SerialNumber.Int64() != 2 {
		t.Fatalf("New loaded certificate %d, want the renewed one, 2", cur.Leaf.SerialNumber)
	}
	onDisk, err := os.ReadFile(cfg.CertFile)
	if err != nil || string(onDisk) != string(newCert) {
		t.Fatalf("the certificate file after New: %v, want the renewed certificate", err)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "*.tmp")); len(left) > 0 {
		t.Fatalf("left behind: %v", left)
	}

	// A component's renewal Config reads the same files.
	rc, err := ClientRenewal(cfg.CertFile, cfg.KeyFile)
	if err != nil || rc.Subject.CommonName != cfg.Subject.CommonName {
		t.Fatalf("ClientRenewal: %v, %q", err, rc.Subject.CommonName)
	}
}
