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
	"os"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"go.uber.org/zap"
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
// replacement joins.
//
// Not yet (issue 23): TLS between peers with the cluster CA (peer URLs are
// plain http), bootstrap tokens with a TTL (the token here is a shared
// secret, as k3s's --token).

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
	// Token is the members' shared secret: a member answers joins that
	// present it, a joining member presents it. Empty: this member
	// answers no join.
	Token string
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
	if r.Method != http.MethodPost {
		fail(http.StatusMethodNotAllowed, "POST only")
		return
	}
	token := s.cfg.Cluster.Token
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if token == "" || !ok || subtle.ConstantTimeCompare([]byte(got), []byte(token)) != 1 {
		s.log.Warn("a join was refused: wrong or no token", zap.String("remote", r.RemoteAddr))
		fail(http.StatusUnauthorized, "a join needs the members' token")
		return
	}
	var req joinRequest
	remove := r.URL.Path == membersPath+"/remove"
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

// joinClient is the HTTP client of the member c.Join names.
func joinClient(c ClusterOptions) (*http.Client, string, error) {
	if c.JoinCAFile == "" {
		return &http.Client{Timeout: 60 * time.Second}, "http://" + c.Join, nil
	}
	pem, err := os.ReadFile(c.JoinCAFile)
	if err != nil {
		return nil, "", fmt.Errorf("--join-ca-file: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, "", fmt.Errorf("--join-ca-file %s: no PEM certificate", c.JoinCAFile)
	}
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12, NextProtos: []string{"http/1.1"}}}
	return &http.Client{Timeout: 60 * time.Second, Transport: tr}, "https://" + c.Join, nil
}

// askMember posts req to the path of the member c.Join names, with
// c.Token; a 503 is asked again (a learner not yet in step) until ctx
// ends.
func askMember(ctx context.Context, c ClusterOptions, path string, req joinRequest, answer any) error {
	hc, base, err := joinClient(c)
	if err != nil {
		return err
	}
	body, _ := json.Marshal(req)
	for wait := 100 * time.Millisecond; ; wait = min(2*wait, 2*time.Second) {
		hr, err := http.NewRequestWithContext(ctx, http.MethodPost, base+path, bytes.NewReader(body))
		if err != nil {
			return err
		}
		hr.Header.Set("Authorization", "Bearer "+c.Token)
		hr.Header.Set("Content-Type", "application/json")
		resp, err := hc.Do(hr)
		if err != nil {
			return fmt.Errorf("asking member %s: %w", c.Join, err)
		}
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		resp.Body.Close()
		switch {
		case resp.StatusCode == http.StatusServiceUnavailable:
			select {
			case <-ctx.Done():
				return fmt.Errorf("asking member %s: %s (still, after waiting: %w)", c.Join, strings.TrimSpace(string(msg)), ctx.Err())
			case <-time.After(wait):
			}
			continue
		case resp.StatusCode/100 != 2:
			return fmt.Errorf("asking member %s: %s: %s", c.Join, resp.Status, strings.TrimSpace(string(msg)))
		}
		if answer != nil {
			return json.Unmarshal(msg, answer)
		}
		return nil
	}
}

// memberName is this member's etcd name.
func (c ClusterOptions) memberName() string {
	if c.Name == "" {
		return "skiff"
	}
	return c.Name
}
