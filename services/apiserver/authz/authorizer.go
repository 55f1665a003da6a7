package authz

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"google.golang.org/grpc"

	"skiff.dev/internal/apierrors"
	"skiff.dev/internal/client"
	"skiff.dev/internal/informer"
	"skiff.dev/services/apiserver/server"
	"skiff.dev/services/apiserver/user"
)

// Decision is one mode's answer about a request.
type Decision uint8

const (
	// NoOpinion passes the request to the next mode (none left: denied).
	NoOpinion Decision = iota
	// Allow ends the decision: allowed.
	Allow
	// Deny ends the decision: refused.
	Deny
)

// decider is one mode. A reason explains a NoOpinion or Deny in the
// denial ("node "a" can only read pods bound to it"); an error ends the
// request with that error (NotFound, Unavailable).
type decider interface {
	decide(ctx context.Context, ri *server.RequestInfo) (Decision, string, error)
}

type alwaysAllow struct{}

func (alwaysAllow) decide(context.Context, *server.RequestInfo) (Decision, string, error) {
	return Allow, "", nil
}

// Config is what New needs besides the options.
type Config struct {
	Options
	// Loopback is the apiserver's connection to itself (as a member of
	// system:masters): the informers read RBAC objects and pods through it,
	// and the bootstrap policy is written through it.
	Loopback grpc.ClientConnInterface
	// Pods reads pods consistently for the node authorizer; nil reads them
	// through Loopback.
	Pods       PodReader
	Registerer prometheus.Registerer
	Logger     *zap.Logger
}

// Authorizer is the apiserver's server.Authorizer: members of
// system:masters are allowed at once (the loopback client, and every user
// when authentication is off), then the modes are asked in order.
type Authorizer struct {
	modes  []mode
	rbac   *rbacAuthorizer
	node   *nodeAuthorizer
	conn   grpc.ClientConnInterface
	log    *zap.Logger
	m      *metrics
	ready  atomic.Bool
	denied prometheus.Counter // no mode allowed
}

type mode struct {
	name            string
	d               decider
	allowed, denied prometheus.Counter
}

type runner interface {
	Run(ctx context.Context)
	Synced() <-chan struct{}
}

// New builds the authorizer of cfg's modes, or returns nil when
// authorization is off. Call Start once the server serves (a post-start
// hook): until it returned, requests of users outside system:masters are
// refused as Unavailable.
func New(cfg Config) (*Authorizer, error) {
	if !cfg.Enabled() {
		return nil, nil
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	if (cfg.Has(ModeRBAC) || cfg.Has(ModeNode)) && cfg.Loopback == nil {
		return nil, errors.New("authz: the RBAC and Node modes need the loopback connection")
	}
	a := &Authorizer{conn: cfg.Loopback, log: cfg.Logger, m: newMetrics(cfg.Registerer)}
	a.denied = a.m.decisions.WithLabelValues("none", "forbidden")
	for _, name := range cfg.Modes {
		var d decider
		switch name {
		case ModeAlwaysAllow:
			d = alwaysAllow{}
		case ModeNode:
			pods := cfg.Pods
			if pods == nil {
				pods = PodsFromClient(cfg.Loopback)
			}
			a.node = newNodeAuthorizer(informer.FromClient(client.Pods(cfg.Loopback)), pods, VolumesFromClient(cfg.Loopback), a.m, cfg.Logger.Named("node"))
			d = a.node
		case ModeRBAC:
			a.rbac = newRBAC(cfg.Loopback, a.m, cfg.Logger.Named("rbac"))
			d = a.rbac
		}
		a.modes = append(a.modes, mode{name: name, d: d,
			allowed: a.m.decisions.WithLabelValues(name, "allowed"),
			denied:  a.m.decisions.WithLabelValues(name, "forbidden"),
		})
	}
	if a.rbac == nil && a.node == nil {
		a.ready.Store(true)
	}
	return a, nil
}

// Start writes the bootstrap policy (RBAC), then runs the informers until
// ctx ends; it returns once they have listed.
func (a *Authorizer) Start(ctx context.Context) error {
	var runners []runner
	if a.rbac != nil {
		if err := Bootstrap(ctx, a.conn, a.log.Named("bootstrap")); err != nil {
			return err
		}
		runners = append(runners, a.rbac.informers()...)
	}
	if a.node != nil {
		runners = append(runners, a.node.pods)
	}
	synced := make([]interface{ Synced() <-chan struct{} }, len(runners))
	for i, r := range runners {
		go r.Run(ctx)
		synced[i] = r
	}
	if !informer.WaitForSync(ctx, synced...) {
		return fmt.Errorf("authorization: the informers did not list: %w", ctx.Err())
	}
	a.ready.Store(true)
	return nil
}

// Authorize implements server.Authorizer.
func (a *Authorizer) Authorize(ctx context.Context, ri *server.RequestInfo) error {
	u := ri.User
	if u.InGroup(user.Masters) {
		a.m.privileged.Inc()
		return nil
	}
	if u == nil {
		a.denied.Inc()
		return forbidden(ri)
	}
	if !a.ready.Load() {
		return apierrors.NewServiceUnavailable("the apiserver is starting: its authorization policy is not loaded yet; retry")
	}
	var buf [2]string
	reasons := buf[:0]
	for i := range a.modes {
		m := &a.modes[i]
		d, reason, err := m.d.decide(ctx, ri)
		if err != nil {
			return err
		}
		switch d {
		case Allow:
			m.allowed.Inc()
			return a.checkEscalation(ri)
		case Deny:
			m.denied.Inc()
			return forbidden(ri, reason)
		}
		if reason != "" {
			reasons = append(reasons, reason)
		}
	}
	a.denied.Inc()
	return forbidden(ri, reasons...)
}

// forbidden says who was denied what, as Kubernetes does:
//
//	pods "web" is forbidden: User "bob" cannot get resource "pods" in API group "" in the namespace "team-a"
//	nodes is forbidden: User "bob" cannot list resource "nodes" in API group "" at the cluster scope
//	forbidden: User "bob" cannot get path "/skiff.discovery.v1.Discovery/Groups"
//
// followed by the modes' reasons, if any.
func forbidden(ri *server.RequestInfo, reasons ...string) error {
	who := ri.User.String()
	var b strings.Builder
	resource, name := "", ""
	if !ri.IsResource() {
		fmt.Fprintf(&b, "forbidden: User %q cannot get path %q", who, ri.Path)
	} else {
		resource, name = ri.Resource, ri.Name
		if ri.APIGroup != "" {
			resource += "." + ri.APIGroup
		}
		b.WriteString(resource)
		if name != "" {
			fmt.Fprintf(&b, " %q", name)
		}
		full := ri.Resource
		if ri.Subresource != "" {
			full += "/" + ri.Subresource
		}
		fmt.Fprintf(&b, " is forbidden: User %q cannot %s resource %q in API group %q", who, ri.Verb, full, ri.APIGroup)
		if q := requestOf(ri); q.namespace != "" {
			fmt.Fprintf(&b, " in the namespace %q", q.namespace)
		} else {
			b.WriteString(" at the cluster scope")
		}
	}
	if len(reasons) > 0 {
		b.WriteString(": ")
		b.WriteString(strings.Join(reasons, "; "))
	}
	return denial{apierrors.NewForbidden(resource, name, b.String()), strings.Join(reasons, "; ")}
}

// denial is a refusal that keeps the modes' reasons apart from the
// message: an access review answers them alone, as Kubernetes' (RBAC
// gives none, so kubectl auth can-i says a plain "no").
type denial struct {
	*apierrors.StatusError
	reason string
}

func (d denial) Unwrap() error { return d.StatusError }

// DenialReason implements server's denial reasons (server.DenialReason).
func (d denial) DenialReason() string { return d.reason }
