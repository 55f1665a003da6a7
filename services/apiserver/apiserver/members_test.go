package apiserver

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net"
	"net/url"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"skiff.dev/services/apiserver/authn"
	"skiff.dev/services/apiserver/authn/pki"
)

// TestPeerListenURL: etcd binds IPs only, so a peer URL naming a host
// (apiserver2 in compose, a DNS name on real machines) listens on every
// interface, on its port and scheme.
func TestPeerListenURL(t *testing.T) {
	for in, want := range map[string]string{
		"https://10.0.0.7:2380":   "https://10.0.0.7:2380",
		"https://[fd00::7]:2380":  "https://[fd00::7]:2380",
		"https://apiserver2:2380": "https://0.0.0.0:2380",
		"http://cp1.example:2381": "http://0.0.0.0:2381",
	} {
		u, err := url.Parse(in)
		if err != nil {
			t.Fatal(err)
		}
		if got := peerListenURL(*u); got.String() != want {
			t.Errorf("%s: listens on %s, want %s", in, got.String(), want)
		}
	}
}

// TestPeerCertificateRenewedWhileRunning: a member's etcd peer certificate
// (one year, like the other leaf certificates) is issued again by the
// hourly renewal once it is within 30 days of expiry, and etcd's peer
// port shows the new one from the next handshake: a member that runs for
// a year keeps talking to its peers.
func TestPeerCertificateRenewedWhileRunning(t *testing.T) {
	var clock atomic.Pointer[time.Time]
	start := time.Now()
	clock.Store(&start)
	s, err := New(Config{DataDir: t.TempDir(), Listen: "127.0.0.1:0", EtcdUnsafeNoFsync: true,
		Authn: authn.Options{Enabled: true}, Cluster: ClusterOptions{Name: "m1", Token: "tok"},
		Now: func() time.Time { return *clock.Load() }})
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	defer func() { stop(); <-done }()
	certPEM, keyPEM, err := s.tls.CA.Issue(pki.Request{CommonName: "peer-test", Client: true}, start)
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	peerURL := s.etcd.etcd.Config().AdvertisePeerUrls[0]
	if peerURL.Scheme != "https" {
		t.Fatalf("peer URL %s: want https", peerURL.String())
	}
	shown := func() *x509.Certificate {
		t.Helper()
		// The member's certificate is read, not verified: after the
		// renewal it is dated from the test's clock, a year ahead.
		c, err := tls.Dial("tcp", peerURL.Host, &tls.Config{Certificates: []tls.Certificate{pair}, InsecureSkipVerify: true})
		if err != nil {
			t.Fatalf("handshake with the peer port: %v", err)
		}
		defer c.Close()
		return c.ConnectionState().PeerCertificates[0]
	}
	first := shown()
	if left := first.NotAfter.Sub(start); left < 300*24*time.Hour {
		t.Fatalf("the peer certificate is valid for %v only", left)
	}

	s.renewCertificates() // nothing is due
	if again := shown(); !again.Equal(first) {
		t.Fatalf("the peer certificate was renewed with %v left", first.NotAfter.Sub(start))
	}

	later := first.NotAfter.Add(-20 * 24 * time.Hour)
	clock.Store(&later)
	s.renewCertificates()
	renewed := shown()
	if renewed.Equal(first) {
		t.Fatalf("the peer certificate expiring %s was not renewed at %s", first.NotAfter, later)
	}
	if renewed.NotAfter.Sub(later) < 300*24*time.Hour {
		t.Fatalf("the renewed peer certificate expires %s, %v after the renewal", renewed.NotAfter, renewed.NotAfter.Sub(later))
	}
	if renewed.Subject.CommonName != first.Subject.CommonName || !slices.EqualFunc(renewed.IPAddresses, first.IPAddresses, net.IP.Equal) {
		t.Errorf("renewed for %s %v, want %s %v", renewed.Subject.CommonName, renewed.IPAddresses, first.Subject.CommonName, first.IPAddresses)
	}
}
