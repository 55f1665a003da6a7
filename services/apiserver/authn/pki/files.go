package pki

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// WriteFile writes data to path atomically (a temporary file in the same
// directory, synced, then renamed over path) with mode perm.
func WriteFile(path string, data []byte, perm os.FileMode) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp) // a no-op after the rename
	if err := f.Chmod(perm); err != nil {
		f.Close()
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// EncodeKey is key as a PEM "PRIVATE KEY" (PKCS #8).
func EncodeKey(key crypto.Signer) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

// ParseKey reads a PEM private key (PKCS #8, or SEC 1 "EC PRIVATE KEY").
func ParseKey(b []byte) (crypto.Signer, error) {
	block, _ := pem.Decode(b)
	if block == nil {
		return nil, errors.New("no PEM private key found")
	}
	var key any
	var err error
	switch block.Type {
	case "EC PRIVATE KEY":
		key, err = x509.ParseECPrivateKey(block.Bytes)
	case "RSA PRIVATE KEY":
		key, err = x509.ParsePKCS1PrivateKey(block.Bytes)
	default:
		key, err = x509.ParsePKCS8PrivateKey(block.Bytes)
	}
	if err != nil {
		return nil, err
	}
	s, ok := key.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("unsupported private key type %T", key)
	}
	return s, nil
}

// ReadKey reads the PEM private key in path.
func ReadKey(path string) (crypto.Signer, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	key, err := ParseKey(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return key, nil
}

// ParseCert reads the first PEM certificate of b.
func ParseCert(b []byte) (*x509.Certificate, error) {
	block, _ := pem.Decode(b)
	if block == nil || block.Type != "CERTIFICATE" {
		return nil, errors.New("no PEM certificate found")
	}
	return x509.ParseCertificate(block.Bytes)
}

// ReadPool reads a PEM bundle of CA certificates.
func ReadPool(path string) (*x509.CertPool, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	p := x509.NewCertPool()
	if !p.AppendCertsFromPEM(b) {
		return nil, fmt.Errorf("%s: no PEM certificate found", path)
	}
	return p, nil
}

// WritePair writes name.crt (0644) and name.key (0600) in dir.
func WritePair(dir, name string, certPEM, keyPEM []byte) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	if err := WriteFile(filepath.Join(dir, name+".key"), keyPEM, 0o600); err != nil {
		return err
	}
	return WriteFile(filepath.Join(dir, name+".crt"), certPEM, 0o644)
}

// EnsurePair keeps dir/name.{crt,key} when the CA covers it (signed by
// it, hosts named, valid for at least minLeft) and issues a new pair
// otherwise. It returns the pair for TLS.
func (ca *CA) EnsurePair(dir, name string, r Request, now time.Time, minLeft time.Duration) (tls.Certificate, error) {
	certPath, keyPath := filepath.Join(dir, name+".crt"), filepath.Join(dir, name+".key")
	if pair, err := tls.LoadX509KeyPair(certPath, keyPath); err == nil && ca.Covers(pair.Leaf, r.Hosts, now, minLeft) {
		return pair, nil
	}
	certPEM, keyPEM, err := ca.Issue(r, now)
	if err != nil {
		return tls.Certificate{}, err
	}
	if err := WritePair(dir, name, certPEM, keyPEM); err != nil {
		return tls.Certificate{}, err
	}
	return tls.X509KeyPair(certPEM, keyPEM)
}

// EnsureKey loads the private key in path, or makes an ECDSA P-256 key
// there when the file does not exist.
func EnsureKey(path string) (crypto.Signer, error) {
	key, err := ReadKey(path)
	if err == nil || !errors.Is(err, os.ErrNotExist) {
		return key, err
	}
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	b, err := EncodeKey(k)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, err
	}
	return k, WriteFile(path, b, 0o600)
}
