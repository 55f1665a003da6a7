package authn

import (
	"context"
	"slices"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	corev1 "skiff.dev/proto/core/v1"
	"skiff.dev/services/apiserver/user"
)

// TestBootstrapTokens: a bootstrap token authenticates as
// system:bootstrap:<id> in system:bootstrappers and its extra groups
// while its Secret exists, is of the bootstrap type, is for
// authentication, has the same secret and has not expired; every other
// case is the same refusal, which never shows the secret.
func TestBootstrapTokens(t *testing.T) {
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	tok := NewBootstrapToken()
	if _, _, ok := ParseBootstrapToken(tok); !ok {
		t.Fatalf("NewBootstrapToken made %q, not a bootstrap token", tok)
	}
	secrets := map[string]*corev1.Secret{}
	lookup := func(_ context.Context, namespace, name string) (*corev1.Secret, bool, error) {
		s, ok := secrets[namespace+"/"+name]
		return s, ok, nil
	}
	a := New(Config{BootstrapTokens: lookup, Now: func() time.Time { return now }})
	put := func(edit func(*corev1.Secret)) {
		s, err := BootstrapTokenSecret(tok, BootstrapTokenOptions{TTL: time.Hour, ExtraGroups: []string{BootstrapDefaultNodeGroup}}, now)
		if err != nil {
			t.Fatal(err)
		}
		if edit != nil {
			edit(s)
		}
		secrets[s.Metadata.Namespace+"/"+s.Metadata.Name] = s
	}
	put(nil)
	id := tok[:6]
	u, err := a.token(context.Background(), tok, now)
	if err != nil {
		t.Fatal(err)
	}
	if u.Name != "system:bootstrap:"+id || !slices.Equal(u.Groups, []string{BootstrapGroup, BootstrapDefaultNodeGroup, user.AllAuthenticated}) {
		t.Errorf("user %s %v", u.Name, u.Groups)
	}
	refused := map[string]struct {
		tok  string
		at   time.Time
		edit func(*corev1.Secret)
	}{
		"expired":           {tok, now.Add(time.Hour), nil},
		"another secret":    {id + ".0123456789abcdef", now, nil},
		"another type":      {tok, now, func(s *corev1.Secret) { s.Type = "Opaque" }},
		"not for authn":     {tok, now, func(s *corev1.Secret) { s.Data[BootstrapTokenUsageAuthKey] = []byte("false") }},
		"being deleted":     {tok, now, func(s *corev1.Secret) { s.Metadata.DeletionTimestamp = timestamppb.New(now) }},
		"unreadable expiry": {tok, now, func(s *corev1.Secret) { s.Data[BootstrapTokenExpirationKey] = []byte("tomorrow") }},
		"deleted":           {tok, now, func(s *corev1.Secret) { delete(secrets, s.Metadata.Namespace+"/"+s.Metadata.Name) }},
	}
	for name, c := range refused {
		put(nil)
		if c.edit != nil {
			s := secrets[BootstrapTokenNamespace+"/"+BootstrapTokenSecretPrefix+id]
			c.edit(s)
		}
		if u, err := a.token(context.Background(), c.tok, c.at); err != errBootstrapToken {
			t.Errorf("%s: %v %v, want refused", name, u, err)
		}
	}
	if _, err := BootstrapTokenSecret(tok, BootstrapTokenOptions{ExtraGroups: []string{"system:masters"}}, now); err == nil {
		t.Error("a bootstrap token in system:masters was made")
	}
}
