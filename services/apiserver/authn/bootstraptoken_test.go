package authn

import (
	"context"
	"skiff.dev/internal/bootstraptoken"
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
	tok := bootstraptoken.New()
	if _, _, ok := bootstraptoken.Parse(tok); !ok {
		t.Fatalf("bootstraptoken.New made %q, not a bootstrap token", tok)
	}
	secrets := map[string]*corev1.Secret{}
	lookup := func(_ context.Context, namespace, name string) (*corev1.Secret, bool, error) {
		s, ok := secrets[namespace+"/"+name]
		return s, ok, nil
	}
	a := New(Config{BootstrapTokens: lookup, Now: func() time.Time { return now }})
	put := func(edit func(*corev1.Secret)) {
		s, err := bootstraptoken.Secret(tok, bootstraptoken.Options{TTL: time.Hour, ExtraGroups: []string{bootstraptoken.DefaultNodeGroup}}, now)
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
	if u.Name != "system:bootstrap:"+id || !slices.Equal(u.Groups, []string{bootstraptoken.Group, bootstraptoken.DefaultNodeGroup, user.AllAuthenticated}) {
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
		"not for authn":     {tok, now, func(s *corev1.Secret) { s.Data[bootstraptoken.UsageAuthKey] = []byte("false") }},
		"being deleted":     {tok, now, func(s *corev1.Secret) { s.Metadata.DeletionTimestamp = timestamppb.New(now) }},
		"unreadable expiry": {tok, now, func(s *corev1.Secret) { s.Data[bootstraptoken.ExpirationKey] = []byte("tomorrow") }},
		"deleted":           {tok, now, func(s *corev1.Secret) { delete(secrets, s.Metadata.Namespace+"/"+s.Metadata.Name) }},
	}
	for name, c := range refused {
		put(nil)
		if c.edit != nil {
			s := secrets[bootstraptoken.Namespace+"/"+bootstraptoken.SecretPrefix+id]
			c.edit(s)
		}
		if u, err := a.token(context.Background(), c.tok, c.at); err != errBootstrapToken {
			t.Errorf("%s: %v %v, want refused", name, u, err)
		}
	}
	if _, err := bootstraptoken.Secret(tok, bootstraptoken.Options{ExtraGroups: []string{"system:masters"}}, now); err == nil {
		t.Error("a bootstrap token in system:masters was made")
	}
}
