package authn

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"strings"
	"sync"
	"testing"
	"time"

	"skiff.dev/internal/apierrors"
)

// objects is a BoundObjectLookup over a map, counting its calls.
type objects struct {
	mu    sync.Mutex
	m     map[string]BoundObject // kind/ns/name -> uid (Name: deletion as RFC 3339, "" for none)
	calls int
}

func (o *objects) lookup(_ context.Context, kind, ns, name string) (string, time.Time, bool, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.calls++
	v, ok := o.m[kind+"/"+ns+"/"+name]
	if !ok {
		return "", time.Time{}, false, nil
	}
	var del time.Time
	if v.Name != "" {
		del, _ = time.Parse(time.RFC3339, v.Name)
	}
	return v.UID, del, true, nil
}

func (o *objects) set(key string, v BoundObject) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if v.UID == "" {
		delete(o.m, key)
		return
	}
	o.m[key] = v
}

func wantUnauthorized(t *testing.T, err error, want, secret string) {
	t.Helper()
	if !apierrors.IsUnauthorized(err) {
		t.Fatalf("error %v, want Unauthorized", err)
	}
	if !strings.Contains(err.Error(), want) {
		t.Errorf("error %q lacks %q", err, want)
	}
	if secret != "" && strings.Contains(err.Error(), secret) {
		t.Errorf("error %q echoes the token", err)
	}
}

func TestBoundTokens(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	sas := func(_ context.Context, ns, name string) (string, bool, error) {
		return "sa-uid", ns == "team-a" && name == "builder", nil
	}
	objs := &objects{m: map[string]BoundObject{"Pod/team-a/web": {UID: "pod-uid"}}}
	tokens := newSATokens(&key.PublicKey, "https://skiff.example", sas)
	tokens.audiences = []string{"https://skiff.example", "skiff"}
	tokens.objects = objs.lookup
	start := time.Unix(1_800_000_000, 0)
	ctx := context.Background()
	sign := func(t *testing.T, bt BoundToken) string {
		t.Helper()
		bt.Issuer, bt.Namespace, bt.Name, bt.UID, bt.IssuedAt = "https://skiff.example", "team-a", "builder", "sa-uid", start
		if bt.TTL == 0 {
			bt.TTL = time.Hour
		}
		if bt.Audiences == nil {
			bt.Audiences = []string{"skiff"}
		}
		tok, err := SignToken(key, bt)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}

	t.Run("pod-bound token: valid while the pod is, with the pod extras", func(t *testing.T) {
		tok := sign(t, BoundToken{Pod: &BoundObject{Name: "web", UID: "pod-uid"}})
		for range 2 {
			u, err := tokens.authenticate(ctx, tok, start.Add(time.Minute))
			if err != nil {
				t.Fatal(err)
			}
			if u.Name != "system:serviceaccount:team-a:builder" || u.UID != "sa-uid" ||
				u.Extra[ExtraPodName][0] != "web" || u.Extra[ExtraPodUID][0] != "pod-uid" {
				t.Fatalf("user %+v", u)
			}
		}
		// Being deleted: valid until a minute past its deletionTimestamp.
		del := start.Add(2 * time.Minute)
		objs.set("Pod/team-a/web", BoundObject{Name: del.Format(time.RFC3339), UID: "pod-uid"})
		if _, err := tokens.authenticate(ctx, tok, del.Add(30*time.Second)); err != nil {
			t.Fatalf("within the grace: %v", err)
		}
		_, err := tokens.authenticate(ctx, tok, del.Add(2*time.Minute))
		wantUnauthorized(t, err, "invalidated", tok)

		// Gone: refused, for good, without another lookup.
		objs.set("Pod/team-a/web", BoundObject{})
		_, err = tokens.authenticate(ctx, tok, start.Add(time.Minute))
		wantUnauthorized(t, err, "invalidated", tok)
		objs.set("Pod/team-a/web", BoundObject{UID: "pod-uid"})
		before := objs.calls
		_, err = tokens.authenticate(ctx, tok, start.Add(time.Minute))
		wantUnauthorized(t, err, "invalidated", tok)
		if objs.calls != before {
			t.Errorf("a revoked token looked its pod up again")
		}
	})
	t.Run("pod made again with another uid", func(t *testing.T) {
		objs.set("Pod/team-a/api", BoundObject{UID: "new-uid"})
		tok := sign(t, BoundToken{Pod: &BoundObject{Name: "api", UID: "old-uid"}})
		_, err := tokens.authenticate(ctx, tok, start)
		wantUnauthorized(t, err, "invalidated", tok)
	})
	t.Run("wrong audience", func(t *testing.T) {
		tok := sign(t, BoundToken{Audiences: []string{"vault"}, Pod: &BoundObject{Name: "web", UID: "pod-uid"}})
		_, err := tokens.authenticate(ctx, tok, start)
		wantUnauthorized(t, err, "audiences", tok)
	})
	t.Run("expired", func(t *testing.T) {
		tok := sign(t, BoundToken{TTL: 10 * time.Minute})
		if _, err := tokens.authenticate(ctx, tok, start.Add(9*time.Minute)); err != nil {
			t.Fatal(err)
		}
		_, err := tokens.authenticate(ctx, tok, start.Add(11*time.Minute))
		wantUnauthorized(t, err, "expired", tok)
	})
	t.Run("secret-bound", func(t *testing.T) {
		tok := sign(t, BoundToken{Secret: &BoundObject{Name: "s", UID: "s-uid"}})
		_, err := tokens.authenticate(ctx, tok, start)
		wantUnauthorized(t, err, "invalidated", tok)
		objs.set("Secret/team-a/s2", BoundObject{UID: "s2-uid"})
		tok = sign(t, BoundToken{Secret: &BoundObject{Name: "s2", UID: "s2-uid"}})
		if u, err := tokens.authenticate(ctx, tok, start); err != nil || u.Extra != nil {
			t.Fatalf("%+v %v", u, err)
		}
	})
	t.Run("legacy token keeps working", func(t *testing.T) {
		tok, err := SignServiceAccountToken(key, "https://skiff.example", "team-a", "builder", "sa-uid", start, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tokens.authenticate(ctx, tok, start); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("without a lookup of bound objects, pod-bound tokens are refused", func(t *testing.T) {
		plain := newSATokens(&key.PublicKey, "https://skiff.example", sas)
		tok := sign(t, BoundToken{Pod: &BoundObject{Name: "web", UID: "pod-uid"}})
		_, err := plain.authenticate(ctx, tok, start)
		wantUnauthorized(t, err, "", tok)
		// The issuer is the default audience.
		tok = sign(t, BoundToken{Audiences: []string{"https://skiff.example"}})
		if _, err := plain.authenticate(ctx, tok, start); err != nil {
			t.Fatal(err)
		}
	})
}
