package app

import (
	"context"
	"io"
	"net/http"
	"testing"
	"time"

	"go.uber.org/zap"

	"skiff.dev/internal/await"
	"skiff.dev/internal/client"
	appsv1 "skiff.dev/proto/apps/v1"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/apiserver/apiservertest"
)

// TestRunOverTLS runs the program against an apiserver with TLS and
// authentication, as system:kube-controller-manager with a client
// certificate: it becomes ready and a ReplicaSet gets its pod.
func TestRunOverTLS(t *testing.T) {
	s := apiservertest.Start(t, apiservertest.Secure())
	creds := s.ClientConfig(t, "system:kube-controller-manager")
	o, err := ParseFlags([]string{"--server", s.Addr(), "--tls-ca-file", creds.CAFile, "--tls-cert-file", creds.CertFile, "--tls-key-file", creds.KeyFile,
		"--metrics-listen", "127.0.0.1:0", "--leader-elect=false", "--controllers", "replicaset"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	addrc := make(chan string, 1)
	done := make(chan error, 1)
	go func() { done <- Run(ctx, o, zap.NewNop(), func(a string) { addrc <- a }) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	var addr string
	select {
	case addr = <-addrc:
	case err := <-done:
		t.Fatalf("Run returned early: %v", err)
	}

	labels := map[string]string{"app": "web"}
	if _, err := client.ReplicaSets(s.Conn).Create(ctx, &appsv1.ReplicaSet{
		Metadata: &metav1.ObjectMeta{Namespace: "default", Name: "web"},
		Spec: &appsv1.ReplicaSetSpec{Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: &corev1.PodTemplateSpec{Metadata: &metav1.ObjectMeta{Labels: labels},
				Spec: &corev1.PodSpec{Containers: []*corev1.Container{{Name: "c", Image: "i"}}}}},
	}); err != nil {
		t.Fatal(err)
	}
	w, err := client.Pods(s.Conn).Watch(ctx, &metav1.ListOptions{Namespace: "default"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if _, err := w.Next(); err != nil {
		t.Fatalf("waiting for the ReplicaSet's pod: %v", err)
	}
	var ready await.Signal
	ready.Until(t, 10*time.Second, "/readyz", ctx.Done(), func() (bool, string) {
		resp, err := http.Get("http://" + addr + "/readyz")
		if err != nil {
			return false, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode == http.StatusOK, string(b)
	})
}
