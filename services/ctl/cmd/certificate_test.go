package cmd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCertificateApproveDeny: skiffctl get csr prints Kubernetes' columns
// and certificate approve|deny decide through the approval subresource,
// with kubectl's reason; the opposite decision is then refused.
func TestCertificateApproveDeny(t *testing.T) {
	c := newCLI(t)
	example := readFile(t, filepath.Join("..", "..", "..", "tests", "conformance", "testdata", "certificates.k8s.io.v1.CertificateSigningRequest.yaml"))
	var names []string
	for _, suffix := range []string{"a", "d"} {
		name := c.ns + "-" + suffix
		names = append(names, name)
		path := filepath.Join(t.TempDir(), name+".yaml")
		if err := os.WriteFile(path, []byte(strings.Replace(example, "name: example-jane", "name: "+name, 1)), 0o600); err != nil {
			t.Fatal(err)
		}
		c.ok("create", "-f", path)
	}
	out := c.ok("get", "csr", names[0])
	if !strings.HasPrefix(out, "NAME") || !strings.Contains(out, "SIGNERNAME") || !strings.Contains(out, "REQUESTEDDURATION") ||
		!strings.Contains(out, "kubernetes.io/kube-apiserver-client") || !strings.Contains(out, "24h") || !strings.Contains(out, "Pending") {
		t.Errorf("get csr:\n%s", out)
	}
	if got := c.ok("certificate", "approve", names[0]); got != "certificatesigningrequest.certificates.k8s.io/"+names[0]+" approved\n" {
		t.Errorf("approve printed %q", got)
	}
	c.ok("certificate", "approve", names[0]) // already approved: nothing to do
	if got := c.ok("certificate", "deny", names[1]); got != "certificatesigningrequest.certificates.k8s.io/"+names[1]+" denied\n" {
		t.Errorf("deny printed %q", got)
	}
	if out := c.ok("get", "csr", names[0], names[1]); !strings.Contains(out, "Approved") || !strings.Contains(out, "Denied") {
		t.Errorf("get csr after the decisions:\n%s", out)
	}
	if y := c.ok("get", "csr", names[0], "-o", "yaml"); !strings.Contains(y, "reason: KubectlApprove") || !strings.Contains(y, "This CSR was approved by kubectl certificate approve.") {
		t.Errorf("approved csr:\n%s", y)
	}
	if e := c.fails("certificate", "deny", names[0]); !strings.Contains(e, "is already approved") {
		t.Errorf("denying an approved csr: %q", e)
	}
	if e := c.fails("certificate", "approve"); !strings.Contains(e, "USAGE: certificate approve CSR...") {
		t.Errorf("approve without a name: %q", e)
	}
}
