package csr

import (
	"crypto/x509"
	"crypto/x509/pkix"
	"net"
	"strings"
	"testing"
)

// TestValidateSelfClient: a renewal is for the requester itself, in its
// own groups, a plain client certificate.
func TestValidateSelfClient(t *testing.T) {
	req := func(cn string, orgs ...string) *x509.CertificateRequest {
		return &x509.CertificateRequest{Subject: pkix.Name{CommonName: cn, Organization: orgs}}
	}
	usages := []string{UsageDigitalSignature, UsageClientAuth}
	groups := []string{"ops", "system:authenticated"}
	if err := ValidateSelfClient(req("alice", "ops"), usages, "alice", groups); err != nil {
		t.Errorf("alice renewing herself: %v", err)
	}
	withIP := req("alice")
	withIP.IPAddresses = []net.IP{net.IPv4(10, 0, 0, 1)}
	for name, c := range map[string]struct {
		r      *x509.CertificateRequest
		usages []string
		want   string
	}{
		"another user":  {req("bob"), usages, `subject common name "bob" is not the requester "alice"`},
		"another group": {req("alice", "system:masters"), usages, `subject organization "system:masters" is not a group of the requester`},
		"a SAN":         {withIP, usages, "subjectAltNames are not allowed"},
		"server auth":   {req("alice"), []string{UsageDigitalSignature, UsageServerAuth}, "usages did not match"},
	} {
		if err := ValidateSelfClient(c.r, c.usages, "alice", groups); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", name, err, c.want)
		}
	}
}
