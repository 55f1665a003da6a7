package csr_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"net"
	"net/url"
	"slices"
	"testing"

	"skiff.dev/internal/csr"
)

func request(t *testing.T, cn string, orgs []string, f func(*x509.CertificateRequest)) *x509.CertificateRequest {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.CertificateRequest{Subject: pkix.Name{CommonName: cn, Organization: orgs}}
	if f != nil {
		f(tmpl)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, tmpl, key)
	if err != nil {
		t.Fatal(err)
	}
	req, err := csr.ParseRequest(csr.EncodeRequest(der))
	if err != nil {
		t.Fatal(err)
	}
	return req
}

// TestKubeletRequests: Kubernetes' checks of a kubelet's client and
// serving requests, in its order and words.
func TestKubeletRequests(t *testing.T) {
	nodes := []string{csr.NodesGroup}
	withDNS := func(r *x509.CertificateRequest) { r.DNSNames = []string{"n1"} }
	withIP := func(r *x509.CertificateRequest) { r.IPAddresses = []net.IP{net.ParseIP("10.0.0.1")} }
	withEmail := func(r *x509.CertificateRequest) { r.EmailAddresses = []string{"n1@example.com"} }
	withURI := func(r *x509.CertificateRequest) { r.URIs = []*url.URL{{Scheme: "spiffe", Host: "n1"}} }
	client := []string{csr.UsageDigitalSignature, csr.UsageClientAuth}
	serving := []string{csr.UsageServerAuth, csr.UsageDigitalSignature}
	for _, c := range []struct {
		name    string
		serving bool
		req     *x509.CertificateRequest
		usages  []string
		want    string
	}{
		{"client", false, request(t, "system:node:n1", nodes, nil), client, ""},
		{"client with key encipherment", false, request(t, "system:node:n1", nodes, nil), append(client, csr.UsageKeyEncipherment), ""},
		{"client in another group too", false, request(t, "system:node:n1", []string{csr.NodesGroup, "system:masters"}, nil), client, "subject organization is not system:nodes"},
		{"client with a DNS name", false, request(t, "system:node:n1", nodes, withDNS), client, "DNS subjectAltNames are not allowed"},
		{"client with an IP", false, request(t, "system:node:n1", nodes, withIP), client, "IP subjectAltNames are not allowed"},
		{"client of a user", false, request(t, "jane", nodes, nil), client, "subject common name does not begin with 'system:node:'"},
		{"client with server auth", false, request(t, "system:node:n1", nodes, nil), append(client, csr.UsageServerAuth), "usages did not match [client auth digital signature key encipherment]"},
		{"serving", true, request(t, "system:node:n1", nodes, func(r *x509.CertificateRequest) { withDNS(r); withIP(r) }), serving, ""},
		{"serving without a name", true, request(t, "system:node:n1", nodes, nil), serving, "DNS or IP subjectAltName is required"},
		{"serving with an email", true, request(t, "system:node:n1", nodes, func(r *x509.CertificateRequest) { withDNS(r); withEmail(r) }), serving, "Email subjectAltNames are not allowed"},
		{"serving with a URI", true, request(t, "system:node:n1", nodes, func(r *x509.CertificateRequest) { withDNS(r); withURI(r) }), serving, "URI subjectAltNames are not allowed"},
		{"serving with client auth", true, request(t, "system:node:n1", nodes, withDNS), client, "usages did not match [digital signature key encipherment server auth]"},
	} {
		check := csr.ValidateKubeletClient
		if c.serving {
			check = csr.ValidateKubeletServing
		}
		got := ""
		if err := check(c.req, c.usages); err != nil {
			got = err.Error()
		}
		if got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

func TestUsages(t *testing.T) {
	ku, ext, err := csr.X509Usages([]string{"digital signature", "key encipherment", "client auth", "server auth", "client auth"})
	if err != nil || ku != x509.KeyUsageDigitalSignature|x509.KeyUsageKeyEncipherment ||
		!slices.Equal(ext, []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth, x509.ExtKeyUsageServerAuth}) {
		t.Errorf("X509Usages: %v %v %v", ku, ext, err)
	}
	if _, _, err := csr.X509Usages([]string{"flying"}); err == nil {
		t.Error("an unknown usage was accepted")
	}
	if k := csr.KnownUsages(); len(k) != 23 || !slices.IsSorted(k) {
		t.Errorf("KnownUsages: %d %v", len(k), k)
	}
	if _, err := csr.ParseRequest([]byte("-----BEGIN CERTIFICATE-----\nMA==\n-----END CERTIFICATE-----\n")); err == nil {
		t.Error("a CERTIFICATE block parsed as a request")
	}
}
