package apiserver

import (
	"bytes"
	"context"
	"crypto/subtle"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"skiff.dev/internal/bootstraptoken"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"go.etcd.io/etcd/client/pkg/v3/transport"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"

	"skiff.dev/internal/client"
	"skiff.dev/services/apiserver/authn"
	"skiff.dev/services/apiserver/authn/pki"
)

// Control-plane members (issue 23): apiservers whose embedded etcds are
// members of one etcd cluster, replicating through its Raft. The first
// starts a cluster as any apiserver does (ClusterOptions.Name and PeerURL
// say how its peers reach it); each further one starts with Join, the API
// address of a member, and the members' shared Token: before its etcd
// starts it asks that member (POST /skiff/v1/members, the token as bearer
// credentials) to add it to the cluster as a learner, which answers with
// the cluster's members; its etcd then starts as a member of the existing
// cluster, catches up from the leader, and is promoted to a voting
// member (POST /skiff/v1/members/promote, retried until etcd finds it in
// step) before the apiserver serves: from then on it serves the whole API
// from its own member and its own watch caches.
//
// A member stopped for good is removed through another (POST
// /skiff/v1/members/remove, skiff-apiserver member remove) before its
// replacement joins. GET /skiff/v1/members (skiff-apiserver member list)
// lists the members, learners and the leader, with the members' token.
//
// With authentication on, the members share one cluster CA and one
// service-account signing key, as kubeadm's control-plane join copies
// them: a joining member verifies the member it asks (--join-ca-file, or
// the CA's hash with --ca-cert-hash: client.FetchPinnedCA), and the answer
// to its join, over that TLS and only with the token, carries the CA and
// the key, which it keeps in its --pki-dir before issuing its own serving
// and etcd peer certificates. etcd's peers then talk TLS, each member
// showing its peer certificate as server and as client and requiring the
// other's (peerTLS); each apiserver reaches its own etcd in process or on
// loopback, so no client traffic between members leaves the machine. The
// token is the members' shared secret, as k3s's --token.

// ClusterOptions make the embedded etcd a member of a cluster of
// control-plane members. The zero value is a cluster of one on loopback.
type ClusterOptions struct {
	// Name is this member's etcd name, unique in the cluster ("" is
	// "skiff").
	Name string
	// PeerURL is where this member's etcd listens for its peers and is
	// reached by them ("http://10.0.0.1:2380"); "" is a free loopback
	// port (members on one host, tests).
	PeerURL string
	// Join is the API address ("host:port") of a member this one joins.
	Join string
	// JoinCAFile verifies the member Join names (its serving certificate's
	// CA): the join goes over TLS; without it, plain text (members started
	// with --insecure).
	JoinCAFile string
	// CACertHash pins the CA of the member Join names ("sha256:<hex>" of
	// its public key, client.CACertHash): the joining member fetches the
	// CA from the member's TLS handshake and keeps it only if it matches.
	CACertHash string
	// Token is the members' shared secret: a member answers joins that
	// present it, a joining member presents it. Empty: this member
	// answers no join (until a join gives it one: BootstrapToken).
	Token string
	// BootstrapToken, instead of Token, joins with a bootstrap token made
	// for control-plane members (skiff-apiserver token create
	// --control-plane): the answer gives this member the members' token
	// too, kept in --pki-dir (members-token) for its restarts and to
	// answer joins itself.
	BootstrapToken string
}

// joinRequest and joinAnswer are the bodies of POST /skiff/v1/members.
type joinRequest struct {
	Name    string `json:"name"`
	PeerURL string `json:"peerURL"`
}

type joinAnswer struct {
	// InitialCluster is etcd's --initial-cluster for the new member:
	// every member's name and peer URLs, the new one's included.
	InitialCluster string `json:"initialCluster"`
	// PKI is the members' shared CA and service-account key (sharedPKI),
	// by file name; sent over TLS only.
	PKI map[string][]byte `json:"pki,omitempty"`
}

// membersPath is where a member answers joins (and, under it, promotions).
const membersPath = "/skiff/v1/members"

// withMembers serves the members' paths beside the API: an embedded
// etcd's member with a token answers joins there; others, and every
// other path, go to api.
func (s *Server) withMembers(api http.Handler) http.Handler {
	if s.etcd == nil || s.cfg.Cluster.Token == "" {
		return api
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == membersPath || strings.HasPrefix(r.URL.Path, membersPath+"/") {
			s.serveMembers(w, r)
			return
		}
		api.ServeHTTP(w, r)
	})
}

// serveMembers answers a joining member: its request adds it to etcd as
// a learner, its promotion makes it a voting member.
func (s *Server) serveMembers(w http.ResponseWriter, r *http.Request) {
	fail := func(code int, msg string) {
		http.Error(w, msg, code)
	}
	list := r.URL.Path == membersPath && r.Method == http.MethodGet
	if r.Method != http.MethodPost && !list {
		fail(http.StatusMethodNotAllowed, "POST only (GET to list the members)")
		return
	}
	remove := r.URL.Path == membersPath+"/remove"
	if !s.joinAllowed(r, !remove && !list) {
		s.log.Warn("a join was refused: wrong or no token", zap.String("remote", r.RemoteAddr))
		fail(http.StatusUnauthorized, "a join needs the members' token (or a bootstrap token made with --control-plane)")
		return
	}
	if list {
		ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
		defer cancel()
		members, err := s.listMembers(ctx)
		if err != nil {
			fail(http.StatusServiceUnavailable, err.Error())
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(members)
		return
	}
	var req joinRequest
	if err := json.NewDecoder(io.LimitReader(r.Body, 64<<10)).Decode(&req); err != nil || req.Name == "" || (req.PeerURL == "" && !remove) {
		fail(http.StatusBadRequest, "the body must be {\"name\": ..., \"peerURL\": ...} ({\"name\": ...} to remove a member)")
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 30*time.Second)
	defer cancel()
	switch r.URL.Path {
	case membersPath:
		answer, err := s.addLearner(ctx, req)
		if err != nil {
			code := http.StatusConflict
			if errors.Is(err, rpctypes.ErrUnhealthy) || strings.Contains(err.Error(), "unhealthy cluster") {
				// etcd adds no member while this one has not been in
				// touch with a quorum for a while (a member just
				// started): ask again.
				code = http.StatusServiceUnavailable
			}
			fail(code, err.Error())
			return
		}
		if s.tls != nil && s.tls.CA != nil && r.TLS != nil {
			if answer.PKI, err = s.sharedPKI(); err != nil {
				fail(http.StatusInternalServerError, err.Error())
				return
			}
		}
		s.log.Info("a member joins the etcd cluster as a learner", zap.String("name", req.Name), zap.String("peerURL", req.PeerURL))
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(answer)
	case membersPath + "/promote":
		if err := s.promote(ctx, req.PeerURL); err != nil {
			code := http.StatusConflict
			if errors.Is(err, rpctypes.ErrMemberLearnerNotReady) || strings.Contains(err.Error(), "in sync with leader") {
				code = http.StatusServiceUnavailable // not in step yet: ask again
			}
			fail(code, err.Error())
			return
		}
		s.log.Info("a learner was promoted to a voting member", zap.String("name", req.Name), zap.String("peerURL", req.PeerURL))
		w.WriteHeader(http.StatusNoContent)
	case membersPath + "/remove":
		if err := s.removeMember(ctx, req.Name); err != nil {
			fail(http.StatusConflict, err.Error())
			return
		}
		s.log.Info("a member was removed from the etcd cluster", zap.String("name", req.Name))
		w.WriteHeader(http.StatusNoContent)
	default:
		fail(http.StatusNotFound, "no such path")
	}
}

// joinAllowed says whether r presents the members' token, or, for a join
// (not a removal) over TLS, a live bootstrap token made for control-plane
// members.
func (s *Server) joinAllowed(r *http.Request, join bool) bool {
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		return false
	}
	if t := s.cfg.Cluster.Token; t != "" && subtle.ConstantTimeCompare([]byte(got), []byte(t)) == 1 {
		return true
	}
	if !join || r.TLS == nil || s.bootstrapTokens == nil {
		return false
	}
	u, err := authn.BootstrapTokenUser(r.Context(), s.bootstrapTokens, got, s.now())
	return err == nil && slices.Contains(u.Groups, bootstraptoken.ControlPlaneGroup)
}

// removeMember removes the member of that name (a member stopped for
// good, to be replaced); this one is removed through another.
func (s *Server) removeMember(ctx context.Context, name string) error {
	if name == s.cfg.Cluster.memberName() {
		return fmt.Errorf("member %s is this one: remove it through another member", name)
	}
	list, err := s.maintClient.MemberList(ctx)
	if err != nil {
		return err
	}
	for _, m := range list.Members {
		if m.Name == name {
			_, err := s.maintClient.MemberRemove(ctx, m.ID)
			return err
		}
	}
	return fmt.Errorf("no member is named %s", name)
}

// Member is one etcd member of the control plane, as GET
// /skiff/v1/members (skiff-apiserver member list) answers.
type Member struct {
	Name       string   `json:"name"`
	ID         string   `json:"id"` // etcd's member ID, in hex as etcdctl prints it
	PeerURLs   []string `json:"peerURLs"`
	ClientURLs []string `json:"clientURLs,omitempty"`
	// Learner: added, not yet promoted to a voting member.
	Learner bool `json:"learner,omitempty"`
	// Leader: etcd's leader as the member asked sees it.
	Leader bool `json:"leader,omitempty"`
}

// listMembers is etcd's member list with the leader this member knows.
func (s *Server) listMembers(ctx context.Context) ([]Member, error) {
	list, err := s.maintClient.MemberList(ctx)
	if err != nil {
		return nil, err
	}
	var leader uint64
	if st, err := s.maintClient.Status(ctx, s.endpoint()); err == nil {
		leader = st.Leader
	}
	members := make([]Member, 0, len(list.Members))
	for _, m := range list.Members {
		members = append(members, Member{Name: m.Name, ID: strconv.FormatUint(m.ID, 16), PeerURLs: m.PeerURLs, ClientURLs: m.ClientURLs,
			Learner: m.IsLearner, Leader: m.ID == leader})
	}
	slices.SortFunc(members, func(a, b Member) int { return strings.Compare(a.Name, b.Name) })
	return members, nil
}

// ListMembers asks the member c.Join names, with c.Token, for the etcd
// cluster's members (skiff-apiserver member list).
func ListMembers(ctx context.Context, c ClusterOptions) ([]Member, error) {
	mc, err := newMemberClient(ctx, c)
	if err != nil {
		return nil, err
	}
	var members []Member
	return members, mc.do(ctx, http.MethodGet, membersPath, nil, &members)
}

// RemoveMember asks the member c.Join names, with c.Token, to remove the
// member called name from the etcd cluster (skiff-apiserver member
// remove).
func RemoveMember(ctx context.Context, c ClusterOptions, name string) error {
	return askMember(ctx, c, membersPath+"/remove", joinRequest{Name: name}, nil)
}

// addLearner adds the member of req as a learner (once: a member of that
// peer URL already there is answered as added, for a joiner that asks
// again after a failed start) and answers with the initial cluster.
func (s *Server) addLearner(ctx context.Context, req joinRequest) (*joinAnswer, error) {
	list, err := s.maintClient.MemberList(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing the etcd members: %w", err)
	}
	known := false
	for _, m := range list.Members {
		for _, u := range m.PeerURLs {
			known = known || u == req.PeerURL
		}
	}
	if !known {
		added, err := s.maintClient.MemberAddAsLearner(ctx, []string{req.PeerURL})
		if err != nil {
			return nil, fmt.Errorf("adding %s as a learner: %w", req.PeerURL, err)
		}
		list.Members = added.Members
	}
	var parts []string
	for _, m := range list.Members {
		name := m.Name
		if name == "" { // the new member, not started yet
			name = req.Name
		}
		for _, u := range m.PeerURLs {
			parts = append(parts, name+"="+u)
		}
	}
	return &joinAnswer{InitialCluster: strings.Join(parts, ",")}, nil
}

// promote makes the learner of peerURL a voting member.
func (s *Server) promote(ctx context.Context, peerURL string) error {
	list, err := s.maintClient.MemberList(ctx)
	if err != nil {
		return err
	}
	for _, m := range list.Members {
		for _, u := range m.PeerURLs {
			if u != peerURL {
				continue
			}
			if !m.IsLearner {
				return nil
			}
			_, err := s.maintClient.MemberPromote(ctx, m.ID)
			return err
		}
	}
	return fmt.Errorf("no member has the peer URL %s", peerURL)
}

// memberClient asks a member (the one ClusterOptions.Join names) to
// add, promote or remove a member.
type memberClient struct {
	hc          *http.Client
	base, token string
	addr        string
	// tls says whether the member was verified (its CA known): only then
	// is its answer trusted with the cluster's CA.
	tls bool
}

// newMemberClient reaches the member c.Join names: over TLS verified by
// c.CACertHash (the CA it presents whose hash is pinned) or c.JoinCAFile,
// in plain text without either (members started with --insecure).
func newMemberClient(ctx context.Context, c ClusterOptions) (*memberClient, error) {
	token := c.Token
	if c.BootstrapToken != "" {
		token = c.BootstrapToken
	}
	mc := &memberClient{token: token, addr: c.Join, hc: &http.Client{Timeout: 60 * time.Second}, base: "http://" + c.Join}
	var caPEM []byte
	var err error
	switch {
	case c.CACertHash != "":
		caPEM, err = client.FetchPinnedCA(ctx, c.Join, c.CACertHash)
	case c.JoinCAFile != "":
		if caPEM, err = os.ReadFile(c.JoinCAFile); err != nil {
			err = fmt.Errorf("--join-ca-file: %w", err)
		}
	default:
		return mc, nil
	}
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, fmt.Errorf("--join-ca-file %s: no PEM certificate", c.JoinCAFile)
	}
	mc.hc.Transport = &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12, NextProtos: []string{"http/1.1"}}}
	mc.base, mc.tls = "https://"+c.Join, true
	return mc, nil
}

// askMember posts req to the path of the member c.Join names, with
// c.Token.
func askMember(ctx context.Context, c ClusterOptions, path string, req joinRequest, answer any) error {
	mc, err := newMemberClient(ctx, c)
	if err != nil {
		return err
	}
	return mc.ask(ctx, path, req, answer)
}

// ask posts req to the member's path; a 503 is asked again (a learner
// not yet in step) until ctx ends.
func (mc *memberClient) ask(ctx context.Context, path string, req joinRequest, answer any) error {
	body, _ := json.Marshal(req)
	return mc.do(ctx, http.MethodPost, path, body, answer)
}

// do sends method to the member's path with body (none when nil) and
// decodes its answer into answer (unless nil); a 503 is asked again until
// ctx ends.
func (mc *memberClient) do(ctx context.Context, method, path string, body []byte, answer any) error {
	for wait := 100 * time.Millisecond; ; wait = min(2*wait, 2*time.Second) {
		var rd io.Reader
		if body != nil {
			rd = bytes.NewReader(body)
		}
		hr, err := http.NewRequestWithContext(ctx, method, mc.base+path, rd)
		if err != nil {
			return err
		}
		hr.Header.Set("Authorization", "Bearer "+mc.token)
		if body != nil {
			hr.Header.Set("Content-Type", "application/json")
		}
		resp, err := mc.hc.Do(hr)
		if err != nil {
			return fmt.Errorf("asking member %s: %w", mc.addr, err)
		}
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		resp.Body.Close()
		switch {
		case resp.StatusCode == http.StatusServiceUnavailable:
			select {
			case <-ctx.Done():
				return fmt.Errorf("asking member %s: %s (still, after waiting: %w)", mc.addr, strings.TrimSpace(string(msg)), ctx.Err())
			case <-time.After(wait):
			}
			continue
		case resp.StatusCode/100 != 2:
			return fmt.Errorf("asking member %s: %s: %s", mc.addr, resp.Status, strings.TrimSpace(string(msg)))
		}
		if answer != nil {
			return json.Unmarshal(msg, answer)
		}
		return nil
	}
}

// joinState is a member's join in progress: asked, its etcd to start.
type joinState struct {
	peerURL url.URL
	answer  joinAnswer
	*memberClient
}

// joinCluster asks the member Cluster.Join names to add this one to its
// etcd cluster as a learner. It runs before this member's TLS material is
// loaded: the answer carries the CA and the service-account key the
// members share (installPKI). A member restarted has its etcd data and
// asks nothing.
func (s *Server) joinCluster() error {
	c := s.cfg.Cluster
	if c.Join == "" || len(s.cfg.EtcdServers) > 0 || s.cfg.DataDir == "" {
		return nil
	}
	if _, err := os.Stat(filepath.Join(s.cfg.DataDir, "etcd", "member")); !errors.Is(err, os.ErrNotExist) {
		if s.cfg.Cluster.Token == "" {
			s.cfg.Cluster.Token = c.membersToken(s.cfg.Authn.PKIDirIn(s.cfg.DataDir))
		}
		return nil
	}
	tlsOn := s.cfg.Authn.Enabled
	var peer url.URL
	if c.PeerURL != "" {
		u, err := c.parsePeerURL(tlsOn)
		if err != nil {
			return err
		}
		peer = *u
	} else {
		u, err := freeLoopbackURL()
		if err != nil {
			return err
		}
		if tlsOn {
			u.Scheme = "https"
		}
		peer = u
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	mc, err := newMemberClient(ctx, c)
	if err != nil {
		return err
	}
	if tlsOn && !mc.tls {
		return errors.New("--join: a member with authentication joins over TLS: give --ca-cert-hash (or --join-ca-file)")
	}
	j := &joinState{peerURL: peer, memberClient: mc}
	if err := mc.ask(ctx, membersPath, joinRequest{Name: c.memberName(), PeerURL: peer.String()}, &j.answer); err != nil {
		return err
	}
	if tlsOn {
		if err := s.installPKI(j.answer.PKI); err != nil {
			return err
		}
	}
	s.join = j
	return nil
}

// sharedPKI is what a joining member receives besides the initial
// cluster: the CA (certificate and key) and the service-account signing
// key.
func (s *Server) sharedPKI() (map[string][]byte, error) {
	caKey, err := pki.EncodeKey(s.tls.CA.Key)
	if err != nil {
		return nil, err
	}
	saKey, err := pki.EncodeKey(s.tls.ServiceAccountKey)
	if err != nil {
		return nil, err
	}
	return map[string][]byte{pki.CACertFile: s.tls.CA.CertPEM, pki.CAKeyFile: caKey, authn.ServiceAccountKey: saKey, membersTokenFile: []byte(s.cfg.Cluster.Token)}, nil
}

// membersTokenFile, in --pki-dir, is the members' token a member that
// joined with a bootstrap token received.
const membersTokenFile = "members-token"

// membersToken reads the members' token a join gave this member before
// ("" when none did).
func (c ClusterOptions) membersToken(pkiDir string) string {
	b, err := os.ReadFile(filepath.Join(pkiDir, membersTokenFile))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// installPKI keeps the shared PKI a member answered with in this
// member's --pki-dir: files it lacks are written (the key before its
// certificate); a file it has must be the same (a member with another CA
// would serve clients the others refuse).
func (s *Server) installPKI(files map[string][]byte) error {
	if len(files) == 0 {
		return fmt.Errorf("member %s sent no cluster CA: its certificates are files it was given (--tls-cert-file, --client-ca-file); give this member the same files and a CA in --pki-dir", s.cfg.Cluster.Join)
	}
	dir := s.cfg.Authn.PKIDirIn(s.cfg.DataDir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	names := []string{pki.CAKeyFile, pki.CACertFile}
	if s.cfg.Authn.ServiceAccountKeyFile == "" {
		names = append(names, authn.ServiceAccountKey)
	}
	if s.cfg.Cluster.Token == "" {
		// Joined with a bootstrap token: the members' token, to answer
		// joins and for the restarts.
		names = append(names, membersTokenFile)
		s.cfg.Cluster.Token = string(files[membersTokenFile])
	}
	for _, name := range names {
		data, path := files[name], filepath.Join(dir, name)
		if len(data) == 0 {
			return fmt.Errorf("member %s sent no %s", s.cfg.Cluster.Join, name)
		}
		have, err := os.ReadFile(path)
		switch {
		case err == nil && !bytes.Equal(have, data):
			return fmt.Errorf("--pki-dir %s: %s differs from the cluster's: a joining member takes the cluster's CA and keys (start it with an empty --pki-dir)", dir, name)
		case err == nil:
		case errors.Is(err, os.ErrNotExist):
			perm := os.FileMode(0o600)
			if name == pki.CACertFile {
				perm = 0o644
			}
			if err := pki.WriteFile(path, data, perm); err != nil {
				return err
			}
		default:
			return err
		}
	}
	return nil
}

// etcdPeerName is the embedded etcd's peer certificate in --pki-dir
// (etcd-peer.crt, etcd-peer.key).
const etcdPeerName = "etcd-peer"

// peerTLS makes the embedded etcd's peer traffic TLS with the cluster CA
// when the apiserver has one: this member's certificate (issued for its
// peer URL's host and loopback, server and client usage, renewed with the
// apiserver's own certificates within 30 days of its expiry: etcd reads
// the files at each handshake) is shown to peers as server and as client,
// and peers must show one the CA signed. It says whether peer URLs are
// https.
func (s *Server) peerTLS(cfg *embed.Config) (bool, error) {
	clustered := s.cfg.Cluster.Join != "" || s.cfg.Cluster.PeerURL != ""
	if s.tls == nil || s.tls.CA == nil {
		if s.tls != nil && clustered {
			return false, errors.New("control-plane members talk TLS with the cluster CA: it must be in --pki-dir (ca.crt, ca.key), not only --tls-cert-file and --client-ca-file")
		}
		return false, nil
	}
	dir := s.cfg.Authn.PKIDirIn(s.cfg.DataDir)
	hosts := []string{"localhost", "127.0.0.1", "::1"}
	if u, err := url.Parse(s.cfg.Cluster.PeerURL); err == nil && u.Hostname() != "" {
		hosts = append(hosts, u.Hostname())
	}
	req := pki.Request{CommonName: s.cfg.Cluster.memberName(), Hosts: hosts, Server: true, Client: true}
	if err := s.tls.IssueFile(etcdPeerName, req, s.now()); err != nil {
		return false, fmt.Errorf("etcd peer certificate in %s: %w", dir, err)
	}
	cfg.PeerTLSInfo = transport.TLSInfo{
		CertFile:       filepath.Join(dir, etcdPeerName+".crt"),
		KeyFile:        filepath.Join(dir, etcdPeerName+".key"),
		TrustedCAFile:  filepath.Join(dir, pki.CACertFile),
		ClientCertAuth: true,
	}
	return true, nil
}

// parsePeerURL checks --etcd-peer-url: https when the members talk TLS.
func (c ClusterOptions) parsePeerURL(tlsOn bool) (*url.URL, error) {
	u, err := url.Parse(c.PeerURL)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return nil, fmt.Errorf("--etcd-peer-url %q: not a URL like https://10.0.0.1:2380", c.PeerURL)
	}
	if tlsOn && u.Scheme != "https" {
		return nil, fmt.Errorf("--etcd-peer-url %q: want https:// (the members' etcd peers talk TLS with the cluster CA; http only with --insecure)", c.PeerURL)
	}
	if !tlsOn && u.Scheme != "http" {
		return nil, fmt.Errorf("--etcd-peer-url %q: want http:// (an apiserver started with --insecure has no CA for TLS between peers)", c.PeerURL)
	}
	return u, nil
}

// memberName is this member's etcd name.
func (c ClusterOptions) memberName() string {
	if c.Name == "" {
		return "skiff"
	}
	return c.Name
}
