package integration

import (
	"context"
	"testing"
	"time"

	"skiff.dev/internal/client"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/apiserver/apiservertest"
)

func TestSmoke(t *testing.T) {
	s := apiservertest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cms := client.ConfigMaps(s.Conn)
	cm, err := cms.Create(ctx, &corev1.ConfigMap{Metadata: &metav1.ObjectMeta{Name: "a", Namespace: "default"}, Data: map[string]string{"k": "v"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("created %v", cm)
	got, err := cms.Get(ctx, "default", "a")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("got %v", got)
	l, err := cms.List(ctx, &metav1.ListOptions{Namespace: "default"})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("list %v", l)
	w, err := cms.Watch(ctx, &metav1.ListOptions{Namespace: "default"})
	if err != nil {
		t.Fatal(err)
	}
	ev, err := w.Next()
	t.Logf("event %v %v %v", ev.Type, ev.Object, err)
	cm.Data["k"] = "v2"
	if _, err := cms.Update(ctx, cm); err != nil {
		t.Fatal(err)
	}
	ev, err = w.Next()
	t.Logf("event %v %v %v", ev.Type, ev.Object, err)
}
