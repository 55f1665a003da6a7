package webhook

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "skiff.dev/proto/admissionregistration/v1"
)

func TestClientsOnePerAddressAndRetain(t *testing.T) {
	c := NewClients(nil)
	defer c.Close()
	a := &admissionregistrationv1.WebhookClientConfig{Url: "insecure://127.0.0.1:1"}
	b := &admissionregistrationv1.WebhookClientConfig{Url: "127.0.0.1:2"}
	bOtherCA := &admissionregistrationv1.WebhookClientConfig{Url: "127.0.0.1:2", CaBundle: selfSigned(t)}
	for _, cc := range []*admissionregistrationv1.WebhookClientConfig{a, a, b, bOtherCA} {
		if _, err := c.Get(cc); err != nil {
			t.Fatalf("Get(%v): %v", cc, err)
		}
	}
	if c.Len() != 3 {
		t.Fatalf("%d connections, want 3 (one per address and CA bundle)", c.Len())
	}
	c.Retain(Keys([]*Hook{{ClientConfig: b}}))
	if c.Len() != 1 {
		t.Fatalf("%d connections after Retain, want 1", c.Len())
	}
	if _, err := c.Get(&admissionregistrationv1.WebhookClientConfig{Url: "127.0.0.1:3", CaBundle: []byte("not pem")}); err == nil || !strings.Contains(err.Error(), "clientConfig.caBundle") {
		t.Errorf("a bad caBundle: %v", err)
	}
	if _, err := c.Get(&admissionregistrationv1.WebhookClientConfig{Url: "no-port"}); err == nil || !strings.Contains(err.Error(), `clientConfig.url "no-port"`) {
		t.Errorf("a URL without port: %v", err)
	}
}

// selfSigned is a PEM certificate made for the test.
func selfSigned(t *testing.T) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test-ca"},
		NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}
