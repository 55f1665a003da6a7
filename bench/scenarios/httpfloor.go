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
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"k8s.io/client-go/rest"

	"skiff.dev/internal/client"
	"skiff.dev/internal/manifest"
	corev1 "skiff.dev/proto/core/v1"
)

// The floor under http.create_vs_grpc_ratio: what the two clients and
// their servers' protocols cost with no apiserver behind them. Each load
// of http.create runs again, with the same clients, goroutines and one
// TLS connection, against a server in this process that reads a create
// and answers it with what the apiserver answered the load's first create
// (uid, resourceVersion, creationTimestamp and, over HTTP, managedFields
// included), and does nothing else but what its protocol must: client-go
// (JSON encoding and decoding, its HTTP/2 transport) with Go's HTTP/2
// server, which decodes each create's JSON and encodes its answer with the
// apiserver's codec, and the gRPC client with the gRPC server, which
// decodes and encodes protobuf. (Until the later session of 2026-11-27
// the HTTP server wrote the answer's bytes as they were and decoded
// nothing, which left the JSON an HTTP API has to read and write out of
// its floor while the gRPC floor had its protobuf.) Both creates are CPU-bound
// here (throughput times CPU per create is the two cores either way), so
// were the apiserver's own work for an HTTP create no dearer than for a
// gRPC one, an HTTP create would cost the gRPC create's CPU less the gRPC
// floor plus the HTTP floor; the best ratio is the gRPC create's CPU over
// that.
var (
	figHTTPFloorCPU = Figure{Name: "http.floor_create_cpu_us_per_object", Unit: "us CPU/object"}
	figGRPCFloorCPU = Figure{Name: "http.grpc_floor_create_cpu_us_per_object", Unit: "us CPU/object"}
	figHTTPCeiling  = Figure{Name: "http.create_vs_grpc_ceiling", Unit: "ratio"}
)

// echoFloors are http.create's two loads against echo servers: each
// round of the scenario runs them beside the real loads, so the floors
// and the creates they bound see the same machine (its speed drifts over
// tens of seconds: one window each after the rounds made the ceiling
// swing from 0.62 to 0.74 between two runs).
type echoFloors struct {
	http         *httpCreator
	grpc         *apiCreator
	closers      []func()
	httpT, grpcT loadResult
}

// startEchoFloors starts both echo servers, answering httpAnswer and
// grpcAnswer, and their clients.
func startEchoFloors(httpAnswer []byte, grpcAnswer *corev1.ConfigMap) (_ *echoFloors, err error) {
	f := &echoFloors{}
	defer func() {
		if err != nil {
			f.close()
		}
	}()
	cert, err := selfSigned()
	if err != nil {
		return nil, err
	}
	answer := &corev1.ConfigMap{}
	if _, err := manifest.UnmarshalJSON(httpAnswer, answer, manifest.JSONOptions{}); err != nil {
		return nil, fmt.Errorf("the HTTP floor: the apiserver's answer: %w", err)
	}
	httpAddr, stop, err := httpEchoServer(cert, jsonCreates(answer))
	if err != nil {
		return nil, fmt.Errorf("the HTTP floor: %w", err)
	}
	f.closers = append(f.closers, stop)
	grpcAddr, stop, err := grpcEchoServer(cert, grpcAnswer)
	if err != nil {
		return nil, fmt.Errorf("the gRPC floor: %w", err)
	}
	f.closers = append(f.closers, stop)
	kube, err := kubeClientFor(&rest.Config{Host: "https://" + httpAddr, TLSClientConfig: rest.TLSClientConfig{CAData: caPEM(cert)}})
	if err != nil {
		return nil, err
	}
	f.http = &httpCreator{kube: kube, data: string(payload(1024))}
	f.closers = append(f.closers, f.http.close)
	conn, err := client.Dial(client.Config{Server: grpcAddr, CAData: caPEM(cert)})
	if err != nil {
		return nil, err
	}
	f.grpc = &apiCreator{conns: []*grpc.ClientConn{conn}, clients: []corev1.ConfigMapsClient{corev1.NewConfigMapsClient(conn)}, data: string(payload(1024))}
	f.closers = append(f.closers, f.grpc.close)
	return f, nil
}

// close closes the clients, then the servers.
func (f *echoFloors) close() {
	for i := len(f.closers) - 1; i >= 0; i-- {
		f.closers[i]()
	}
}

// runHTTP and runGRPC run one round of each floor's load, adding it to
// the floor's total.
func (f *echoFloors) runHTTP(ctx context.Context, cfg Config, window time.Duration, round int) error {
	r, err := f.http.run(ctx, cfg, window, round)
	if err != nil {
		return fmt.Errorf("the HTTP floor: %w", err)
	}
	f.httpT.add(r)
	return nil
}

func (f *echoFloors) runGRPC(ctx context.Context, cfg Config, window time.Duration, round int) error {
	r, err := f.grpc.run(ctx, cfg, window, round)
	if err != nil {
		return fmt.Errorf("the gRPC floor: %w", err)
	}
	f.grpcT.add(r)
	return nil
}

// report adds the floors and the ceiling they set, from grpcCPU, the gRPC
// create's CPU per object measured in the same rounds.
func (f *echoFloors) report(grpcCPU float64, rs *Results) {
	httpFloor, grpcFloor := &f.httpT, &f.grpcT
	rs.Add(figHTTPFloorCPU, httpFloor.cpuPerOp(), fmt.Sprintf("client-go's creates (as http.create's) against Go's HTTP/2 server decoding each one's JSON and answering the apiserver's answer, encoded, with the apiserver's codec, and doing nothing else, in each round after the HTTP creates: %.0f/s", httpFloor.perSecond()))
	rs.Add(figGRPCFloorCPU, grpcFloor.cpuPerOp(), fmt.Sprintf("the gRPC client's creates (as http.grpc_create's) against a gRPC server answering each with the apiserver's answer, in each round after the gRPC creates: %.0f/s", grpcFloor.perSecond()))
	best := grpcCPU - grpcFloor.cpuPerOp() + httpFloor.cpuPerOp()
	rs.Add(figHTTPCeiling, grpcCPU/best, fmt.Sprintf("the ratio with an HTTP create's apiserver work, beyond its JSON, as cheap as a gRPC one's: http.grpc_create_cpu_us_per_object %.0f / (%.0f - %.0f + %.0f)",
		grpcCPU, grpcCPU, grpcFloor.cpuPerOp(), httpFloor.cpuPerOp()))
}

// An echoAnswer is what an echo server answers to a request's body; done,
// if not nil, runs once the answer is written.
type echoAnswer func(body []byte) (answer []byte, done func(), err error)

// fixedAnswer answers every request with answer's bytes.
func fixedAnswer(answer []byte) echoAnswer {
	return func([]byte) ([]byte, func(), error) { return answer, nil, nil }
}

// jsonCreates decodes each create's body into a ConfigMap and answers
// answer, encoded, as the apiserver's HTTP API does (its codec, Warn's
// field validation, the answer into a reused buffer).
func jsonCreates(answer *corev1.ConfigMap) echoAnswer {
	bufs := sync.Pool{New: func() any { b := make([]byte, 0, 4<<10); return &b }}
	return func(body []byte) ([]byte, func(), error) {
		var cm corev1.ConfigMap
		if _, err := manifest.UnmarshalJSON(body, &cm, manifest.JSONOptions{FieldValidation: manifest.FieldValidationWarn}); err != nil {
			return nil, nil, err
		}
		bp := bufs.Get().(*[]byte)
		*bp = manifest.AppendJSON((*bp)[:0], answer)
		return *bp, func() { bufs.Put(bp) }, nil
	}
}

// httpEchoServer serves HTTP/2 that reads a request's body and answers
// with what answer makes of it: 201 to a POST (a create), 200 to anything
// else.
func httpEchoServer(cert tls.Certificate, answer echoAnswer) (addr string, stop func(), err error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, err := io.ReadAll(r.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			out, done, err := answer(body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			if done != nil {
				defer done()
			}
			w.Header().Set("Content-Type", "application/json")
			code := http.StatusOK
			if r.Method == http.MethodPost {
				code = http.StatusCreated
			}
			w.WriteHeader(code)
			_, _ = w.Write(out)
		}),
		TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"h2", "http/1.1"}},
	}
	go func() { _ = srv.ServeTLS(l, "", "") }()
	return l.Addr().String(), func() { _ = srv.Close() }, nil
}

// grpcEchoServer serves gRPC whose ConfigMaps.Create answers with answer.
func grpcEchoServer(cert tls.Certificate, answer *corev1.ConfigMap) (addr string, stop func(), err error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	g := grpc.NewServer(grpc.Creds(credentials.NewTLS(&tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{client.GRPCProtocol, "h2"}})))
	corev1.RegisterConfigMapsServer(g, echoConfigMaps{answer: answer})
	go func() { _ = g.Serve(l) }()
	return l.Addr().String(), g.Stop, nil
}

type echoConfigMaps struct {
	corev1.UnimplementedConfigMapsServer
	answer *corev1.ConfigMap
}

func (e echoConfigMaps) Create(context.Context, *corev1.ConfigMap) (*corev1.ConfigMap, error) {
	return e.answer, nil
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
