package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"skiff.dev/internal/client"
)

// streamer sends bytes to itself over TLS connections on the loopback
// interface at a given rate: the flood's traffic without the apiserver.
// Its listener and connections last as long as the process; start and
// stop begin and end the sending.
type streamer struct {
	ln       net.Listener
	senders  []*tls.Conn
	rate     float64 // bytes a second, over all connections
	message  []byte
	received atomic.Int64 // whole messages read
	readers  sync.WaitGroup

	cancel context.CancelFunc
	wg     sync.WaitGroup
	errMu  sync.Mutex
	err    error
}

// newStreamer listens with cfg's certificate and key and connects conns
// times to itself (the certificate is not checked: both ends are this
// process).
func newStreamer(cfg client.Config, conns int, rate float64, message int) (*streamer, error) {
	if conns <= 0 || message <= 0 {
		return nil, fmt.Errorf("-conns %d, -stream-message %d: each must be positive", conns, message)
	}
	cert, err := tls.LoadX509KeyPair(cfg.CertFile, cfg.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("-stream-bytes-per-s needs -tls-cert-file and -tls-key-file: %w", err)
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}})
	if err != nil {
		return nil, err
	}
	st := &streamer{ln: ln, rate: rate, message: make([]byte, message)}
	accepted := make(chan error, 1)
	go func() {
		var err error
		for range conns {
			var c net.Conn
			if c, err = ln.Accept(); err != nil {
				break
			}
			st.readers.Add(1)
			go st.read(c)
		}
		accepted <- err
	}()
	for range conns {
		c, err := tls.Dial("tcp", ln.Addr().String(), &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // both ends are this process
		if err != nil {
			st.close()
			return nil, err
		}
		if err := c.Handshake(); err != nil {
			st.close()
			return nil, err
		}
		st.senders = append(st.senders, c)
	}
	if err := <-accepted; err != nil {
		st.close()
		return nil, err
	}
	return st, nil
}

// read reads whole messages from c until it closes.
func (st *streamer) read(c net.Conn) {
	defer st.readers.Done()
	defer c.Close()
	buf := make([]byte, len(st.message))
	for {
		if _, err := io.ReadFull(c, buf); err != nil {
			return
		}
		st.received.Add(1)
	}
}

func (st *streamer) counts() (int64, int64) { return st.received.Load(), 0 }

// start sends from every connection, each its share of the rate: a
// message whenever the connection is behind its schedule.
func (st *streamer) start() {
	var ctx context.Context
	ctx, st.cancel = context.WithCancel(context.Background())
	each := st.rate / float64(len(st.senders))
	every := time.Duration(float64(len(st.message)) / each * float64(time.Second))
	for _, c := range st.senders {
		st.wg.Add(1)
		go func() {
			defer st.wg.Done()
			tick := time.NewTicker(every)
			defer tick.Stop()
			for {
				if _, err := c.Write(st.message); err != nil {
					st.fail(err)
					return
				}
				select {
				case <-ctx.Done():
					return
				case <-tick.C:
				}
			}
		}()
	}
}

func (st *streamer) fail(err error) {
	st.errMu.Lock()
	defer st.errMu.Unlock()
	if st.err == nil {
		st.err = err
	}
}

func (st *streamer) stop() error {
	st.cancel()
	st.wg.Wait()
	st.errMu.Lock()
	defer st.errMu.Unlock()
	return st.err
}

// close ends the connections and the listener, and waits for the readers.
func (st *streamer) close() {
	for _, c := range st.senders {
		c.Close()
	}
	st.ln.Close()
	st.readers.Wait()
}
