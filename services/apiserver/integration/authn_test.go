package integration

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"skiff.dev/internal/await"
	"skiff.dev/internal/client"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/apiserver/apiserver"
	"skiff.dev/services/apiserver/apiservertest"
	"skiff.dev/services/apiserver/authn"
	"skiff.dev/services/apiserver/authn/pki"
)

// getCM reads a ConfigMap that does not exist: NotFound means the request
// got through authentication.
func getCM(t *testing.T, conn grpc.ClientConnInterface) error {
	t.Helper()
	_, err := client.ConfigMaps(conn).Get(testContext(t), "default", "absent")
	if status.Code(err) == codes.NotFound {
		return nil
	}
	return err
}

func wantUnauthenticated(t *testing.T, err error, want string) {
	t.Helper()
	if status.Code(err) != codes.Unauthenticated {
		t.Fatalf("error %v, want Unauthenticated", err)
	}
	if msg := status.Convert(err).Message(); !strings.Contains(msg, want) {
		t.Fatalf("message %q lacks %q", msg, want)
	}
}

// TestSecureServer: the apiserver with TLS and authentication on, as
// skiff-apiserver runs by default.
func TestSecureServer(t *testing.T) {
	tokenFile := filepath.Join(t.TempDir(), "tokens.csv")
	if err := os.WriteFile(tokenFile, []byte("s3cret-ci,ci-bot,u-ci,\"ci\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := apiservertest.Start(t, apiservertest.Secure(), apiservertest.WithConfig(func(c *apiserver.Config) {
		c.Authn.TokenAuthFile = tokenFile
	}))
	ctx := testContext(t)

	t.Run("the admin connection works", func(t *testing.T) {
		if err := getCM(t, s.Conn); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("no credentials: Unauthenticated; health stays public", func(t *testing.T) {
		anon := s.ConnWithToken(t, "")
		wantUnauthenticated(t, getCM(t, anon), "no credentials")
		resp, err := healthpb.NewHealthClient(anon).Check(ctx, &healthpb.HealthCheckRequest{})
		if err != nil || resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
			t.Fatalf("health without credentials: %v %v", resp, err)
		}
	})
	t.Run("plain text is refused", func(t *testing.T) {
		conn, err := client.Dial(client.Config{Server: s.Addr(), Insecure: true})
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		if err := getCM(t, conn); status.Code(err) != codes.Unavailable {
			t.Fatalf("plain text against TLS: %v, want Unavailable", err)
		}
	})
	t.Run("a certificate of the cluster CA", func(t *testing.T) {
		if err := getCM(t, s.ConnAs(t, "alice", "dev")); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("a certificate of another CA", func(t *testing.T) {
		other, _, err := pki.InitCA(t.TempDir(), time.Now())
		if err != nil {
			t.Fatal(err)
		}
		certPEM, keyPEM, err := other.Issue(pki.Request{CommonName: "mallory", Organizations: []string{"system:masters"}, Client: true}, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		conn, err := client.Dial(client.Config{Server: s.Addr(), CAData: s.CA.CertPEM, CertData: certPEM, KeyData: keyPEM})
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		if err := getCM(t, conn); status.Code(err) != codes.Unavailable && status.Code(err) != codes.Unauthenticated {
			t.Fatalf("foreign certificate: %v, want the handshake refused", err)
		}
	})
	t.Run("static token", func(t *testing.T) {
		if err := getCM(t, s.ConnWithToken(t, "s3cret-ci")); err != nil {
			t.Fatal(err)
		}
		err := getCM(t, s.ConnWithToken(t, "s3cret-nope"))
		wantUnauthenticated(t, err, "not known")
		if strings.Contains(err.Error(), "s3cret-nope") {
			t.Fatalf("the error echoes the token: %v", err)
		}
	})
	t.Run("service-account tokens", func(t *testing.T) {
		sas := client.ServiceAccounts(s.Conn)
		sa, err := sas.Create(ctx, &corev1.ServiceAccount{Metadata: &metav1.ObjectMeta{Namespace: "default", Name: "builder"}})
		if err != nil {
			t.Fatal(err)
		}
		uid := sa.GetMetadata().GetUid()
		tok := s.ServiceAccountToken(t, "default", "builder", uid, time.Hour)
		if err := getCM(t, s.ConnWithToken(t, tok)); err != nil {
			t.Fatalf("valid token: %v", err)
		}
		wantUnauthenticated(t, getCM(t, s.ConnWithToken(t, s.ServiceAccountToken(t, "default", "builder", uid, -time.Minute))), "expired")

		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		forged, err := authn.SignServiceAccountToken(key, "", "default", "builder", uid, time.Now(), time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		wantUnauthenticated(t, getCM(t, s.ConnWithToken(t, forged)), "not signed by this cluster")

		if _, err := sas.Delete(ctx, &metav1.DeleteRequest{Namespace: "default", Name: "builder"}); err != nil {
			t.Fatal(err)
		}
		// The apiserver learns of the deletion through its informer: wait
		// for it, within a deadline.
		conn := s.ConnWithToken(t, tok)
		refusedFor := func(want string) func() (bool, string) {
			return func() (bool, string) {
				err := getCM(t, conn)
				return status.Code(err) == codes.Unauthenticated && strings.Contains(status.Convert(err).Message(), want), fmt.Sprint(err)
			}
		}
		var changed await.Signal
		changed.Until(t, 10*time.Second, "the token of a deleted service account refused", ctx.Done(), refusedFor("no longer exists"))
		if _, err := sas.Create(ctx, &corev1.ServiceAccount{Metadata: &metav1.ObjectMeta{Namespace: "default", Name: "builder"}}); err != nil {
			t.Fatal(err)
		}
		changed.Until(t, 10*time.Second, "the token of a service account made again refused", ctx.Done(), refusedFor("made again"))
	})
}

func TestAnonymousAuth(t *testing.T) {
	s := apiservertest.Start(t, apiservertest.Secure(), apiservertest.WithConfig(func(c *apiserver.Config) {
		c.Authn.AnonymousAuth = true
	}))
	if err := getCM(t, s.ConnWithToken(t, "")); err != nil {
		t.Fatalf("anonymous with --anonymous-auth: %v", err)
	}
	wantUnauthenticated(t, getCM(t, s.ConnWithToken(t, "bad")), "not known")
}

// TestExpiredClientCertificate: a certificate of the cluster CA that has
// expired still passes the TLS handshake, so the client learns why it is
// refused: every call is Unauthenticated with the user and the expiry, and
// the apiserver logs it (subject and expiry) once. Without this the
// handshake refused the certificate and the client saw a broken pipe.
func TestExpiredClientCertificate(t *testing.T) {
	core, logs := observer.New(zap.InfoLevel)
	s := apiservertest.Start(t, apiservertest.Secure(), apiservertest.WithConfig(func(c *apiserver.Config) {
		c.Logger = zap.New(core)
	}))
	cfg, err := s.ConfigFor(-time.Hour, "erin", "dev")
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.X509KeyPair(cfg.CertData, cfg.KeyData)
	if err != nil {
		t.Fatal(err)
	}
	expiry := pair.Leaf.NotAfter.UTC().Format(time.RFC3339)
	conn, err := client.Dial(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for range 2 { // the same connection: refused each time, logged once
		wantUnauthenticated(t, getCM(t, conn), `the client certificate of "erin" expired at `+expiry)
	}
	found := logs.FilterField(zap.String("subject", pair.Leaf.Subject.String()))
	if found.Len() != 1 {
		t.Fatalf("%d log entries name the certificate's subject %q, want 1; all entries: %v", found.Len(), pair.Leaf.Subject, logs.All())
	}
	entry := found.All()[0]
	if entry.Level < zap.InfoLevel || !strings.Contains(entry.Message, "expired") || entry.ContextMap()["notAfter"] != expiry {
		t.Fatalf("log entry %s %q %v, want one saying the certificate expired, with notAfter %s", entry.Level, entry.Message, entry.ContextMap(), expiry)
	}
}
