package apiserver

import (
	"errors"
	"net"
	"net/http"
	"sync/atomic"

	"github.com/soheilhy/cmux"
	"go.uber.org/zap/zapcore"
)

// etcdLogCore is the embedded etcd's log core. etcd's Close stops its own
// listeners and servers, and each of its serving goroutines then logs the
// "closed" error it gets back at error level, with a stack trace
// (embed.(*Etcd).errHandler logs before it looks whether etcd is
// closing): "setting up serving from embedded etcd failed." with "mux:
// server closed", "http: Server closed" and "use of closed network
// connection", on every clean stop. Once closing is set (closeEtcd, just
// before etcd's Close), a warning or error whose error is one of those is
// an info line without a stack: below the etcd logger's warn level, so
// not written. Any other error, and these ones before the shutdown, are
// logged as etcd logs them.
type etcdLogCore struct {
	zapcore.Core
	closing *atomic.Bool
}

func (c etcdLogCore) With(fields []zapcore.Field) zapcore.Core {
	return etcdLogCore{Core: c.Core.With(fields), closing: c.closing}
}

func (c etcdLogCore) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if c.Enabled(e.Level) {
		return ce.AddCore(e, c)
	}
	return ce
}

func (c etcdLogCore) Write(e zapcore.Entry, fields []zapcore.Field) error {
	if e.Level >= zapcore.WarnLevel && c.closing.Load() && closedOnShutdown(fields) {
		if !c.Core.Enabled(zapcore.InfoLevel) {
			return nil
		}
		e.Level, e.Stack = zapcore.InfoLevel, ""
	}
	return c.Core.Write(e, fields)
}

// closedOnShutdown says whether the entry's error is what a listener or
// server returns once it was closed.
func closedOnShutdown(fields []zapcore.Field) bool {
	for _, f := range fields {
		if f.Type != zapcore.ErrorType {
			continue
		}
		if err, ok := f.Interface.(error); ok && (errors.Is(err, net.ErrClosed) || errors.Is(err, http.ErrServerClosed) || errors.Is(err, cmux.ErrServerClosed)) {
			return true
		}
	}
	return false
}
