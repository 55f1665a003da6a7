package authn

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
)

// The authenticator runs on every request: these measure its cost once a
// connection's certificate or a token is known (cached).

func benchMaterial(b *testing.B) *Material {
	o := Options{Enabled: true, PKIDir: filepath.Join(b.TempDir(), "pki")}
	m, err := o.Material("", time.Now())
	if err != nil {
		b.Fatal(err)
	}
	return m
}

func BenchmarkAuthenticateCertificate(b *testing.B) {
	m := benchMaterial(b)
	pair := issue(b, m.CA, "alice", []string{"dev"}, 0, time.Now())
	// As Material.ServerTLS leaves it: the chain checked by
	// VerifyConnection, not in VerifiedChains.
	ctx := peer.NewContext(context.Background(), &peer.Peer{AuthInfo: credentials.TLSInfo{
		State: tls.ConnectionState{PeerCertificates: []*x509.Certificate{pair.Leaf}}}})
	a := New(Config{ClientCAs: m.ClientCAs})
	b.ReportAllocs()
	for b.Loop() {
		if u, err := a.Authenticate(ctx, nil); err != nil || u.Name != "alice" {
			b.Fatal(u, err)
		}
	}
}

func BenchmarkAuthenticateServiceAccountToken(b *testing.B) {
	m := benchMaterial(b)
	tok, err := SignServiceAccountToken(m.ServiceAccountKey, "", "ns", "sa", "uid-1", time.Now(), time.Hour)
	if err != nil {
		b.Fatal(err)
	}
	a := New(Config{ServiceAccountKey: &m.ServiceAccountKey.PublicKey,
		ServiceAccounts: func(context.Context, string, string) (string, bool, error) { return "uid-1", true, nil }})
	ctx := metadata.NewIncomingContext(context.Background(), metadata.Pairs("authorization", "Bearer "+tok))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := a.Authenticate(ctx, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkVerifyClientChain is what the handshake's check of a client
// certificate costs, and again the first request of each connection.
func BenchmarkVerifyClientChain(b *testing.B) {
	m := benchMaterial(b)
	pair := issue(b, m.CA, "alice", []string{"dev"}, 0, time.Now())
	certs := []*x509.Certificate{pair.Leaf}
	now := time.Now()
	b.ReportAllocs()
	for b.Loop() {
		if err := verifyClientChain(m.ClientCAs, certs, now); err != nil {
			b.Fatal(err)
		}
	}
}
