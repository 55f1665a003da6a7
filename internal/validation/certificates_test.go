package validation_test

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

	"google.golang.org/protobuf/proto"

	"skiff.dev/internal/csr"
	"skiff.dev/internal/validation"
	certificatesv1 "skiff.dev/proto/certificates/v1"
	metav1 "skiff.dev/proto/meta/v1"
)

// csrRequest is a signed PEM request of a new key, and a certificate.
func csrRequest(t *testing.T) (request, cert []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: "jane"}}, key)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "jane"}, NotBefore: time.Unix(0, 0), NotAfter: time.Unix(1<<32, 0)}
	cder, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	return csr.EncodeRequest(der), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cder})
}

func TestCertificateSigningRequest(t *testing.T) {
	req, cert := csrRequest(t)
	hour := int32(3600)
	valid := func() *certificatesv1.CertificateSigningRequest {
		return &certificatesv1.CertificateSigningRequest{Metadata: &metav1.ObjectMeta{Name: "jane"},
			Spec: &certificatesv1.CertificateSigningRequestSpec{Request: req, SignerName: csr.KubeAPIServerClient, Usages: []string{"client auth"}, ExpirationSeconds: &hour}}
	}
	expectErrors(t, validation.CertificateSigningRequest(valid()), nil)
	with := func(f func(c *certificatesv1.CertificateSigningRequest)) *certificatesv1.CertificateSigningRequest {
		c := valid()
		f(c)
		return c
	}
	approved := &certificatesv1.CertificateSigningRequestCondition{Type: csr.Approved, Status: csr.True}
	// The subject changed after signing: it parses, its signature fails.
	block, _ := pem.Decode(req)
	tampered := pem.EncodeToMemory(&pem.Block{Type: block.Type, Bytes: []byte(strings.Replace(string(block.Bytes), "jane", "jano", 1))})
	short := int32(599)
	cases := []struct {
		name   string
		c      *certificatesv1.CertificateSigningRequest
		want   []string
		detail string
	}{
		{"no request", with(func(c *certificatesv1.CertificateSigningRequest) { c.Spec.Request = nil }), []string{"spec.request: Invalid value"}, "PEM block type must be CERTIFICATE REQUEST"},
		{"a request whose signature does not check", with(func(c *certificatesv1.CertificateSigningRequest) { c.Spec.Request = tampered }), []string{"spec.request: Invalid value"}, "verification failure"},
		{"no usages", with(func(c *certificatesv1.CertificateSigningRequest) { c.Spec.Usages = nil }), []string{"spec.usages: Required value"}, "usages must be provided"},
		{"unknown and repeated usages", with(func(c *certificatesv1.CertificateSigningRequest) {
			c.Spec.Usages = []string{"client auth", "flying", "client auth"}
		}),
			[]string{"spec.usages[1]: Unsupported value", "spec.usages[2]: Duplicate value"}, ""},
		{"no signer", with(func(c *certificatesv1.CertificateSigningRequest) { c.Spec.SignerName = "" }), []string{"spec.signerName: Required value"}, ""},
		{"signer without a domain", with(func(c *certificatesv1.CertificateSigningRequest) { c.Spec.SignerName = "signer" }), []string{"spec.signerName: Invalid value"}, "example.com/signer-name"},
		{"signer domain of one label", with(func(c *certificatesv1.CertificateSigningRequest) { c.Spec.SignerName = "local/signer" }), []string{"spec.signerName: Invalid value"}, "at least two segments"},
		{"legacy signer", with(func(c *certificatesv1.CertificateSigningRequest) { c.Spec.SignerName = csr.LegacyUnknown }), []string{"spec.signerName: Invalid value"}, "the legacy signerName is not allowed via this API version"},
		{"too short", with(func(c *certificatesv1.CertificateSigningRequest) { c.Spec.ExpirationSeconds = &short }), []string{"spec.expirationSeconds: Invalid value"}, "less than 600 seconds"},
		{"approved and denied", with(func(c *certificatesv1.CertificateSigningRequest) {
			c.Status = &certificatesv1.CertificateSigningRequestStatus{Conditions: []*certificatesv1.CertificateSigningRequestCondition{approved, {Type: csr.Denied, Status: csr.True}}}
		}), []string{"status.conditions: Invalid value"}, "mutually exclusive"},
		{"approved but False", with(func(c *certificatesv1.CertificateSigningRequest) {
			c.Status = &certificatesv1.CertificateSigningRequestStatus{Conditions: []*certificatesv1.CertificateSigningRequestCondition{{Type: csr.Approved, Status: "False"}}}
		}), []string{"status.conditions[0].status: Invalid value"}, "Approved condition may only be set to True"},
		{"a condition twice, one without a status", with(func(c *certificatesv1.CertificateSigningRequest) {
			c.Status = &certificatesv1.CertificateSigningRequestStatus{Conditions: []*certificatesv1.CertificateSigningRequestCondition{{Type: csr.Failed, Status: csr.True}, {Type: csr.Failed}}}
		}), []string{"status.conditions[1].status: Required value", "status.conditions[1].type: Duplicate value"}, ""},
		{"a certificate on a pending request", with(func(c *certificatesv1.CertificateSigningRequest) {
			c.Status = &certificatesv1.CertificateSigningRequestStatus{Certificate: cert}
		}), []string{"status.certificate: Forbidden"}, "only be set on an Approved request"},
		{"a certificate that is no certificate", with(func(c *certificatesv1.CertificateSigningRequest) {
			c.Status = &certificatesv1.CertificateSigningRequestStatus{Conditions: []*certificatesv1.CertificateSigningRequestCondition{approved}, Certificate: req}
		}), []string{"status.certificate: Invalid value"}, "only CERTIFICATE PEM blocks are allowed"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			errs := validation.CertificateSigningRequest(c.c)
			expectErrors(t, errs, c.want)
			if c.detail != "" {
				path, _, _ := strings.Cut(c.want[0], ": ")
				expectDetail(t, errs, path, c.detail)
			}
		})
	}

	t.Run("updates", func(t *testing.T) {
		old := valid()
		expectErrors(t, validation.CertificateSigningRequestUpdate(proto.Clone(old).(*certificatesv1.CertificateSigningRequest), old), nil)
		changed := with(func(c *certificatesv1.CertificateSigningRequest) {
			c.Spec.Usages = []string{"client auth", "digital signature"}
		})
		expectErrors(t, validation.CertificateSigningRequestUpdate(changed, old), []string{"spec: Forbidden"})
		app := with(func(c *certificatesv1.CertificateSigningRequest) {
			c.Status = &certificatesv1.CertificateSigningRequestStatus{Conditions: []*certificatesv1.CertificateSigningRequestCondition{approved}}
		})
		expectErrors(t, validation.CertificateSigningRequestApprovalUpdate(app, old), nil)
		expectErrors(t, validation.CertificateSigningRequestStatusUpdate(app, old), []string{"status.conditions: Forbidden"})
		expectErrors(t, validation.CertificateSigningRequestApprovalUpdate(old, app), []string{"status.conditions: Forbidden"}) // removed
		issued := proto.Clone(app).(*certificatesv1.CertificateSigningRequest)
		issued.Status.Certificate = cert
		expectErrors(t, validation.CertificateSigningRequestStatusUpdate(issued, app), nil)
		expectErrors(t, validation.CertificateSigningRequestApprovalUpdate(issued, app), []string{"status.certificate: Forbidden"})
		_, other := csrRequest(t)
		reissued := proto.Clone(issued).(*certificatesv1.CertificateSigningRequest)
		reissued.Status.Certificate = other
		errs := validation.CertificateSigningRequestStatusUpdate(reissued, issued)
		expectErrors(t, errs, []string{"status.certificate: Forbidden"})
		expectDetail(t, errs, "status.certificate", "may not modify existing certificate content")
	})
}
