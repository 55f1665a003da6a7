package tokencleaner

import (
	"context"
	"testing"
	"time"

	"skiff.dev/internal/bootstraptoken"
	"skiff.dev/internal/client"
	"skiff.dev/internal/informer"
	"skiff.dev/internal/workqueue"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/controller-manager/manager/managertest"
)

// TestDeletesExpiredTokens: the Secret of a token made with a TTL is
// deleted once the clock passes its expiration, not before; a token
// without expiration, one whose expiration does not parse (deleted at
// once: it authenticates nobody), a Secret of another type with an
// "expiration" key and a token Secret outside kube-system are as Kubernetes'
// cleaner leaves or deletes them.
func TestDeletesExpiredTokens(t *testing.T) {
	env := managertest.Start(t)
	t0 := time.Now().Truncate(time.Second)
	clock := workqueue.NewFakeClock(t0)
	env.Manager.Clock = clock
	secrets := informer.For(env.Manager.Informers, client.Secrets(env.Conn))
	managertest.Watch(env, secrets)
	ctrl := New(env.Manager)
	env.StartInformers()
	env.GoErr(ctrl.Run)

	sc := client.Secrets(env.Conn)
	create := func(s *corev1.Secret) {
		t.Helper()
		if _, err := sc.Create(env.Ctx, s); err != nil {
			t.Fatalf("creating %s: %v", s.GetMetadata().GetName(), err)
		}
	}
	token := func(ttl time.Duration) *corev1.Secret {
		t.Helper()
		s, err := bootstraptoken.Secret(bootstraptoken.New(), bootstraptoken.Options{TTL: ttl}, t0)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	hour, forever, garbled := token(time.Hour), token(0), token(0)
	garbled.Data[bootstraptoken.ExpirationKey] = []byte("next tuesday")
	other := &corev1.Secret{
		Metadata: &metav1.ObjectMeta{Namespace: bootstraptoken.Namespace, Name: "not-a-token"},
		Type:     "Opaque",
		Data:     map[string][]byte{bootstraptoken.ExpirationKey: []byte(t0.Format(time.RFC3339))},
	}
	elsewhere := token(time.Minute)
	elsewhere.Metadata.Namespace = "default"
	for _, s := range []*corev1.Secret{hour, forever, garbled, other, elsewhere} {
		create(s)
	}

	exists := func(s *corev1.Secret) bool {
		_, ok := secrets.Store().GetByName(s.GetMetadata().GetNamespace(), s.GetMetadata().GetName())
		return ok
	}
	env.Await(10*time.Second, "the garbled token deleted", func() (bool, string) {
		return !exists(garbled), "still there"
	})
	// The hour's token waits on the clock.
	ctx, cancel := context.WithTimeout(env.Ctx, 10*time.Second)
	defer cancel()
	if err := clock.BlockUntilWaiters(ctx, 1); err != nil {
		t.Fatalf("the controller did not wait on the clock: %v", err)
	}
	if !exists(hour) {
		t.Fatal("the hour's token was deleted before it expired")
	}
	clock.Step(time.Hour)
	env.Await(10*time.Second, "the hour's token deleted at its expiration", func() (bool, string) {
		return !exists(hour), "still there"
	})
	for _, s := range []*corev1.Secret{forever, other, elsewhere} {
		if !exists(s) {
			t.Errorf("%s/%s deleted", s.GetMetadata().GetNamespace(), s.GetMetadata().GetName())
		}
	}
}
