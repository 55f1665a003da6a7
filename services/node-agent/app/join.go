package app

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"path/filepath"
	"sync"
	"time"

	"go.uber.org/zap"
	"google.golang.org/grpc"

	"skiff.dev/internal/certs"
	"skiff.dev/internal/client"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/node-agent/agent"
)

// JoinOptions make a node join the cluster with a bootstrap token
// (--join, --token, --ca-cert-hash) and keep its certificates in
// --cert-dir, renewed before they expire (package certs).
type JoinOptions struct {
	// Join is the apiserver address to join through ("" : no join; the
	// credentials are the --tls-* files).
	Join       string
	Token      string
	CACertHash string
	CertDir    string
}

// AddFlags registers --join, --token, --ca-cert-hash and --cert-dir.
func (j *JoinOptions) AddFlags(fs *flag.FlagSet) {
	fs.StringVar(&j.Join, "join", "", "join the cluster through the apiserver at this address (host:port; the default of --server): with --token and --ca-cert-hash the node asks for its client and serving certificates (CertificateSigningRequests) and keeps them in --cert-dir, renewed before they expire")
	fs.StringVar(&j.Token, "token", "", "bootstrap token for --join (skiff-apiserver token create); only needed until the node has its client certificate")
	fs.StringVar(&j.CACertHash, "ca-cert-hash", "", "sha256:<hex> pin of the cluster CA's public key for --join (skiff-apiserver token create --print-join-command prints it)")
	fs.StringVar(&j.CertDir, "cert-dir", filepath.Join(agent.DefaultRootDir, "pki"), "where --join keeps the cluster CA (ca.crt) and the node's certificates (node-client.*, node-serving.*)")
}

// check validates the join flags against the others.
func (j *JoinOptions) check(o *Options, serverSet bool) error {
	if j.Join == "" {
		if j.Token != "" || j.CACertHash != "" {
			return errors.New("--token and --ca-cert-hash go with --join")
		}
		return nil
	}
	switch {
	case o.API.Insecure:
		return errors.New("--join asks for certificates: it cannot go with --insecure")
	case o.API.CertFile != "" || o.API.TokenFile != "":
		return errors.New("--join gets the node's certificates itself: it cannot go with --tls-cert-file or --token-file")
	case o.Serving.CertFile != "":
		return errors.New("--join gets the node's serving certificate itself: it cannot go with --serving-cert-file")
	case j.CACertHash == "" && o.API.CAFile == "":
		return errors.New("--join needs --ca-cert-hash (or --tls-ca-file) to trust the apiserver")
	}
	if j.CACertHash != "" {
		if _, err := client.ParseCACertHash(j.CACertHash); err != nil {
			return fmt.Errorf("--ca-cert-hash %w", err)
		}
	}
	if !serverSet {
		o.API.Server = j.Join
	}
	return nil
}

// joined are a joined node's certificates.
type joined struct {
	client, serving *certs.Manager
	caPEM           []byte
	log             *zap.Logger
}

// join gets the node's client certificate (with the bootstrap token,
// when it has none) and points the API config at it and the CA.
func (o *Options) join(ctx context.Context, log *zap.Logger) (*joined, error) {
	j := o.Join
	if j.Join == "" {
		return nil, nil
	}
	caFile := o.API.CAFile
	if caFile == "" {
		caFile = filepath.Join(j.CertDir, "ca.crt")
	}
	cm := certs.New(withLog(certs.NodeClient(j.CertDir, o.NodeName), log))
	bctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	caPEM, err := certs.Bootstrap(bctx, cm, j.Join, j.Token, j.CACertHash, caFile)
	if err != nil {
		return nil, fmt.Errorf("--join %s: %w", j.Join, err)
	}
	o.API.CAFile, o.API.CAData = "", caPEM
	o.API.GetClientCertificate = cm.GetClientCertificate
	sm := certs.New(withLog(certs.NodeServing(j.CertDir, o.NodeName, nil), log))
	return &joined{client: cm, serving: sm, caPEM: caPEM, log: log}, nil
}

func withLog(c certs.Config, log *zap.Logger) certs.Config {
	c.Log = log.Named("certificates")
	return c
}

// servingTLS is the NodeAgent service's TLS with the rotated serving
// certificate.
func (jn *joined) servingTLS() (*tls.Config, error) {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(jn.caPEM) {
		return nil, errors.New("the cluster CA: no PEM certificate")
	}
	return &tls.Config{MinVersion: tls.VersionTLS13, GetCertificate: jn.serving.GetCertificate, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: pool}, nil
}

// run renews the client certificate, and asks for the serving one once the
// Node is registered (the approver checks its names against the Node's
// addresses), then renews it, until ctx ends.
func (jn *joined) run(ctx context.Context, conn grpc.ClientConnInterface, node string) {
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); jn.client.Run(ctx, conn) }()
	go func() {
		defer wg.Done()
		jn.serving.SetHosts(func() []string { h, _ := nodeHosts(ctx, conn, node, jn.log, after(time.Second)); return h })
		jn.serving.Run(ctx, conn)
	}()
	wg.Wait()
}

// nodeHosts waits until the Node is registered with addresses and
// returns its name and addresses (what its serving certificate names). It
// lists the one Node and watches it from there; a failed read or a watch
// that ends is tried again after pause, and each different failure is
// logged once (a refusal that lasts would otherwise be silent, or said
// every second).
func nodeHosts(ctx context.Context, conn grpc.ClientConnInterface, node string, log *zap.Logger, pause func(context.Context) error) ([]string, error) {
	nodes := client.Nodes(conn)
	var last string
	for {
		h, err := watchNodeHosts(ctx, nodes, node)
		if h != nil {
			return h, nil
		}
		if err != nil && ctx.Err() == nil && err.Error() != last {
			last = err.Error()
			log.Warn("reading the Node for the names of its serving certificate; trying again", zap.String("node", node), zap.Error(err))
		}
		if err := pause(ctx); err != nil {
			return nil, err
		}
	}
}

// after pauses for d, or until ctx ends.
func after(d time.Duration) func(context.Context) error {
	return func(ctx context.Context) error {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
			return nil
		}
	}
}

// watchNodeHosts lists the Node and watches it from there until it has
// addresses (its hosts) or the read or the watch fails.
func watchNodeHosts(ctx context.Context, nodes *client.Resource[*corev1.Node, *corev1.NodeList], node string) ([]string, error) {
	hosts := func(n *corev1.Node) []string {
		if len(n.GetStatus().GetAddresses()) == 0 {
			return nil
		}
		h := []string{node}
		for _, a := range n.GetStatus().GetAddresses() {
			h = append(h, a.GetAddress())
		}
		return h
	}
	sel := "metadata.name=" + node
	l, err := nodes.List(ctx, &metav1.ListOptions{FieldSelector: sel})
	if err != nil {
		return nil, err
	}
	for _, n := range l.GetItems() {
		if h := hosts(n); h != nil {
			return h, nil
		}
	}
	w, err := nodes.Watch(ctx, &metav1.ListOptions{FieldSelector: sel, ResourceVersion: l.GetMetadata().GetResourceVersion()})
	if err != nil {
		return nil, err
	}
	defer w.Stop()
	for {
		ev, err := w.Next()
		if err != nil {
			return nil, err
		}
		if h := hosts(ev.Object); h != nil && ev.Type != "DELETED" {
			return h, nil
		}
	}
}
