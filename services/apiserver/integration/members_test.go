package integration

import (
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"skiff.dev/internal/bootstraptoken"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"skiff.dev/internal/await"
	"skiff.dev/internal/client"
	coordinationv1 "skiff.dev/proto/coordination/v1"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/apiserver/apiserver"
	"skiff.dev/services/apiserver/apiservertest"
	"skiff.dev/services/apiserver/authn"
)

// TestMembersFormOneEtcdCluster: three apiservers with embedded etcds,
// the second and third joining through a member with the members' token,
// are three voting members of one etcd cluster; what one member's API
// writes the others serve; with one member stopped the other two still
// write (a quorum of two); the stopped member is removed and replaced; a
// join with the wrong token is refused.
func TestMembersFormOneEtcdCluster(t *testing.T) {
	member := func(name, join, token string) apiservertest.Option {
		return apiservertest.WithConfig(func(c *apiserver.Config) {
			c.Cluster = apiserver.ClusterOptions{Name: name, Join: join, Token: token}
		})
	}
	m1 := apiservertest.Start(t, member("m1", "", "tok"))
	m2 := apiservertest.Start(t, member("m2", m1.Addr(), "tok"))
	m3 := apiservertest.Start(t, member("m3", m2.Addr(), "tok"))
	ctx := testContext(t)

	list, err := m1.EtcdClient().MemberList(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, m := range list.Members {
		names = append(names, fmt.Sprintf("%s learner=%v", m.Name, m.IsLearner))
	}
	if len(list.Members) != 3 || strings.Contains(strings.Join(names, ","), "learner=true") {
		t.Fatalf("etcd members %v, want m1, m2 and m3, all voting", names)
	}

	write := func(s *apiservertest.Server, name string) {
		t.Helper()
		var sig await.Signal
		sig.Until(t, 20*time.Second, "a create through "+name, ctx.Done(), func() (bool, string) {
			_, err := client.ConfigMaps(s.Conn).Create(ctx, &corev1.ConfigMap{Metadata: &metav1.ObjectMeta{Namespace: "default", Name: name}})
			return err == nil, fmt.Sprint(err)
		})
	}
	served := func(s *apiservertest.Server, name, by string) {
		t.Helper()
		var sig await.Signal
		sig.Until(t, 20*time.Second, by+" to serve "+name, ctx.Done(), func() (bool, string) {
			_, err := client.ConfigMaps(s.Conn).Get(ctx, "default", name)
			return err == nil, fmt.Sprint(err)
		})
	}
	write(m3, "from-m3")
	served(m1, "from-m3", "m1")
	served(m2, "from-m3", "m2")
	m1.Stop()
	write(m2, "without-m1")
	served(m3, "without-m1", "m3")

	// m1 is gone for good: removed through another member, and replaced
	// by m4, which joins through m3. A member is not removed through
	// itself.
	through := func(s *apiservertest.Server) apiserver.ClusterOptions {
		return apiserver.ClusterOptions{Join: s.Addr(), Token: "tok"}
	}
	if err := apiserver.RemoveMember(ctx, through(m2), "m2"); err == nil || !strings.Contains(err.Error(), "remove it through another member") {
		t.Errorf("removing m2 through itself: %v", err)
	}
	if err := apiserver.RemoveMember(ctx, through(m2), "m1"); err != nil {
		t.Fatalf("removing m1: %v", err)
	}
	m4 := apiservertest.Start(t, member("m4", m3.Addr(), "tok"))
	if list, err = m4.EtcdClient().MemberList(ctx); err != nil {
		t.Fatal(err)
	}
	names = nil
	for _, m := range list.Members {
		names = append(names, fmt.Sprintf("%s learner=%v", m.Name, m.IsLearner))
	}
	if got := strings.Join(names, ","); len(list.Members) != 3 || strings.Contains(got, "m1") || strings.Contains(got, "learner=true") {
		t.Errorf("etcd members after m1's removal and m4's join: %v, want m2, m3 and m4, voting", names)
	}
	write(m4, "from-m4")
	served(m2, "from-m4", "m2")

	// skiff-apiserver member list: the same three, one leader, through
	// any member, only with the members' token.
	members, err := apiserver.ListMembers(ctx, through(m3))
	if err != nil {
		t.Fatalf("listing the members: %v", err)
	}
	names, leaders := nil, 0
	for _, m := range members {
		names = append(names, fmt.Sprintf("%s learner=%v", m.Name, m.Learner))
		if m.Leader {
			leaders++
		}
		if m.ID == "" || len(m.PeerURLs) == 0 {
			t.Errorf("member %+v: no ID or peer URLs", m)
		}
	}
	if got := strings.Join(names, ","); got != "m2 learner=false,m3 learner=false,m4 learner=false" || leaders != 1 {
		t.Errorf("member list: %s with %d leaders, want m2, m3, m4 voting, one leader", got, leaders)
	}
	if _, err := apiserver.ListMembers(ctx, apiserver.ClusterOptions{Join: m3.Addr(), Token: "wrong"}); err == nil || !strings.Contains(err.Error(), "401") {
		t.Errorf("member list with the wrong token: %v, want 401", err)
	}

	_, err = apiservertest.StartConfig(apiserver.Config{DataDir: t.TempDir(), Listen: "127.0.0.1:0", EtcdUnsafeNoFsync: true,
		Cluster: apiserver.ClusterOptions{Name: "m4", Join: m2.Addr(), Token: "wrong"}})
	if err == nil || !strings.Contains(err.Error(), "401 Unauthorized") {
		t.Errorf("a join with the wrong token: %v, want 401", err)
	}
}

// TestSecureMembersShareTheClusterCA: with authentication on, a member
// joins knowing only the hash of the cluster CA (--ca-cert-hash): it takes
// the CA and the service-account key from the member it joins through, so
// a client certificate issued by one member is good at every member; the
// etcd peers talk TLS (https peer URLs; a peer without a certificate of the
// CA is refused); a join whose pinned hash is not the member's CA fails
// before the token is sent.
func TestSecureMembersShareTheClusterCA(t *testing.T) {
	member := func(c apiserver.ClusterOptions) apiservertest.Option {
		return apiservertest.WithConfig(func(cfg *apiserver.Config) { cfg.Cluster = c })
	}
	m1 := apiservertest.Start(t, apiservertest.Secure(), member(apiserver.ClusterOptions{Name: "m1", Token: "tok"}))
	pin := client.CACertHash(m1.CA.Cert)
	m2 := apiservertest.Start(t, apiservertest.Secure(), member(apiserver.ClusterOptions{Name: "m2", Join: m1.Addr(), Token: "tok", CACertHash: pin}))
	ctx := testContext(t)
	if !m2.CA.Cert.Equal(m1.CA.Cert) {
		t.Fatalf("m2's CA is %s, not the cluster's %s", client.CACertHash(m2.CA.Cert), pin)
	}
	saKey := func(s *apiservertest.Server) string {
		b, err := os.ReadFile(filepath.Join(s.DataDir, "pki", "sa.key"))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	if saKey(m1) != saKey(m2) {
		t.Error("m2 signs service-account tokens with another key than m1")
	}

	// A certificate m1's CA issued, presented to m2.
	cfg := m1.ClientConfig(t, "alice", "system:masters")
	cfg.Server = m2.Addr()
	conn, err := client.Dial(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := client.ConfigMaps(conn).Create(ctx, &corev1.ConfigMap{Metadata: &metav1.ObjectMeta{Namespace: "default", Name: "through-m2"}}); err != nil {
		t.Fatalf("a create through m2 with a certificate of m1: %v", err)
	}
	var sig await.Signal
	sig.Until(t, 20*time.Second, "m1 to serve what m2 wrote", ctx.Done(), func() (bool, string) {
		_, err := client.ConfigMaps(m1.Conn).Get(ctx, "default", "through-m2")
		return err == nil, fmt.Sprint(err)
	})

	list, err := m1.EtcdClient().MemberList(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Members) != 2 {
		t.Fatalf("%d etcd members, want 2", len(list.Members))
	}
	for _, m := range list.Members {
		for _, u := range m.PeerURLs {
			if !strings.HasPrefix(u, "https://") {
				t.Errorf("member %s's peer URL %s is not TLS", m.Name, u)
			}
			// Without a client certificate of the CA, the peer refuses:
			// etcd's peer API (/members) is not served.
			hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: m1.CA.Pool()}}}
			if resp, err := hc.Get(u + "/members"); err == nil {
				resp.Body.Close()
				t.Errorf("GET %s/members without a client certificate: %s, want the TLS handshake refused", u, resp.Status)
			}
		}
	}

	_, err = apiservertest.StartConfig(apiserver.Config{DataDir: t.TempDir(), Listen: "127.0.0.1:0", EtcdUnsafeNoFsync: true, Authn: authn.Options{Enabled: true},
		Cluster: apiserver.ClusterOptions{Name: "m3", Join: m1.Addr(), Token: "tok", CACertHash: "sha256:" + strings.Repeat("ab", 32)}})
	if err == nil || !strings.Contains(err.Error(), "presents no CA whose hash is sha256:abab") {
		t.Errorf("a join pinning another CA: %v, want it refused for the hash", err)
	}
}

// TestKubernetesServiceListsLiveMembers: the kubernetes Service's
// EndpointSlice lists every member by its lease (three members on one port
// of three loopback addresses); a member that shuts down leaves it at once;
// a member whose lease is no longer renewed (a crash) leaves it once the
// lease expires; an expired lease is never listed.
func TestKubernetesServiceListsLiveMembers(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	member := func(ip, name, join string) apiservertest.Option {
		return apiservertest.WithConfig(func(c *apiserver.Config) {
			c.Listen = net.JoinHostPort(ip, strconv.Itoa(port))
			c.EndpointLeaseDuration = 3 * time.Second
			c.Cluster = apiserver.ClusterOptions{Name: name, Join: join, Token: "tok"}
		})
	}
	m1 := apiservertest.Start(t, member("127.0.0.1", "m1", ""))
	m2 := apiservertest.Start(t, member("127.0.0.2", "m2", m1.Addr()))
	m3 := apiservertest.Start(t, member("127.0.0.3", "m3", m1.Addr()))
	ctx := testContext(t)
	endpoints := func(want ...string) {
		t.Helper()
		var sig await.Signal
		sig.Until(t, 20*time.Second, fmt.Sprintf("the kubernetes Service's endpoints to be %v", want), ctx.Done(), func() (bool, string) {
			s, err := client.EndpointSlices(m1.Conn).Get(ctx, "default", "kubernetes")
			if err != nil {
				return false, err.Error()
			}
			var got []string
			for _, e := range s.GetEndpoints() {
				got = append(got, e.GetAddresses()...)
			}
			ok := slices.Equal(got, want) && len(s.GetPorts()) == 1 && s.GetPorts()[0].GetPort() == int32(port)
			return ok, fmt.Sprintf("%v port %v", got, s.GetPorts())
		})
	}
	endpoints("127.0.0.1", "127.0.0.2", "127.0.0.3")
	m3.Stop()
	endpoints("127.0.0.1", "127.0.0.2")

	// Leases of members that are gone: one expired long ago, one live now
	// but never renewed (its member crashed).
	lease := func(holder string, renewed time.Time) {
		d := int32(3)
		_, err := client.Leases(m2.Conn).Create(ctx, &coordinationv1.Lease{
			Metadata: &metav1.ObjectMeta{Namespace: "kube-system", Name: "apiserver-gone-" + holder[strings.LastIndexByte(holder, '.')+1:],
				Labels: map[string]string{"apiserver.kubernetes.io/identity": "kube-apiserver"}},
			Spec: &coordinationv1.LeaseSpec{HolderIdentity: net.JoinHostPort(holder, strconv.Itoa(port)), LeaseDurationSeconds: &d, RenewTime: timestamppb.New(renewed)},
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	lease("127.0.0.9", time.Now().Add(-time.Minute))
	lease("127.0.0.8", time.Now())
	endpoints("127.0.0.1", "127.0.0.2", "127.0.0.8")
	endpoints("127.0.0.1", "127.0.0.2")
}

// TestMemberJoinsWithBootstrapToken: a control-plane member joins with a
// bootstrap token made for members (token create --control-plane) and the
// CA's hash instead of the members' token; the join gives it the members'
// token, so it answers the next member's join itself. A node's bootstrap
// token does not join a member.
func TestMemberJoinsWithBootstrapToken(t *testing.T) {
	member := func(c apiserver.ClusterOptions) apiservertest.Option {
		return apiservertest.WithConfig(func(cfg *apiserver.Config) { cfg.Cluster = c })
	}
	m1 := apiservertest.Start(t, apiservertest.Secure(), member(apiserver.ClusterOptions{Name: "m1", Token: "members-secret"}))
	ctx := testContext(t)
	token := func(group string) string {
		tok := bootstraptoken.New()
		sec, err := bootstraptoken.Secret(tok, bootstraptoken.Options{TTL: time.Hour, ExtraGroups: []string{group}}, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := client.Secrets(m1.Conn).Create(ctx, sec); err != nil {
			t.Fatal(err)
		}
		return tok
	}
	pin := client.CACertHash(m1.CA.Cert)
	_, err := apiservertest.StartConfig(apiserver.Config{DataDir: t.TempDir(), Listen: "127.0.0.1:0", EtcdUnsafeNoFsync: true, Authn: authn.Options{Enabled: true},
		Cluster: apiserver.ClusterOptions{Name: "node-token", Join: m1.Addr(), BootstrapToken: token(bootstraptoken.DefaultNodeGroup), CACertHash: pin}})
	if err == nil || !strings.Contains(err.Error(), "401") {
		t.Fatalf("a member joining with a node's bootstrap token: %v, want 401", err)
	}
	m2 := apiservertest.Start(t, apiservertest.Secure(), member(apiserver.ClusterOptions{Name: "m2", Join: m1.Addr(), BootstrapToken: token(bootstraptoken.ControlPlaneGroup), CACertHash: pin}))
	if b, err := os.ReadFile(filepath.Join(m2.DataDir, "pki", "members-token")); err != nil || string(b) != "members-secret" {
		t.Fatalf("m2's members-token: %q %v", b, err)
	}
	// m3 joins through m2 with the members' token m2 received.
	m3 := apiservertest.Start(t, apiservertest.Secure(), member(apiserver.ClusterOptions{Name: "m3", Join: m2.Addr(), Token: "members-secret", CACertHash: pin}))
	list, err := m3.EtcdClient().MemberList(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Members) != 3 {
		t.Errorf("%d etcd members, want 3", len(list.Members))
	}
}
