package agent

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "skiff.dev/proto/core/v1"
)

// defaultTokenExpirationSeconds is a serviceAccountToken projection's
// lifetime when it names none (Kubernetes' default).
const defaultTokenExpirationSeconds = 3600

// tokenCache holds the tokens of serviceAccountToken projections, by pod,
// audience and lifetime, and asks for a new one as the kubelet does: when
// 80% of its life has passed, or after 24 hours.
type tokenCache struct {
	source func(ctx context.Context, pod *corev1.Pod, audience string, expirationSeconds int64) (string, time.Time, error)
	now    func() time.Time

	mu     sync.Mutex
	tokens map[string]cachedToken
}

type cachedToken struct {
	token           string
	issued, expires time.Time
}

// errNoTokenSource: the agent has no way to get tokens.
var errNoTokenSource = errors.New("the node agent has no token source for serviceAccountToken volumes (Config.TokenSource)")

func (tc *tokenCache) get(ctx context.Context, p *corev1.Pod, audience string, expirationSeconds int64) (string, error) {
	if tc == nil || tc.source == nil {
		return "", errNoTokenSource
	}
	if expirationSeconds == 0 {
		expirationSeconds = defaultTokenExpirationSeconds
	}
	key := fmt.Sprintf("%s/%s/%d", p.GetMetadata().GetUid(), audience, expirationSeconds)
	now := tc.now()
	tc.mu.Lock()
	t, ok := tc.tokens[key]
	tc.mu.Unlock()
	if ok && !tokenStale(t, now) {
		return t.token, nil
	}
	tok, exp, err := tc.source(ctx, p, audience, expirationSeconds)
	if err != nil {
		if ok && now.Before(t.expires) {
			return t.token, nil // the old one still works; try again next time
		}
		return "", fmt.Errorf("failed to fetch token: %w", err)
	}
	tc.mu.Lock()
	if tc.tokens == nil {
		tc.tokens = map[string]cachedToken{}
	}
	tc.tokens[key] = cachedToken{token: tok, issued: now, expires: exp}
	tc.mu.Unlock()
	return tok, nil
}

func tokenStale(t cachedToken, now time.Time) bool {
	life := t.expires.Sub(t.issued)
	return now.After(t.issued.Add(life*8/10)) || now.Sub(t.issued) > 24*time.Hour
}

// forget drops the tokens of a pod that is gone.
func (tc *tokenCache) forget(uid string) {
	if tc == nil {
		return
	}
	tc.mu.Lock()
	defer tc.mu.Unlock()
	for k := range tc.tokens {
		if len(k) > len(uid) && k[:len(uid)] == uid && k[len(uid)] == '/' {
			delete(tc.tokens, k)
		}
	}
}
