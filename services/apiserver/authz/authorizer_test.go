package authz

import (
	"context"
	"errors"
	"flag"
	"io"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"skiff.dev/internal/apierrors"
	"skiff.dev/services/apiserver/server"
	"skiff.dev/services/apiserver/user"
)

// fixed is a mode with a fixed answer, counting its calls.
type fixed struct {
	d      Decision
	reason string
	calls  int
}

func (f *fixed) decide(context.Context, *server.RequestInfo) (Decision, string, error) {
	f.calls++
	return f.d, f.reason, nil
}

func union(ds ...decider) *Authorizer {
	a := &Authorizer{m: newMetrics(nil)}
	a.denied = a.m.decisions.WithLabelValues("none", "forbidden")
	for _, d := range ds {
		a.modes = append(a.modes, mode{d: d, allowed: a.m.privileged, denied: a.m.privileged})
	}
	a.ready.Store(true)
	return a
}

var bob = &user.Info{Name: "bob", Groups: []string{user.AllAuthenticated}}

func TestUnionAsksInOrder(t *testing.T) {
	req := as(bob, ri("get", "", "pods", "", "a", "x"))
	t.Run("the first allow decides", func(t *testing.T) {
		first, second := &fixed{d: Allow}, &fixed{d: Deny}
		if err := union(first, second).Authorize(context.Background(), req); err != nil {
			t.Fatal(err)
		}
		if second.calls != 0 {
			t.Error("the second mode was asked after an Allow")
		}
	})
	t.Run("a deny decides", func(t *testing.T) {
		first, second := &fixed{d: Deny, reason: "no"}, &fixed{d: Allow}
		err := union(first, second).Authorize(context.Background(), req)
		if !apierrors.IsForbidden(err) || second.calls != 0 {
			t.Fatalf("err %v, second asked %d times; want Forbidden without asking", err, second.calls)
		}
	})
	t.Run("no opinion passes on", func(t *testing.T) {
		first, second := &fixed{d: NoOpinion}, &fixed{d: Allow}
		if err := union(first, second).Authorize(context.Background(), req); err != nil || first.calls != 1 {
			t.Fatalf("err %v, first asked %d times", err, first.calls)
		}
	})
	t.Run("no mode allows: forbidden with the reasons", func(t *testing.T) {
		err := union(&fixed{d: NoOpinion, reason: "node says no"}, &fixed{d: NoOpinion}).Authorize(context.Background(), req)
		want := `pods "x" is forbidden: User "bob" cannot get resource "pods" in API group "" in the namespace "a": node says no`
		if !apierrors.IsForbidden(err) || err.Error() != want {
			t.Fatalf("got %v\nwant %s", err, want)
		}
	})
	t.Run("system:masters without asking", func(t *testing.T) {
		deny := &fixed{d: Deny}
		if err := union(deny).Authorize(context.Background(), as(&user.Info{Name: "root", Groups: []string{user.Masters}}, ri("delete", "", "nodes", "", "", "n"))); err != nil || deny.calls != 0 {
			t.Fatalf("err %v, asked %d times", err, deny.calls)
		}
	})
	t.Run("not started: unavailable", func(t *testing.T) {
		a := union(&fixed{d: Allow})
		a.ready.Store(false)
		if err := a.Authorize(context.Background(), req); !apierrors.IsServiceUnavailable(err) {
			t.Fatalf("got %v, want ServiceUnavailable", err)
		}
	})
}

func TestDenialMessages(t *testing.T) {
	tests := []struct {
		req  *server.RequestInfo
		want string
	}{
		{as(bob, ri("list", "", "pods", "", "team-a", "")),
			`pods is forbidden: User "bob" cannot list resource "pods" in API group "" in the namespace "team-a"`},
		{as(bob, &server.RequestInfo{Verb: "list", Resource: "pods", Namespaced: true}),
			`pods is forbidden: User "bob" cannot list resource "pods" in API group "" at the cluster scope`},
		{as(bob, ri("get", "", "nodes", "", "", "n1")),
			`nodes "n1" is forbidden: User "bob" cannot get resource "nodes" in API group "" at the cluster scope`},
		{as(bob, ri("update", "", "pods", "status", "team-a", "web")),
			`pods "web" is forbidden: User "bob" cannot update resource "pods/status" in API group "" in the namespace "team-a"`},
		{as(bob, ri("update", "apps", "deployments", "scale", "team-a", "web")),
			`deployments.apps "web" is forbidden: User "bob" cannot update resource "deployments/scale" in API group "apps" in the namespace "team-a"`},
		{as(bob, pathRI("/skiff.discovery.v1.Discovery/Groups")),
			`forbidden: User "bob" cannot get path "/skiff.discovery.v1.Discovery/Groups"`},
	}
	for _, tt := range tests {
		err := union().Authorize(context.Background(), tt.req)
		se := apierrors.FromError(err)
		if !apierrors.IsForbidden(err) || se.Error() != tt.want {
			t.Errorf("got %v\nwant %s", err, tt.want)
		}
		if c := status.Code(se.GRPCStatus().Err()); c != codes.PermissionDenied {
			t.Errorf("code %v, want PermissionDenied", c)
		}
	}
}

func TestOptions(t *testing.T) {
	parse := func(args ...string) (Options, error) {
		var o Options
		fs := flag.NewFlagSet("test", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		o.AddFlags(fs)
		return o, fs.Parse(args)
	}
	if o, err := parse(); err != nil || strings.Join(o.Modes, ",") != "Node,RBAC" {
		t.Errorf("default: %v %v, want Node,RBAC", o.Modes, err)
	}
	if o, err := parse("--authorization-mode=RBAC, Node"); err != nil || strings.Join(o.Modes, ",") != "RBAC,Node" {
		t.Errorf("RBAC, Node: %v %v", o.Modes, err)
	}
	for _, c := range []struct{ arg, wantErr string }{
		{"--authorization-mode=rbac", `unknown mode "rbac" (did you mean "RBAC"?`},
		{"--authorization-mode=Webhook", `unknown mode "Webhook"; the modes are AlwaysAllow, Node, RBAC`},
		{"--authorization-mode=RBAC,RBAC", `mode "RBAC" is given more than once`},
		{"--authorization-mode=", "at least one mode is needed"},
	} {
		_, err := parse(c.arg)
		if err == nil || !strings.Contains(err.Error(), c.wantErr) || !strings.Contains(err.Error(), "authorization-mode") {
			t.Errorf("%s: got %v, want an error naming the flag and %q", c.arg, err, c.wantErr)
		}
	}
	if err := (Options{Modes: []string{"Nodes"}}).Validate(); err == nil || !strings.HasPrefix(err.Error(), "--authorization-mode: ") {
		t.Errorf("Validate: got %v, want an error naming --authorization-mode", err)
	}
	if a, err := New(Config{}); a != nil || err != nil {
		t.Errorf("zero options: %v %v, want no authorizer", a, err)
	}
	if _, err := New(Config{Options: Options{Modes: []string{ModeRBAC}}}); err == nil {
		t.Error("RBAC without a loopback connection: no error")
	}
	if a, err := New(Config{Options: Options{Modes: []string{ModeAlwaysAllow}}}); err != nil || a.Authorize(context.Background(), as(bob, ri("delete", "", "nodes", "", "", "n"))) != nil {
		t.Errorf("AlwaysAllow: %v", errors.Join(err, a.Authorize(context.Background(), as(bob, ri("delete", "", "nodes", "", "", "n")))))
	}
}
