package pki

import (
	"crypto/x509"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestIssueAndCovers(t *testing.T) {
	now := time.Now()
	ca, created, err := InitCA(t.TempDir(), now)
	if err != nil || !created {
		t.Fatalf("InitCA: %v, created %v", err, created)
	}
	certPEM, _, err := ca.Issue(Request{CommonName: "web", Hosts: []string{"web.local", "10.1.2.3"}, Server: true, Validity: 20 * 365 * 24 * time.Hour}, now)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := ParseCert(certPEM)
	if err != nil {
		t.Fatal(err)
	}
	if cert.NotAfter.After(ca.Cert.NotAfter) {
		t.Errorf("a certificate outlives its CA: %v > %v", cert.NotAfter, ca.Cert.NotAfter)
	}
	if _, err := cert.Verify(x509.VerifyOptions{Roots: ca.Pool(), DNSName: "web.local"}); err != nil {
		t.Errorf("verify: %v", err)
	}
	for _, tc := range []struct {
		name    string
		hosts   []string
		at      time.Time
		minLeft time.Duration
		want    bool
	}{
		{"its names", []string{"web.local", "10.1.2.3"}, now, time.Hour, true},
		{"a name it lacks", []string{"other.local"}, now, time.Hour, false},
		{"an IP it lacks", []string{"10.1.2.4"}, now, time.Hour, false},
		{"expiring too soon", nil, ca.Cert.NotAfter.Add(-time.Hour), 24 * time.Hour, false},
	} {
		if got := ca.Covers(cert, tc.hosts, tc.at, tc.minLeft); got != tc.want {
			t.Errorf("%s: Covers = %v, want %v", tc.name, got, tc.want)
		}
	}
	other, _, err := InitCA(t.TempDir(), now)
	if err != nil {
		t.Fatal(err)
	}
	if other.Covers(cert, nil, now, 0) {
		t.Error("another CA covers the certificate")
	}
	for _, bad := range []Request{{Client: true}, {CommonName: "x"}} {
		if _, _, err := ca.Issue(bad, now); err == nil {
			t.Errorf("Issue(%+v) accepted", bad)
		}
	}
}

func TestInitCAHalfPresent(t *testing.T) {
	dir := t.TempDir()
	if _, _, err := InitCA(dir, time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, CAKeyFile)); err != nil {
		t.Fatal(err)
	}
	if _, _, err := InitCA(dir, time.Now()); err == nil || !strings.Contains(err.Error(), "must both exist or both be absent") {
		t.Fatalf("a CA without its key: %v", err)
	}
}

func TestWriteFileAtomic(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "k")
	for _, content := range []string{"one", "two"} {
		if err := WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(p)
		if err != nil || string(b) != content {
			t.Fatalf("read %q %v, want %q", b, err, content)
		}
	}
	st, err := os.Stat(p)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v %v", st.Mode(), err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Fatalf("temporary files left: %v", entries)
	}
}
