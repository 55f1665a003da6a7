package scenarios

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"k8s.io/client-go/rest"

	"skiff.dev/internal/client"
	corev1 "skiff.dev/proto/core/v1"
)

// The floor under http.create_vs_grpc_ratio: what the two clients and
// their servers' protocols cost with no apiserver behind them. Each load
// of http.create runs again, with the same clients, goroutines and one
// TLS connection, against a server in this process that answers a create
// with the object it was sent and does nothing else: client-go (JSON
// encoding and decoding, its HTTP/2 transport) with Go's HTTP/2 server,
// and the gRPC client with the gRPC server. Both creates are CPU-bound
// here (throughput times CPU per create is the two cores either way), so
// were the apiserver's own work for an HTTP create no dearer than for a
// gRPC one, an HTTP create would cost the gRPC create's CPU less the gRPC
// floor plus the HTTP floor; the best ratio is the gRPC create's CPU over
// that. The echo is smaller than the apiserver's answer (no uid,
// resourceVersion or managedFields), so the floor is, if anything, low.
var (
	figHTTPFloorCPU = Figure{Name: "http.floor_create_cpu_us_per_object", Unit: "us CPU/object"}
	figGRPCFloorCPU = Figure{Name: "http.grpc_floor_create_cpu_us_per_object", Unit: "us CPU/object"}
	figHTTPCeiling  = Figure{Name: "http.create_vs_grpc_ceiling", Unit: "ratio"}
)

// measureFloors runs both loads against echo servers for window each and
// adds the floors and the ceiling they set, from grpcCPU, the gRPC
// create's CPU per object measured in the same run.
func measureFloors(ctx context.Context, cfg Config, window time.Duration, grpcCPU float64, rs *Results) error {
	cert, err := selfSigned()
	if err != nil {
		return err
	}
	httpFloor, err := httpEchoLoad(ctx, cfg, window, cert)
	if err != nil {
		return fmt.Errorf("the HTTP floor: %w", err)
	}
	grpcFloor, err := grpcEchoLoad(ctx, cfg, window, cert)
	if err != nil {
		return fmt.Errorf("the gRPC floor: %w", err)
	}
	rs.Add(figHTTPFloorCPU, httpFloor.cpuPerOp(), fmt.Sprintf("client-go's creates (as http.create's) against Go's HTTP/2 server echoing them: %.0f/s", httpFloor.perSecond()))
	rs.Add(figGRPCFloorCPU, grpcFloor.cpuPerOp(), fmt.Sprintf("the gRPC client's creates (as http.grpc_create's) against a gRPC server echoing them: %.0f/s", grpcFloor.perSecond()))
	best := grpcCPU - grpcFloor.cpuPerOp() + httpFloor.cpuPerOp()
	rs.Add(figHTTPCeiling, grpcCPU/best, fmt.Sprintf("the ratio with an HTTP create's apiserver work as cheap as a gRPC one's: http.grpc_create_cpu_us_per_object %.0f / (%.0f - %.0f + %.0f)",
		grpcCPU, grpcCPU, grpcFloor.cpuPerOp(), httpFloor.cpuPerOp()))
	return nil
}

// httpEchoLoad is http.create's load against an HTTP/2 server that
// answers 201 with the body it read.
func httpEchoLoad(ctx context.Context, cfg Config, window time.Duration, cert tls.Certificate) (*loadResult, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, err := io.ReadAll(r.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusCreated)
			_, _ = w.Write(body)
		}),
		TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"h2", "http/1.1"}},
	}
	go func() { _ = srv.ServeTLS(l, "", "") }()
	defer srv.Close()
	kube, err := kubeClientFor(&rest.Config{Host: "https://" + l.Addr().String(), TLSClientConfig: rest.TLSClientConfig{CAData: caPEM(cert)}})
	if err != nil {
		return nil, err
	}
	defer kube.close()
	c := &httpCreator{kube: kube, data: string(payload(1024))}
	return c.run(ctx, cfg, window, 0)
}

// grpcEchoLoad is http.grpc_create's load against a gRPC server whose
// ConfigMaps.Create answers with the object it was sent.
func grpcEchoLoad(ctx context.Context, cfg Config, window time.Duration, cert tls.Certificate) (*loadResult, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	g := grpc.NewServer(grpc.Creds(credentials.NewTLS(&tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{client.GRPCProtocol, "h2"}})))
	corev1.RegisterConfigMapsServer(g, echoConfigMaps{})
	go func() { _ = g.Serve(l) }()
	defer g.Stop()
	conn, err := client.Dial(client.Config{Server: l.Addr().String(), CAData: caPEM(cert)})
	if err != nil {
		return nil, err
	}
	c := &apiCreator{conns: []*grpc.ClientConn{conn}, clients: []corev1.ConfigMapsClient{corev1.NewConfigMapsClient(conn)}, data: string(payload(1024))}
	defer c.close()
	return c.run(ctx, cfg, window, 0)
}

type echoConfigMaps struct {
	corev1.UnimplementedConfigMapsServer
}

func (echoConfigMaps) Create(_ context.Context, cm *corev1.ConfigMap) (*corev1.ConfigMap, error) {
	return cm, nil
}

// selfSigned is a certificate for 127.0.0.1 that is its own CA.
func selfSigned() (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "skiff-bench-floor"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true, IsCA: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}

func caPEM(cert tls.Certificate) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Certificate[0]})
}
