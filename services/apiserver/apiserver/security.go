package apiserver

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"net"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/test/bufconn"

	"skiff.dev/services/apiserver/server"
	"skiff.dev/services/apiserver/user"
)

// The apiserver talks to itself (its RBAC authorizer and admission plugins
// watch roles, namespaces, quotas... through the same API as everyone
// else) over an in-memory connection, authenticated by a token made at
// start that only this process knows: user system:apiserver, in
// system:masters, as Kubernetes' loopback client.

// postStartHook runs once the server serves; it returns when what it
// started is ready (an informer synced), and keeps running until ctx ends.
// The server reports SERVING only after every hook returned nil.
type postStartHook struct {
	name string
	run  func(ctx context.Context) error
}

type loopbackCreds struct{ token string }

func (c loopbackCreds) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": "Bearer " + c.token}, nil
}

func (loopbackCreds) RequireTransportSecurity() bool { return false }

// loopbackAuthenticator recognises the loopback token before asking the
// configured authenticator (nil: authentication is off).
type loopbackAuthenticator struct {
	token string
	next  server.Authenticator
}

var loopbackUser = &user.Info{Name: user.APIServer, Groups: []string{user.Masters, user.AllAuthenticated}, Authenticator: "loopback"}

func (a *loopbackAuthenticator) Authenticate(ctx context.Context, ri *server.RequestInfo) (*user.Info, error) {
	for _, v := range metadata.ValueFromIncomingContext(ctx, "authorization") {
		// Constant time: the token is the apiserver's own key to itself.
		if tok, ok := strings.CutPrefix(v, "Bearer "); ok && subtle.ConstantTimeCompare([]byte(tok), []byte(a.token)) == 1 {
			return loopbackUser, nil
		}
	}
	if a.next == nil {
		return user.UnsecuredInfo, nil
	}
	return a.next.Authenticate(ctx, ri)
}

// newLoopback makes the in-memory listener and the client connection to it.
func (s *Server) newLoopback(creds credentials.TransportCredentials) error {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return err
	}
	s.loopbackToken = hex.EncodeToString(b[:])
	s.loopbackLis = bufconn.Listen(1 << 20)
	conn, err := grpc.NewClient("passthrough:///apiserver-loopback",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return s.loopbackLis.DialContext(ctx) }),
		grpc.WithTransportCredentials(creds),
		grpc.WithPerRPCCredentials(loopbackCreds{token: s.loopbackToken}),
	)
	if err != nil {
		return fmt.Errorf("loopback client: %w", err)
	}
	s.loopback = conn
	return nil
}

// Loopback is a connection to this server as system:apiserver (tests and
// in-process plugins).
func (s *Server) Loopback() grpc.ClientConnInterface { return s.loopback }

// wireSecurity builds authentication, fairness, authorization, admission
// and audit from the Config and hooks them into the chain. Each part lives
// in its own package; see wire_*.go.
func (s *Server) wireSecurity(chain *server.Chain) error {
	authn, err := s.wireAuthn()
	if err != nil {
		return err
	}
	chain.Authenticator = &loopbackAuthenticator{token: s.loopbackToken, next: authn}
	if chain.Limiter, err = s.wireFlowControl(); err != nil {
		return err
	}
	if chain.Authorizer, err = s.wireAuthz(); err != nil {
		return err
	}
	if err := s.wireAdmission(); err != nil {
		return err
	}
	if chain.Auditor, err = s.wireAudit(); err != nil {
		return err
	}
	return nil
}
