package integration

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"skiff.dev/internal/await"
	"skiff.dev/internal/client"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/apiserver/apiserver"
	"skiff.dev/services/apiserver/apiservertest"
	"skiff.dev/services/apiserver/user"
)

// jwtClaims decodes a token's claims (without checking it).
func jwtClaims(t *testing.T, tok string) map[string]any {
	t.Helper()
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		t.Fatalf("a token of %d parts", len(parts))
	}
	b, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	var c map[string]any
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	return c
}

// TestCreateToken: ServiceAccounts.CreateToken issues bound tokens as
// Kubernetes' TokenRequest, which authenticate while their pod exists.
func TestCreateToken(t *testing.T) {
	s := apiservertest.Start(t, apiservertest.Secure(), apiservertest.WithConfig(func(c *apiserver.Config) {
		c.Authn.ServiceAccountIssuer = "https://skiff.test"
		c.Authn.APIAudiences = []string{"https://skiff.test", "api"}
		c.Authn.ServiceAccountMaxTokenExpiration = 2 * time.Hour
	}))
	ctx := testContext(t)
	sas := client.ServiceAccounts(s.Conn)
	sa, err := sas.Create(ctx, &corev1.ServiceAccount{Metadata: meta("default", "robot")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sas.Create(ctx, &corev1.ServiceAccount{Metadata: meta("default", "other")}); err != nil {
		t.Fatal(err)
	}
	tokens := corev1.NewServiceAccountsClient(s.Conn)
	pods := client.Pods(s.Conn)
	mk := func(name, sa, node string) *corev1.Pod {
		p := pod("default", name)
		p.Spec.ServiceAccountName, p.Spec.NodeName = sa, node
		created, err := pods.Create(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		return created
	}
	web := mk("web", "robot", "n1")
	mk("elsewhere", "robot", "n2")
	mk("stranger", "other", "n1")
	request := func(sa string, spec *corev1.TokenRequestSpec) *corev1.TokenRequest {
		return &corev1.TokenRequest{Metadata: meta("default", sa), Spec: spec}
	}
	podRef := func(p *corev1.Pod) *corev1.BoundObjectReference {
		return &corev1.BoundObjectReference{Kind: "Pod", ApiVersion: "v1", Name: p.GetMetadata().GetName(), Uid: p.GetMetadata().GetUid()}
	}

	t.Run("a pod-bound token", func(t *testing.T) {
		start := time.Now()
		tr, err := tokens.CreateToken(ctx, request("robot", &corev1.TokenRequestSpec{BoundObjectRef: podRef(web)}))
		if err != nil {
			t.Fatal(err)
		}
		if got := tr.GetSpec().GetExpirationSeconds(); got != 3600 {
			t.Errorf("expirationSeconds %d, want the default 3600", got)
		}
		if got := tr.GetSpec().GetAudiences(); !slices.Equal(got, []string{"https://skiff.test", "api"}) {
			t.Errorf("audiences %q, want the apiserver's", got)
		}
		exp := tr.GetStatus().GetExpirationTimestamp().AsTime()
		if exp.Before(start.Add(time.Hour-2*time.Second)) || exp.After(time.Now().Add(time.Hour)) {
			t.Errorf("expirationTimestamp %s, want an hour from now", exp)
		}
		c := jwtClaims(t, tr.GetStatus().GetToken())
		k8s, _ := c["kubernetes.io"].(map[string]any)
		podClaim, _ := k8s["pod"].(map[string]any)
		saClaim, _ := k8s["serviceaccount"].(map[string]any)
		if c["iss"] != "https://skiff.test" || c["sub"] != "system:serviceaccount:default:robot" || k8s["namespace"] != "default" ||
			podClaim["name"] != "web" || podClaim["uid"] != web.GetMetadata().GetUid() ||
			saClaim["name"] != "robot" || saClaim["uid"] != sa.GetMetadata().GetUid() ||
			fmt.Sprint(c["aud"]) != "[https://skiff.test api]" || c["exp"].(float64)-c["iat"].(float64) != 3600 {
			t.Fatalf("claims %v", c)
		}

		conn := s.ConnWithToken(t, tr.GetStatus().GetToken())
		if err := getCM(t, conn); err != nil {
			t.Fatalf("the bound token: %v", err)
		}
		if _, err := pods.Delete(ctx, &metav1.DeleteRequest{Namespace: "default", Name: "web", GracePeriodSeconds: proto.Int64(0)}); err != nil {
			t.Fatal(err)
		}
		var sig await.Signal
		sig.Until(t, 10*time.Second, "the token of a deleted pod refused", ctx.Done(), func() (bool, string) {
			err := getCM(t, conn)
			return status.Code(err) == codes.Unauthenticated && strings.Contains(status.Convert(err).Message(), "invalidated"), fmt.Sprint(err)
		})
	})
	t.Run("an audience of the caller's, capped lifetime", func(t *testing.T) {
		tr, err := tokens.CreateToken(ctx, request("robot", &corev1.TokenRequestSpec{Audiences: []string{"vault"}, ExpirationSeconds: proto.Int64(86400)}))
		if err != nil {
			t.Fatal(err)
		}
		if got := tr.GetSpec().GetExpirationSeconds(); got != 7200 {
			t.Errorf("expirationSeconds %d, want the cap 7200", got)
		}
		wantUnauthenticated(t, getCM(t, s.ConnWithToken(t, tr.GetStatus().GetToken())), "audiences")
	})
	t.Run("refusals", func(t *testing.T) {
		for _, c := range []struct {
			name string
			req  *corev1.TokenRequest
			code codes.Code
			msg  string
		}{
			{"no such service account", request("ghost", nil), codes.NotFound, `serviceaccounts "ghost" not found`},
			{"too short", request("robot", &corev1.TokenRequestSpec{ExpirationSeconds: proto.Int64(599)}), codes.InvalidArgument,
				"spec.expirationSeconds: Invalid value: 599: may not specify a duration less than 10 minutes"},
			{"a pod of another service account", request("robot", &corev1.TokenRequestSpec{BoundObjectRef: &corev1.BoundObjectReference{Kind: "Pod", ApiVersion: "v1", Name: "stranger"}}),
				codes.InvalidArgument, `cannot bind token for serviceaccount "robot" to pod running with different serviceaccount name.`},
			{"an unknown kind", request("robot", &corev1.TokenRequestSpec{BoundObjectRef: &corev1.BoundObjectReference{Kind: "Deployment", ApiVersion: "apps/v1", Name: "x"}}),
				codes.InvalidArgument, "cannot bind token to object of type apps/v1, Kind=Deployment"},
			{"a stale pod uid", request("robot", &corev1.TokenRequestSpec{BoundObjectRef: &corev1.BoundObjectReference{Kind: "Pod", ApiVersion: "v1", Name: "elsewhere", Uid: "0000"}}),
				codes.Aborted, "does not match the UID in record"},
		} {
			t.Run(c.name, func(t *testing.T) {
				_, err := tokens.CreateToken(ctx, c.req)
				if status.Code(err) != c.code || !strings.Contains(status.Convert(err).Message(), c.msg) {
					t.Fatalf("error %v, want %s with %q", err, c.code, c.msg)
				}
			})
		}
	})
	t.Run("nodes get tokens of their own pods only", func(t *testing.T) {
		n1 := corev1.NewServiceAccountsClient(s.ConnAs(t, user.NodeUserPrefix+"n1", user.NodesGroup))
		elsewhere, err := pods.Get(ctx, "default", "elsewhere")
		if err != nil {
			t.Fatal(err)
		}
		mine := mk("mine", "robot", "n1")
		if _, err := n1.CreateToken(ctx, request("robot", &corev1.TokenRequestSpec{BoundObjectRef: podRef(mine)})); err != nil {
			t.Fatalf("its own pod: %v", err)
		}
		for _, c := range []struct {
			name string
			spec *corev1.TokenRequestSpec
			msg  string
		}{
			{"unbound", &corev1.TokenRequestSpec{}, "node requested token not bound to a pod"},
			{"without uid", &corev1.TokenRequestSpec{BoundObjectRef: &corev1.BoundObjectReference{Kind: "Pod", ApiVersion: "v1", Name: "mine"}}, "without a uid"},
			{"another node's pod", &corev1.TokenRequestSpec{BoundObjectRef: podRef(elsewhere)}, "node requested token bound to a pod scheduled on a different node"},
		} {
			t.Run(c.name, func(t *testing.T) {
				_, err := n1.CreateToken(ctx, request("robot", c.spec))
				if status.Code(err) != codes.PermissionDenied || !strings.Contains(status.Convert(err).Message(), c.msg) {
					t.Fatalf("error %v, want PermissionDenied with %q", err, c.msg)
				}
			})
		}
	})
}
