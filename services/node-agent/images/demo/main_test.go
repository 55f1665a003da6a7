package main

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func newTestServer(t *testing.T, readyAfter time.Duration) (*server, *time.Time, *bytes.Buffer, *httptest.Server) {
	t.Helper()
	start := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	now := start
	var out bytes.Buffer
	s := &server{
		version:       "v9",
		hostname:      "pod-a",
		started:       start,
		readyAfter:    readyAfter,
		unhealthyFile: filepath.Join(t.TempDir(), "unhealthy"),
		now:           func() time.Time { return now },
		out:           &out,
		exit:          func(int) {},
	}
	ts := httptest.NewServer(s.handler())
	t.Cleanup(ts.Close)
	return s, &now, &out, ts
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestServer(t *testing.T) {
	s, now, out, ts := newTestServer(t, 2*time.Second)

	if code, body := get(t, ts.URL+"/"); code != 200 || body != "demo v9 on pod-a\n" {
		t.Errorf("GET / = %d %q", code, body)
	}
	if code, _ := get(t, ts.URL+"/nope"); code != 404 {
		t.Errorf("GET /nope = %d, want 404", code)
	}

	// Readiness follows the (fake) clock.
	if code, _ := get(t, ts.URL+"/ready"); code != 503 {
		t.Errorf("GET /ready before the delay = %d, want 503", code)
	}
	*now = now.Add(2 * time.Second)
	if code, _ := get(t, ts.URL+"/ready"); code != 200 {
		t.Errorf("GET /ready after the delay = %d, want 200", code)
	}

	// Liveness: the file, then /fail.
	if code, _ := get(t, ts.URL+"/healthz"); code != 200 {
		t.Errorf("GET /healthz = %d, want 200", code)
	}
	if err := os.WriteFile(s.unhealthyFile, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _ := get(t, ts.URL+"/healthz"); code != 500 {
		t.Errorf("GET /healthz with the file = %d, want 500", code)
	}
	os.Remove(s.unhealthyFile)
	if code, _ := get(t, ts.URL+"/healthz"); code != 200 {
		t.Errorf("GET /healthz without the file = %d, want 200", code)
	}
	get(t, ts.URL+"/fail")
	if code, _ := get(t, ts.URL+"/healthz"); code != 500 {
		t.Errorf("GET /healthz after /fail = %d, want 500", code)
	}

	if !strings.Contains(out.String(), "GET /healthz 500\n") || !strings.Contains(out.String(), "GET / 200\n") {
		t.Errorf("request log lacks lines:\n%s", out.String())
	}
}

func TestServerFileAndEnv(t *testing.T) {
	_, _, _, ts := newTestServer(t, 0)
	p := filepath.Join(t.TempDir(), "f")
	os.WriteFile(p, []byte("hello"), 0o644)
	if code, body := get(t, ts.URL+"/file?path="+p); code != 200 || body != "hello" {
		t.Errorf("GET /file = %d %q", code, body)
	}
	if code, _ := get(t, ts.URL+"/file?path="+p+"-missing"); code != 404 {
		t.Errorf("GET /file missing = %d, want 404", code)
	}
	t.Setenv("DEMO_TEST_VAR", "x1")
	if _, body := get(t, ts.URL+"/env"); !strings.Contains(body, "DEMO_TEST_VAR=x1\n") {
		t.Errorf("GET /env lacks DEMO_TEST_VAR:\n%s", body)
	}
}

func TestTools(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "f")
	cases := []struct {
		name string
		args []string
		code int
		out  string
	}{
		{"true", nil, 0, ""},
		{"false", nil, 1, ""},
		{"exit", []string{"3"}, 3, ""},
		{"echo", []string{"a", "b"}, 0, "a b\n"},
		{"test-file", []string{f}, 1, ""},
		{"write", []string{f, "hi", "there"}, 0, ""},
		{"test-file", []string{f}, 0, ""},
		{"cat", []string{f}, 0, "hi there\n"},
		{"rm", []string{f}, 0, ""},
		{"test-file", []string{f}, 1, ""},
		{"touch", []string{f}, 0, ""},
		{"test-file", []string{f}, 0, ""},
		{"sleep", []string{"1ms"}, 0, ""},
	}
	for _, c := range cases {
		var out, errOut bytes.Buffer
		if code := tools[c.name](c.args, &out, &errOut); code != c.code || out.String() != c.out {
			t.Errorf("%s %v = %d %q (stderr %q), want %d %q", c.name, c.args, code, out.String(), errOut.String(), c.code, c.out)
		}
	}
}

func TestParseDelay(t *testing.T) {
	for in, want := range map[string]time.Duration{"": 0, "0": 0, "2": 2 * time.Second, "1.5": 1500 * time.Millisecond, "200ms": 200 * time.Millisecond} {
		if got, err := parseDelay(in); err != nil || got != want {
			t.Errorf("parseDelay(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	if _, err := parseDelay("soon"); err == nil {
		t.Error("parseDelay(soon): no error")
	}
}

// TestFrontendCallsBackend: /call shows the backend's answer, a 502 with
// the reason when the backend fails or is unreachable.
func TestFrontendCallsBackend(t *testing.T) {
	_, _, _, backend := newTestServer(t, 0)
	front, _, _, ts := newTestServer(t, 0)
	if code, _ := get(t, ts.URL+"/call"); code != 404 {
		t.Errorf("/call without a backend = %d, want 404", code)
	}
	front.client = backend.Client()
	front.backend = backend.URL + "/"
	if code, body := get(t, ts.URL+"/call"); code != 200 || body != "frontend v9 on pod-a -> demo v9 on pod-a\n" {
		t.Errorf("/call = %d %q", code, body)
	}
	front.backend = backend.URL + "/nope"
	if code, body := get(t, ts.URL+"/call"); code != 502 || !strings.Contains(body, "404 Not Found") {
		t.Errorf("/call of a failing backend = %d %q", code, body)
	}
	backend.Close()
	front.backend = backend.URL + "/"
	if code, body := get(t, ts.URL+"/call"); code != 502 || !strings.Contains(body, "frontend v9 on pod-a -> ") {
		t.Errorf("/call of a closed backend = %d %q", code, body)
	}
}

func TestResolve(t *testing.T) {
	s, _, _, ts := newTestServer(t, 0)
	s.lookup = func(_ context.Context, host string) ([]string, error) {
		if host == "web.shop.svc.cluster.local" {
			return []string{"10.244.2.3", "10.244.1.9"}, nil
		}
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	if code, body := get(t, ts.URL+"/resolve?name=web.shop.svc.cluster.local"); code != 200 || body != "10.244.1.9\n10.244.2.3\n" {
		t.Errorf("/resolve = %d %q", code, body)
	}
	if code, body := get(t, ts.URL+"/resolve?name=nope"); code != 404 || !strings.Contains(body, "no such host") {
		t.Errorf("/resolve of a missing name = %d %q", code, body)
	}
}
