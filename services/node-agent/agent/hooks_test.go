package agent

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"skiff.dev/internal/workqueue"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
)

func TestGraceAfterPreStop(t *testing.T) {
	for _, c := range []struct {
		name  string
		grace int64
		took  time.Duration
		want  int64
	}{
		{"quick hook", 30, 300 * time.Millisecond, 30},
		{"whole seconds are taken off", 30, 10*time.Second + 900*time.Millisecond, 20},
		{"the rest, at least the minimum", 5, 4 * time.Second, minimumGracePeriod},
		{"the hook used it all", 5, 5 * time.Second, minimumGracePeriod},
		{"no grace at all", 0, 0, minimumGracePeriod},
	} {
		if got := graceAfterPreStop(c.grace, c.took); got != c.want {
			t.Errorf("%s: graceAfterPreStop(%d, %v) = %d, want %d", c.name, c.grace, c.took, got, c.want)
		}
	}
}

// waitHook waits for the hook, or for the grace period on the clock.
func TestWaitHookBoundedByGracePeriod(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	clock := workqueue.NewFakeClock(time.Unix(1000, 0))

	done := make(chan struct{}) // a hook that never ends
	got := make(chan time.Duration, 1)
	go func() { got <- waitHook(clock, done, 7) }()
	if err := clock.BlockUntilWaiters(ctx, 1); err != nil {
		t.Fatal(err)
	}
	clock.Step(6 * time.Second)
	select {
	case d := <-got:
		t.Fatalf("waitHook returned after %v, before the grace period", d)
	default:
	}
	clock.Step(time.Second)
	if d := <-got; d != 7*time.Second {
		t.Errorf("waited %v, want the grace period 7s", d)
	}

	// A hook that ends: waitHook returns then, with the time it took.
	done = make(chan struct{})
	go func() { got <- waitHook(clock, done, 7) }()
	if err := clock.BlockUntilWaiters(ctx, 1); err != nil {
		t.Fatal(err)
	}
	clock.Step(3 * time.Second)
	close(done)
	if d := <-got; d != 3*time.Second {
		t.Errorf("waited %v, want 3s", d)
	}
}

func hookPod() *corev1.Pod {
	return &corev1.Pod{Metadata: &metav1.ObjectMeta{Name: "web", Namespace: "default", Uid: "u1"}}
}

func TestSleepHook(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	clock := workqueue.NewFakeClock(time.Unix(1000, 0))
	r := &hookRunner{clock: clock}
	c := &corev1.Container{Name: "app"}
	h := &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: 5}}

	errc := make(chan error, 1)
	go func() { _, err := r.run(ctx, h, hookPod(), c, "id", ""); errc <- err }()
	if err := clock.BlockUntilWaiters(ctx, 1); err != nil {
		t.Fatal(err)
	}
	clock.Step(5 * time.Second)
	if err := <-errc; err != nil {
		t.Fatalf("sleep 5s after 5s: %v", err)
	}

	// Interrupted (the container stops first): a failure.
	hctx, hcancel := context.WithCancel(ctx)
	msgc := make(chan string, 1)
	go func() { msg, _ := r.run(hctx, h, hookPod(), c, "id", ""); msgc <- msg }()
	if err := clock.BlockUntilWaiters(ctx, 1); err != nil {
		t.Fatal(err)
	}
	hcancel()
	want := `Sleep lifecycle hook (5) for Container "app" in Pod "web_default(u1)" failed - error: container terminated before sleep hook finished`
	if msg := <-msgc; msg != want {
		t.Errorf("message %q, want %q", msg, want)
	}
}

func TestTCPSocketHookFails(t *testing.T) {
	r := &hookRunner{clock: workqueue.RealClock()}
	h := &corev1.LifecycleHandler{TcpSocket: &corev1.TCPSocketAction{Port: intPort(80)}}
	msg, err := r.run(context.Background(), h, hookPod(), &corev1.Container{Name: "app"}, "id", "127.0.0.1")
	if !errors.Is(err, errInvalidHandler) || !strings.HasPrefix(msg, "Cannot run handler: invalid handler") {
		t.Errorf("tcpSocket hook: %q, %v; want Cannot run handler: invalid handler", msg, err)
	}
}

// httpGet hooks fail only when the request does, whatever the status (as
// in Kubernetes); HTTPS answered in HTTP falls back to HTTP with an event.
func TestHTTPGetHook(t *testing.T) {
	paths := make(chan string, 10)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		paths <- r.URL.Path + " " + r.Header.Get("X-Hook") + " " + r.Host
		http.Error(w, "no", http.StatusInternalServerError)
	}))
	defer srv.Close()
	host, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	portNum, _ := strconv.Atoi(port)
	c := &corev1.Container{Name: "app", Ports: []*corev1.ContainerPort{{Name: "http", ContainerPort: int32(portNum)}}}
	var events []string
	r := &hookRunner{probes: newProbeRunner(nil, nil), clock: workqueue.RealClock(), record: func(_, reason, msg string) {
		events = append(events, reason+": "+msg)
	}}
	named := &metav1.IntOrString{Value: &metav1.IntOrString_StrVal{StrVal: "http"}}

	h := &corev1.LifecycleHandler{HttpGet: &corev1.HTTPGetAction{Path: "/quit", Port: named,
		HttpHeaders: []*corev1.HTTPHeader{{Name: "X-Hook", Value: "preStop"}, {Name: "Host", Value: "app.local"}}}}
	if msg, err := r.run(context.Background(), h, hookPod(), c, "id", host); err != nil {
		t.Fatalf("a 500 answer failed the hook: %q", msg)
	}
	if got := <-paths; got != "/quit preStop app.local" {
		t.Errorf("request %q, want /quit with the headers", got)
	}

	h = &corev1.LifecycleHandler{HttpGet: &corev1.HTTPGetAction{Path: "/tls", Port: named, Scheme: "HTTPS"}}
	if msg, err := r.run(context.Background(), h, hookPod(), c, "id", host); err != nil {
		t.Fatalf("HTTPS to an HTTP server: %q (no fallback)", msg)
	}
	if got := <-paths; !strings.HasPrefix(got, "/tls") {
		t.Errorf("fallback request %q", got)
	}
	if len(events) != 1 || !strings.HasPrefix(events[0], "LifecycleHTTPFallback: request to HTTPS lifecycle hook") {
		t.Errorf("events %q, want one LifecycleHTTPFallback", events)
	}

	srv.Close() // refused now
	h = &corev1.LifecycleHandler{HttpGet: &corev1.HTTPGetAction{Path: "/quit", Port: named}}
	msg, err := r.run(context.Background(), h, hookPod(), c, "id", host)
	if err == nil || !strings.HasPrefix(msg, `HTTP lifecycle hook (/quit) for Container "app" in Pod "web_default(u1)" failed - error: `) {
		t.Errorf("refused: %q, %v", msg, err)
	}
}

func TestContainerSpecFindsInitContainers(t *testing.T) {
	p := &corev1.Pod{Spec: &corev1.PodSpec{
		InitContainers: []*corev1.Container{{Name: "sidecar"}},
		Containers:     []*corev1.Container{{Name: "app"}},
	}}
	if containerSpec(p, "app").GetName() != "app" || containerSpec(p, "sidecar").GetName() != "sidecar" || containerSpec(p, "x") != nil {
		t.Error("containerSpec does not find containers by name")
	}
}
