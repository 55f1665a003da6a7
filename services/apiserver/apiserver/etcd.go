package apiserver

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"skiff.dev/services/apiserver/authn/pki"
	"skiff.dev/services/apiserver/storage"
)

type embeddedEtcd struct {
	etcd      *embed.Etcd
	clientURL string
	// closing tells etcd's log core that the shutdown began (etcdLogCore).
	closing *atomic.Bool
}

// freeLoopbackURL reserves a free loopback port for etcd's listeners.
func freeLoopbackURL() (url.URL, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return url.URL{}, err
	}
	defer l.Close()
	return url.URL{Scheme: "http", Host: l.Addr().String()}, nil
}

// etcdClientPKIDir, under --data-dir, holds the embedded etcd's own CA
// and the certificates of its client port (etcdClientPKI).
const etcdClientPKIDir = "etcd-pki"

// etcdClientPKI makes the embedded etcd's client port (loopback) TLS that
// requires a client certificate of a CA of its own, in dir: only this
// apiserver holds one (the keys readable by their owner only), so no other
// process on the machine, another user or a pod on the host network,
// reads or writes the cluster's state past the apiserver's authentication
// and authorization. The CA is not the cluster's: a node's or a user's
// certificate from that one opens nothing here (kubeadm keeps etcd's CA
// apart likewise). It returns etcd's side and the client's.
func etcdClientPKI(dir string, now time.Time) (server, client transport.TLSInfo, err error) {
	ca, _, err := pki.InitCA(dir, now)
	if err != nil {
		return server, client, fmt.Errorf("the embedded etcd's CA in %s: %w", dir, err)
	}
	pairs := []struct {
		name string
		req  pki.Request
	}{
		// As long as their CA: etcd reads the files at its start and
		// nothing renews them while it runs; they serve loopback only.
		{"server", pki.Request{CommonName: "etcd", Hosts: []string{"127.0.0.1", "localhost"}, Server: true, Validity: pki.CAValidity}},
		{"client", pki.Request{CommonName: "skiff-apiserver", Client: true, Validity: pki.CAValidity}},
	}
	for _, p := range pairs {
		if _, err := ca.EnsurePair(dir, p.name, p.req, now, 30*24*time.Hour); err != nil {
			return server, client, fmt.Errorf("the embedded etcd's %s certificate in %s: %w", p.name, dir, err)
		}
	}
	server = transport.TLSInfo{CertFile: filepath.Join(dir, "server.crt"), KeyFile: filepath.Join(dir, "server.key"),
		TrustedCAFile: filepath.Join(dir, pki.CACertFile), ClientCertAuth: true}
	return server, etcdClientFiles(dir), nil
}

func etcdClientFiles(dir string) transport.TLSInfo {
	return transport.TLSInfo{CertFile: filepath.Join(dir, "client.crt"), KeyFile: filepath.Join(dir, "client.key"), TrustedCAFile: filepath.Join(dir, pki.CACertFile)}
}

// EmbeddedEtcdClientTLS names the files of the client TLS of the embedded
// etcd of an apiserver whose --data-dir is dataDir (written at its start):
// what a tool run as the same user on that machine gives its etcd client.
func EmbeddedEtcdClientTLS(dataDir string) transport.TLSInfo {
	return etcdClientFiles(filepath.Join(dataDir, etcdClientPKIDir))
}

// leaderLostGrace is how long after etcd's leader changed a write sent
// before the change is still waited for (storage.LeaderGuard): the new
// leader commits what its predecessor had replicated with its first entry,
// within a few heartbeats (100 ms each).
const leaderLostGrace = 500 * time.Millisecond

// peerListenURL is where etcd listens for the peer URL it advertises: the
// same, but every interface when the URL names a host rather than an IP
// (etcd binds only IPs: "expected IP in URL for binding").
func peerListenURL(u url.URL) url.URL {
	if net.ParseIP(u.Hostname()) == nil {
		u.Host = net.JoinHostPort("0.0.0.0", u.Port())
	}
	return u
}

// isAddrInUse says whether err is a listener's "address already in use".
func isAddrInUse(err error) bool {
	return errors.Is(err, syscall.EADDRINUSE) || strings.Contains(err.Error(), "address already in use")
}

// connectEtcd starts the embedded etcd in DataDir/etcd, or connects to
// the external cluster in EtcdServers.
func (s *Server) connectEtcd() error {
	if len(s.cfg.EtcdServers) > 0 {
		var tlsCfg *tls.Config
		if c := s.cfg; c.EtcdCAFile != "" || c.EtcdCertFile != "" || c.EtcdKeyFile != "" {
			if (c.EtcdCertFile == "") != (c.EtcdKeyFile == "") {
				return errors.New("--etcd-certfile and --etcd-keyfile go together")
			}
			info := transport.TLSInfo{CertFile: c.EtcdCertFile, KeyFile: c.EtcdKeyFile, TrustedCAFile: c.EtcdCAFile}
			var err error
			if tlsCfg, err = info.ClientConfig(); err != nil {
				return fmt.Errorf("--etcd-cafile/--etcd-certfile/--etcd-keyfile: %w", err)
			}
		}
		client, err := clientv3.New(clientv3.Config{
			Endpoints:   s.cfg.EtcdServers,
			TLS:         tlsCfg,
			DialTimeout: s.cfg.EtcdDialTimeout,
			DialOptions: s.tracing.DialOptions(),
			Logger:      s.log.Named("etcd-client").WithOptions(zap.IncreaseLevel(zapcore.WarnLevel)),
		})
		if err != nil {
			return fmt.Errorf("connecting to etcd %v: %w", s.cfg.EtcdServers, err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), s.cfg.EtcdDialTimeout)
		defer cancel()
		if _, err := client.Status(ctx, s.cfg.EtcdServers[0]); err != nil {
			client.Close()
			return fmt.Errorf("etcd %s does not answer: %w", s.cfg.EtcdServers[0], err)
		}
		s.client, s.maintClient = client, client
		s.watcher = storage.ClientWatcher{Client: client}
		return nil
	}
	if s.cfg.DataDir == "" {
		return fmt.Errorf("--data-dir is required for the embedded etcd (or give --etcd-servers)")
	}
	cfg := embed.NewConfig()
	cfg.Name = s.cfg.Cluster.memberName()
	cfg.Dir = filepath.Join(s.cfg.DataDir, "etcd")
	cfg.Logger = "zap"
	cfg.LogLevel = "warn"
	closing := new(atomic.Bool)
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(s.log.Named("etcd").WithOptions(zap.IncreaseLevel(zapcore.WarnLevel),
		zap.WrapCore(func(c zapcore.Core) zapcore.Core { return etcdLogCore{Core: c, closing: closing} })))
	cfg.QuotaBackendBytes = s.cfg.QuotaBackendBytes
	cfg.UnsafeNoFsync = s.cfg.EtcdUnsafeNoFsync
	cfg.MaxRequestBytes = 2 << 20
	cfg.ListenMetricsUrls = nil
	var e *embed.Etcd
	var clientURL url.URL
	peerTLS, err := s.peerTLS(cfg)
	if err != nil {
		return err
	}
	// The real clock, not Config.Now (a test's fixed time for objects):
	// the TLS handshakes check the certificates against it.
	if cfg.ClientTLSInfo, s.etcdClientTLS, err = etcdClientPKI(filepath.Join(s.cfg.DataDir, etcdClientPKIDir), time.Now()); err != nil {
		return err
	}
	// A member's peer URL is fixed (--etcd-peer-url), chosen by
	// joinCluster, or, on one host, a free loopback port.
	var peerURL *url.URL
	if s.join != nil {
		peerURL = &s.join.peerURL
		cfg.InitialCluster = s.join.answer.InitialCluster
		cfg.ClusterState = embed.ClusterStateFlagExisting
	} else if s.cfg.Cluster.PeerURL != "" {
		if peerURL, err = s.cfg.Cluster.parsePeerURL(peerTLS); err != nil {
			return err
		}
	}
	// The free ports are released before etcd binds them: another process
	// may take one in between (parallel test packages do). Try new ones.
	for attempt := 1; ; attempt++ {
		var err error
		if clientURL, err = freeLoopbackURL(); err != nil {
			return err
		}
		clientURL.Scheme = "https"
		peer := peerURL
		if peer == nil {
			u, err := freeLoopbackURL()
			if err != nil {
				return err
			}
			if peerTLS {
				u.Scheme = "https"
			}
			peer = &u
		}
		cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{clientURL}, []url.URL{clientURL}
		cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{peerListenURL(*peer)}, []url.URL{*peer}
		if s.join == nil {
			cfg.InitialCluster = cfg.Name + "=" + peer.String()
		}
		e, err = embed.StartEtcd(cfg)
		if err == nil {
			break
		}
		if attempt == 5 || !isAddrInUse(err) {
			return fmt.Errorf("starting embedded etcd in %s: %w", cfg.Dir, err)
		}
		s.log.Warn("a loopback port for the embedded etcd was taken meanwhile; trying others", zap.Error(err))
	}
	ee := &embeddedEtcd{etcd: e, clientURL: clientURL.String(), closing: closing}
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		ee.close()
		return fmt.Errorf("embedded etcd failed: %w", err)
	case <-time.After(60 * time.Second):
		ee.close()
		return fmt.Errorf("embedded etcd in %s did not become ready within 60s", cfg.Dir)
	}
	s.etcd = ee
	if s.cfg.Cluster.Token != "" {
		// A member of a cluster: its writes may be lost with a leader.
		s.leaderGuard = &storage.LeaderGuard{Grace: leaderLostGrace}
		go func() {
			for {
				changed := e.Server.LeaderChangedNotify()
				select {
				case <-changed:
					s.leaderGuard.LeaderChanged()
				case <-e.Server.StopNotify():
					return
				}
			}
		}()
	}
	if s.join != nil {
		// A learner serves no reads: the apiserver starts once it votes.
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		err := s.join.ask(ctx, membersPath+"/promote", joinRequest{Name: cfg.Name, PeerURL: peerURL.String()}, nil)
		cancel()
		if err != nil {
			ee.close()
			return err
		}
	}
	// Maintenance (status, defragmentation) goes through etcd's real gRPC
	// server: the in-process adapter does not support it.
	clientTLS, err := s.etcdClientTLS.ClientConfig()
	if err != nil {
		ee.close()
		return fmt.Errorf("the embedded etcd's client certificate: %w", err)
	}
	if s.maintClient, err = clientv3.New(clientv3.Config{
		Endpoints:   []string{clientURL.String()},
		TLS:         clientTLS,
		DialTimeout: 10 * time.Second,
		DialOptions: s.tracing.DialOptions(),
		Logger:      s.log.Named("etcd-client").WithOptions(zap.IncreaseLevel(zapcore.WarnLevel)),
	}); err != nil {
		ee.close()
		return fmt.Errorf("connecting to the embedded etcd: %w", err)
	}
	if s.tracing != nil {
		// Traced, the storage's calls go through etcd's gRPC server too:
		// the in-process adapter has no gRPC call to make a span of (a
		// loopback round trip more per call, with tracing on only).
		s.client = s.maintClient
	} else {
		// In-process client: direct calls into the etcd server, no sockets.
		s.client = inProcessClient(e.Server)
	}
	s.watcher = storage.MVCCWatcher{KV: e.Server.Watchable()}
	return nil
}

func (s *Server) closeEtcd() {
	if s.maintClient != nil && s.maintClient != s.client {
		s.maintClient.Close()
	}
	if s.client != nil {
		s.client.Close()
	}
	if s.etcd != nil {
		s.etcd.close()
	}
}

// close stops etcd, its log core told first (etcdLogCore).
func (e *embeddedEtcd) close() {
	e.closing.Store(true)
	e.etcd.Close()
}
