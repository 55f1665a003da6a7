package agent

import (
	"context"
	"strings"
	"testing"
	"time"

	"skiff.dev/internal/client"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/apiserver/apiservertest"
	"skiff.dev/services/apiserver/user"
)

// TestAPITokenSource: the node's token source gets a bound token of its
// pod's service account from a real apiserver, as the node's own user; the
// token authenticates as the account; a pod of another node is refused.
func TestAPITokenSource(t *testing.T) {
	api := apiservertest.Start(t, apiservertest.Secure())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := client.ServiceAccounts(api.Conn).Create(ctx, &corev1.ServiceAccount{Metadata: &metav1.ObjectMeta{Namespace: "default", Name: "robot"}}); err != nil {
		t.Fatal(err)
	}
	mk := func(name, node string) *corev1.Pod {
		p, err := client.Pods(api.Conn).Create(ctx, &corev1.Pod{Metadata: &metav1.ObjectMeta{Namespace: "default", Name: name},
			Spec: &corev1.PodSpec{ServiceAccountName: "robot", NodeName: node, Containers: []*corev1.Container{{Name: "c", Image: "x"}}}})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	mine, theirs := mk("mine", "n1"), mk("theirs", "n2")
	source := APITokenSource(api.ConnAs(t, user.NodeUserPrefix+"n1", user.NodesGroup))

	start := time.Now()
	tok, exp, err := source(ctx, mine, "", 3607)
	if err != nil {
		t.Fatal(err)
	}
	if d := exp.Sub(start); d < 3600*time.Second || d > 3608*time.Second {
		t.Errorf("expires in %v, want about 3607 s", d)
	}
	// The token is the account's.
	conn := api.ConnWithToken(t, tok)
	if _, err := client.ConfigMaps(conn).Get(ctx, "default", "absent"); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Fatalf("with the token: %v, want NotFound (authenticated)", err)
	}
	if _, _, err := source(ctx, theirs, "", 3607); err == nil || !strings.Contains(err.Error(), "different node") {
		t.Fatalf("another node's pod: %v", err)
	}
	// Through the agent's cache: one request for the same pod, audience and lifetime.
	calls := 0
	tc := &tokenCache{source: func(ctx context.Context, p *corev1.Pod, aud string, e int64) (string, time.Time, error) {
		calls++
		return source(ctx, p, aud, e)
	}, now: time.Now}
	for range 2 {
		if _, err := tc.get(ctx, mine, "", 3607); err != nil {
			t.Fatal(err)
		}
	}
	if calls != 1 {
		t.Errorf("%d token requests, want 1", calls)
	}
}
