package scenarios

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"skiff.dev/internal/client"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/apiserver/apiserver"
	"skiff.dev/services/apiserver/apiservertest"
)

// TestCountAddedResumesAfterCutOff: the controllers scenario's pod watch,
// cut off by the server as too slow (here a watcher may lag one event),
// watches again from the last resourceVersion it received, as the error
// tells a client to, and counts every pod once.
func TestCountAddedResumesAfterCutOff(t *testing.T) {
	s := apiservertest.Start(t, apiservertest.WithConfig(func(c *apiserver.Config) { c.WatcherBuffer = 1 }))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	const n, creators = 200, 8
	counter := countAdded(ctx, s.Conn, n+1)

	pods := client.Pods(s.Conn)
	tmpl := benchReplicaSet().GetSpec().GetTemplate()
	create := func(name string) (*corev1.Pod, error) {
		return pods.Create(ctx, &corev1.Pod{Metadata: &metav1.ObjectMeta{Namespace: controllersNamespace, Name: name, Labels: tmpl.GetMetadata().GetLabels()}, Spec: tmpl.GetSpec()})
	}
	var wg sync.WaitGroup
	errs := make(chan error, creators)
	for g := range creators {
		wg.Go(func() {
			for i := g; i < n; i += creators {
				if _, err := create(fmt.Sprintf("p-%d", i)); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	// The last ADDED counted must be this one's: a watch resumed from too
	// early a revision would count pods twice and reach n+1 before it.
	marker, err := create("marker")
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-counter.all:
	case err := <-counter.failed:
		t.Fatalf("the watch failed after %d ADDED events and %d resumptions: %v", counter.n.Load(), counter.resumed.Load(), err)
	case <-ctx.Done():
		t.Fatalf("%d ADDED events of %d, %d resumptions", counter.n.Load(), n+1, counter.resumed.Load())
	}
	if got, want := counter.allRV, marker.GetMetadata().GetResourceVersion(); got != want {
		t.Errorf("the %d-th ADDED event was at resourceVersion %s, want the marker's %s: pods counted twice", n+1, got, want)
	}
	if counter.resumed.Load() == 0 {
		t.Error("the watch was never cut off: the test did not exercise the resume (the server's watcher buffer is one event)")
	}
	t.Logf("the watch was cut off and resumed %d times", counter.resumed.Load())
}

func TestNewerRV(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want bool
	}{
		{"7", "", true},
		{"", "7", false},
		{"10", "9", true},
		{"9", "10", false},
		{"12", "12", false},
		{"13", "12", true},
	} {
		if got := newerRV([]byte(tc.a), []byte(tc.b)); got != tc.want {
			t.Errorf("newerRV(%q, %q) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}
