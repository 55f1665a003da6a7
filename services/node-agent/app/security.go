package app

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"os"
	"slices"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
)

// The NodeAgent service (container logs, which the apiserver proxies for
// Pods.Logs) is served over TLS with a certificate of the cluster CA that
// names the Node (a SAN equal to --node-name: the apiserver verifies it
// so), and only the apiserver may call it: a client certificate of the
// cluster CA for user system:apiserver or a member of system:masters.
// With --insecure both the apiserver connection and this service are
// plain text.

// Who may call the NodeAgent service.
const (
	apiserverUser = "system:apiserver"
	mastersGroup  = "system:masters"
)

// ServingTLS is the NodeAgent service's TLS configuration.
type ServingTLS struct {
	// CertFile and KeyFile are the serving certificate; empty: the client
	// certificate (--tls-cert-file), which `skiff-apiserver certs issue
	// --san <node>` makes good for both.
	CertFile, KeyFile string
	// ClientCAFile verifies the apiserver's client certificate; empty:
	// --tls-ca-file (the cluster CA).
	ClientCAFile string
}

// AddFlags registers --serving-cert-file, --serving-key-file and
// --serving-client-ca-file.
func (s *ServingTLS) AddFlags(fs *flag.FlagSet) {
	fs.StringVar(&s.CertFile, "serving-cert-file", "", "serving certificate of the NodeAgent service, from the cluster CA with the node name as a SAN (default: --tls-cert-file)")
	fs.StringVar(&s.KeyFile, "serving-key-file", "", "private key of --serving-cert-file (default: --tls-key-file)")
	fs.StringVar(&s.ClientCAFile, "serving-client-ca-file", "", "CA that verifies the apiserver's client certificate on the NodeAgent service (default: --tls-ca-file)")
}

// serverOptions are the NodeAgent server's options: TLS that requires a
// client certificate and an interceptor that admits only the apiserver;
// nothing with o.API.Insecure.
func (o *Options) serverOptions(jn *joined) ([]grpc.ServerOption, error) {
	s := o.Serving
	if o.API.Insecure {
		if s.CertFile != "" || s.ClientCAFile != "" {
			return nil, errors.New("--insecure serves the NodeAgent service in plain text: it cannot go with --serving-cert-file or --serving-client-ca-file")
		}
		return nil, nil
	}
	if jn != nil {
		tc, err := jn.servingTLS()
		if err != nil {
			return nil, err
		}
		return onlyAPIServerOptions(credentials.NewTLS(tc)), nil
	}
	if (s.CertFile == "") != (s.KeyFile == "") {
		return nil, errors.New("--serving-cert-file and --serving-key-file go together")
	}
	if s.CertFile == "" {
		s.CertFile, s.KeyFile = o.API.CertFile, o.API.KeyFile
	}
	if s.ClientCAFile == "" {
		s.ClientCAFile = o.API.CAFile
	}
	if s.CertFile == "" {
		return nil, errors.New("--serving-cert-file: the NodeAgent service needs a serving certificate (or --tls-cert-file good for serving too: skiff-apiserver certs issue --cn system:node:<node> --o system:nodes --san <node>), or --insecure")
	}
	if s.ClientCAFile == "" {
		return nil, errors.New("--serving-client-ca-file: the NodeAgent service needs the CA of the apiserver's client certificate (or --tls-ca-file), or --insecure")
	}
	pair, err := tls.LoadX509KeyPair(s.CertFile, s.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("--serving-cert-file/--serving-key-file: %w", err)
	}
	b, err := os.ReadFile(s.ClientCAFile)
	if err != nil {
		return nil, fmt.Errorf("--serving-client-ca-file: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		return nil, fmt.Errorf("--serving-client-ca-file %s: no PEM certificate found", s.ClientCAFile)
	}
	creds := credentials.NewTLS(&tls.Config{
		MinVersion:   tls.VersionTLS13,
		Certificates: []tls.Certificate{pair},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    pool,
	})
	return onlyAPIServerOptions(creds), nil
}

// onlyAPIServerOptions serve with creds and admit only the apiserver.
func onlyAPIServerOptions(creds credentials.TransportCredentials) []grpc.ServerOption {
	return []grpc.ServerOption{
		grpc.Creds(creds),
		grpc.ChainUnaryInterceptor(func(ctx context.Context, req any, info *grpc.UnaryServerInfo, next grpc.UnaryHandler) (any, error) {
			if err := onlyAPIServer(ctx, info.FullMethod); err != nil {
				return nil, err
			}
			return next(ctx, req)
		}),
		grpc.ChainStreamInterceptor(func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, next grpc.StreamHandler) error {
			if err := onlyAPIServer(ss.Context(), info.FullMethod); err != nil {
				return err
			}
			return next(srv, ss)
		}),
	}
}

// onlyAPIServer admits the apiserver (system:apiserver) and system:masters.
func onlyAPIServer(ctx context.Context, method string) error {
	var leaf *x509.Certificate
	if p, ok := peer.FromContext(ctx); ok {
		if ti, ok := p.AuthInfo.(credentials.TLSInfo); ok && len(ti.State.VerifiedChains) > 0 {
			leaf = ti.State.VerifiedChains[0][0]
		}
	}
	if leaf == nil {
		return status.Error(codes.Unauthenticated, "node agent: a client certificate of the cluster CA is required")
	}
	if leaf.Subject.CommonName == apiserverUser || slices.Contains(leaf.Subject.Organization, mastersGroup) {
		return nil
	}
	return status.Errorf(codes.PermissionDenied, "node agent: user %q may not call %s: only the apiserver (%s) or members of %s may", leaf.Subject.CommonName, method, apiserverUser, mastersGroup)
}
