package agent

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/tools/portforward"
	"k8s.io/streaming/pkg/httpstream"
	"k8s.io/streaming/pkg/httpstream/spdy"
)

// dialSPDY speaks to a streaming server as client-go's dialer does: the
// bytes of a stream cross its buffered reads whole and in order, whatever
// the frames' sizes; a refused upgrade or another protocol is an error
// with the server's words; cancelling gives up on a server that does not
// answer.
func TestDialSPDY(t *testing.T) {
	// A stream's bytes in frames of growing sizes, from 1 byte to 64 KiB.
	var sent []byte
	for n := 1; n <= 64<<10; n *= 3 {
		sent = append(sent, bytes.Repeat([]byte{byte(n)}, n)...)
	}
	streams := make(chan httpstream.Stream, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/refused":
			http.Error(w, "no such session", http.StatusNotFound)
			return
		case "/other":
			r.Header.Set(httpstream.HeaderProtocolVersion, "portforward.k8s.io.v2")
		}
		protocol := r.Header.Get(httpstream.HeaderProtocolVersion)
		if _, err := httpstream.Handshake(r, w, []string{protocol}); err != nil {
			return
		}
		conn := spdy.NewResponseUpgrader().UpgradeResponse(w, r, func(s httpstream.Stream, _ <-chan struct{}) error {
			streams <- s
			return nil
		})
		if conn == nil {
			return
		}
		defer conn.Close()
		var s httpstream.Stream
		select {
		case s = <-streams:
		case <-conn.CloseChan(): // the client gave up on the connection
			return
		}
		for n, b := 1, sent; len(b) > 0; n *= 3 {
			if _, err := s.Write(b[:n]); err != nil {
				return
			}
			b = b[n:]
		}
		s.Close()
		<-conn.CloseChan()
	}))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	at := func(path string) *url.URL {
		u, _ := url.Parse(srv.URL + path)
		return u
	}

	t.Run("a stream's bytes", func(t *testing.T) {
		conn, err := dialSPDY(ctx, at("/ok"), portforward.PortForwardProtocolV1Name)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		s, err := conn.CreateStream(http.Header{"Streamtype": {"data"}})
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(s)
		if err != nil || !bytes.Equal(got, sent) {
			t.Fatalf("read %d bytes (%v), want the %d sent", len(got), err, len(sent))
		}
	})

	for _, tc := range []struct{ name, path, want string }{
		{"a refused upgrade", "/refused", "unable to upgrade connection: 404 Not Found: no such session"},
		{"another protocol", "/other", `server returned "portforward.k8s.io.v2"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conn, err := dialSPDY(ctx, at(tc.path), portforward.PortForwardProtocolV1Name)
			if err == nil {
				conn.Close()
				t.Fatal("dialed")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q, want it to hold %q", err, tc.want)
			}
		})
	}

	t.Run("cancelled while the server says nothing", func(t *testing.T) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		accepted := make(chan net.Conn, 1)
		go func() {
			c, err := l.Accept()
			if err == nil {
				accepted <- c
			}
		}()
		ctx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() {
			_, err := dialSPDY(ctx, &url.URL{Scheme: "http", Host: l.Addr().String(), Path: "/silent"}, portforward.PortForwardProtocolV1Name)
			done <- err
		}()
		select {
		case c := <-accepted:
			defer c.Close()
		case <-time.After(patience):
			t.Fatal("no connection")
		}
		cancel()
		select {
		case err := <-done:
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("error %v, want the cancellation", err)
			}
		case <-time.After(patience):
			t.Fatal("still dialing after the cancellation")
		}
	})
}
