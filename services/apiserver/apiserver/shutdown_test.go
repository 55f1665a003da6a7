package apiserver

import (
	"context"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// TestCleanShutdownLogsNoErrors runs the apiserver as the binary does (a
// logger that adds stack traces to errors, as logging.New's) and stops it
// as SIGTERM does: nothing is logged at error level, so no stack trace,
// the embedded etcd's included.
func TestCleanShutdownLogsNoErrors(t *testing.T) {
	core, logs := observer.New(zapcore.DebugLevel)
	serving := make(chan struct{})
	var once sync.Once
	log := zap.New(core, zap.AddStacktrace(zapcore.ErrorLevel), zap.Hooks(func(e zapcore.Entry) error {
		if e.Message == "apiserver serving" {
			once.Do(func() { close(serving) })
		}
		return nil
	}))
	s, err := New(Config{DataDir: t.TempDir(), Listen: "127.0.0.1:0", MetricsListen: "127.0.0.1:0", EtcdUnsafeNoFsync: true, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	select {
	case <-serving:
	case err := <-done:
		t.Fatalf("Run ended before serving: %v", err)
	case <-time.After(60 * time.Second):
		cancel()
		t.Fatal("the apiserver did not serve within 60s")
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not return within 30s of its context's end")
	}
	if logs.FilterMessage("apiserver stopped").Len() != 1 {
		t.Fatal(`no "apiserver stopped" log line`)
	}
	for _, e := range logs.All() {
		if e.Level >= zapcore.ErrorLevel {
			t.Errorf("%s %s (logger %q) %v\n%s", e.Level.CapitalString(), e.Message, e.LoggerName, e.ContextMap(), e.Stack)
		}
	}
}
