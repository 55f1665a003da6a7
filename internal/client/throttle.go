package client

import (
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	metav1 "skiff.dev/proto/meta/v1"
)

// ThrottleRetry makes a connection honour the apiserver's retry hints:
// a call refused with ResourceExhausted whose status details carry
// retryAfterSeconds (apierrors.NewTooManyRequests, the apiserver's flow
// control) is made again after that many seconds, plus jitter, up to
// Attempts calls in all; then the last refusal is returned. A wait that
// would pass the call's deadline is not begun: the refusal is returned at
// once. A ResourceExhausted without a hint (a message too large, say) is
// not retried.
//
// Every verb is retried, creates and updates too: the apiserver refuses a
// request for flow control before any handler runs (after authentication,
// before authorization, admission and storage), so a refused request was
// never executed and making it again cannot apply it twice.
//
// Streams are retried when they are server-streaming (Watch, Pods.Logs):
// the request message is sent again on a new stream if the refusal comes
// before any response message. The interceptors keep the request message
// of such a stream until its first response: it must not be changed after
// SendMsg.
type ThrottleRetry struct {
	// Attempts is the number of calls in all, the first included
	// (0: DefaultThrottleAttempts).
	Attempts int
	// MaxWait caps one wait whatever the hint (0: DefaultThrottleMaxWait).
	MaxWait time.Duration
	// Jitter adds up to Jitter times the hint to each wait, at random, so
	// that clients refused together do not come back together
	// (0: DefaultThrottleJitter; negative: none).
	Jitter float64

	// sleep waits d or until ctx ends (tests replace it).
	sleep func(ctx context.Context, d time.Duration) error
}

// Defaults of ThrottleRetry.
const (
	DefaultThrottleAttempts = 5
	DefaultThrottleMaxWait  = 30 * time.Second
	DefaultThrottleJitter   = 0.5
)

// RetryThrottled is the dial options of ThrottleRetry with its defaults:
// pass them to Dial or grpc.NewClient.
func RetryThrottled() []grpc.DialOption { return ThrottleRetry{}.DialOptions() }

// DialOptions are the unary and stream interceptors of r.
func (r ThrottleRetry) DialOptions() []grpc.DialOption {
	return []grpc.DialOption{
		grpc.WithChainUnaryInterceptor(r.UnaryInterceptor()),
		grpc.WithChainStreamInterceptor(r.StreamInterceptor()),
	}
}

func (r ThrottleRetry) withDefaults() ThrottleRetry {
	if r.Attempts <= 0 {
		r.Attempts = DefaultThrottleAttempts
	}
	if r.MaxWait <= 0 {
		r.MaxWait = DefaultThrottleMaxWait
	}
	if r.Jitter == 0 {
		r.Jitter = DefaultThrottleJitter
	}
	if r.sleep == nil {
		r.sleep = sleepCtx
	}
	return r
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return status.FromContextError(ctx.Err()).Err()
	case <-t.C:
		return nil
	}
}

// RetryAfter is the retry hint of a refusal for flow control: err is
// ResourceExhausted with retryAfterSeconds > 0 in its Status detail.
func RetryAfter(err error) (time.Duration, bool) {
	st, ok := status.FromError(err)
	if !ok || st.Code() != codes.ResourceExhausted {
		return 0, false
	}
	for _, d := range st.Details() {
		if s, ok := d.(*metav1.Status); ok {
			if secs := s.GetDetails().GetRetryAfterSeconds(); secs > 0 {
				return time.Duration(secs) * time.Second, true
			}
		}
	}
	return 0, false
}

// backoff says how long to wait before attempt+1 after err, or false to
// give up and return err.
func (r ThrottleRetry) backoff(ctx context.Context, err error, attempt int) (time.Duration, bool) {
	if err == nil || attempt >= r.Attempts {
		return 0, false
	}
	hint, ok := RetryAfter(err)
	if !ok {
		return 0, false
	}
	wait := hint
	if r.Jitter > 0 {
		wait += time.Duration(rand.Float64() * r.Jitter * float64(hint))
	}
	wait = min(wait, r.MaxWait)
	if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) <= wait {
		return 0, false // the retry could not finish in time
	}
	return wait, true
}

// UnaryInterceptor retries throttled unary calls.
func (r ThrottleRetry) UnaryInterceptor() grpc.UnaryClientInterceptor {
	r = r.withDefaults()
	return func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		for attempt := 1; ; attempt++ {
			err := invoker(ctx, method, req, reply, cc, opts...)
			wait, ok := r.backoff(ctx, err, attempt)
			if !ok {
				return err
			}
			if err := r.sleep(ctx, wait); err != nil {
				return err
			}
		}
	}
}

// StreamInterceptor retries server-streaming calls refused before their
// first response.
func (r ThrottleRetry) StreamInterceptor() grpc.StreamClientInterceptor {
	r = r.withDefaults()
	return func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
		cs, err := streamer(ctx, desc, cc, method, opts...)
		if err != nil || desc.ClientStreams {
			return cs, err
		}
		return &retryStream{ClientStream: cs, r: r, ctx: ctx, desc: desc, cc: cc, method: method, streamer: streamer, opts: opts}, nil
	}
}

// retryStream is a server-streaming call that starts again on a new stream
// when the server refuses it for flow control before answering.
type retryStream struct {
	grpc.ClientStream
	r        ThrottleRetry
	ctx      context.Context
	desc     *grpc.StreamDesc
	cc       *grpc.ClientConn
	method   string
	streamer grpc.Streamer
	opts     []grpc.CallOption

	req      any  // the request message, until the first response
	sent     bool // req was sent
	closed   bool // CloseSend was called
	answered bool // a message came: no retry any more
	attempt  int
}

func (s *retryStream) SendMsg(m any) error {
	if !s.answered {
		s.req, s.sent = m, true
	}
	return s.ClientStream.SendMsg(m)
}

func (s *retryStream) CloseSend() error {
	s.closed = true
	return s.ClientStream.CloseSend()
}

func (s *retryStream) RecvMsg(m any) error {
	for {
		err := s.ClientStream.RecvMsg(m)
		if err == nil || s.answered {
			if err == nil && !s.answered {
				s.answered, s.req = true, nil
			}
			return err
		}
		s.attempt++
		wait, ok := s.r.backoff(s.ctx, err, s.attempt)
		if !ok {
			return err
		}
		if err := s.r.sleep(s.ctx, wait); err != nil {
			return err
		}
		if err := s.restart(); err != nil {
			return err
		}
	}
}

// restart opens a new stream and sends again what was sent on the old.
func (s *retryStream) restart() error {
	cs, err := s.streamer(s.ctx, s.desc, s.cc, s.method, s.opts...)
	if err != nil {
		return err
	}
	s.ClientStream = cs
	if s.sent {
		// io.EOF: the stream ended already; RecvMsg tells how.
		if err := cs.SendMsg(s.req); err != nil && !errors.Is(err, io.EOF) {
			return err
		}
	}
	if s.closed {
		return cs.CloseSend()
	}
	return nil
}
