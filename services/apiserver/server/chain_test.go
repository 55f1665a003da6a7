package server

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"google.golang.org/protobuf/proto"

	"skiff.dev/internal/apierrors"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
)

func TestRoutes(t *testing.T) {
	rs := Routes{}
	rs.Add("skiff.core.v1.Pods", "", "pods", true)
	rs.Add("skiff.apps.v1beta1.Deployments", "apps", "deployments", true)
	cases := []struct {
		method string
		want   route
	}{
		{"/skiff.core.v1.Pods/Create", route{version: "v1", resource: "pods", verb: "create", metricVerb: "POST", namespaced: true}},
		{"/skiff.core.v1.Pods/UpdateStatus", route{version: "v1", resource: "pods", subresource: "status", verb: "update", metricVerb: "PUT", namespaced: true}},
		{"/skiff.core.v1.Pods/Bind", route{version: "v1", resource: "pods", subresource: "binding", verb: "create", metricVerb: "POST", namespaced: true}},
		{"/skiff.core.v1.Pods/Watch", route{version: "v1", resource: "pods", verb: "watch", metricVerb: "WATCH", namespaced: true}},
		{"/skiff.core.v1.Pods/Logs", route{version: "v1", resource: "pods", subresource: "log", verb: "get", metricVerb: "CONNECT", namespaced: true}},
		{"/skiff.apps.v1beta1.Deployments/GetScale", route{group: "apps", version: "v1beta1", resource: "deployments", subresource: "scale", verb: "get", metricVerb: "GET", namespaced: true}},
		{"/grpc.health.v1.Health/Check", route{subresource: "grpc.health.v1.Health", verb: "check"}},
	}
	for _, c := range cases {
		if got := rs.info(c.method); got != c.want {
			t.Errorf("info(%s) = %+v, want %+v", c.method, got, c.want)
		}
	}
}

func TestToStatus(t *testing.T) {
	cases := []struct {
		name string
		err  error
		code codes.Code
	}{
		{"api error keeps its code", apierrors.NewNotFound("pods", "x"), codes.NotFound},
		{"conflict", apierrors.NewConflict("pods", "x", "stale"), codes.Aborted},
		{"client went away", context.Canceled, codes.Canceled},
		{"deadline", context.DeadlineExceeded, codes.DeadlineExceeded},
		{"grpc status passes", status.Error(codes.Unavailable, "x"), codes.Unavailable},
		{"anything else is internal", errors.New("boom"), codes.Internal},
	}
	for _, c := range cases {
		if got := status.Code(toStatus(c.err)); got != c.code {
			t.Errorf("%s: code %v, want %v", c.name, got, c.code)
		}
	}
	if toStatus(nil) != nil {
		t.Error("toStatus(nil) != nil")
	}
}

func TestAttributes(t *testing.T) {
	cases := []struct {
		name      string
		verb      string
		msg       proto.Message
		namespace string
		objName   string
		fieldSel  string
	}{
		{"object", "create", &corev1.Pod{Metadata: &metav1.ObjectMeta{Namespace: "a", Name: "p"}}, "a", "p", ""},
		{"object without namespace is in default", "create", &corev1.Pod{Metadata: &metav1.ObjectMeta{Name: "p"}}, "default", "p", ""},
		{"get", "get", &metav1.GetRequest{Namespace: "b", Name: "q"}, "b", "q", ""},
		{"list of all namespaces", "list", &metav1.ListOptions{FieldSelector: "spec.nodeName=n1"}, "", "", "spec.nodeName=n1"},
		{"log options", "get", &corev1.PodLogOptions{Namespace: "c", Name: "r"}, "c", "r", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ri := &RequestInfo{Resource: "pods", Verb: c.verb, Namespaced: true}
			ri.attributes(c.msg)
			if ri.Namespace != c.namespace || ri.Name != c.objName || ri.FieldSelector != c.fieldSel {
				t.Errorf("got namespace %q name %q fieldSelector %q; want %q %q %q", ri.Namespace, ri.Name, ri.FieldSelector, c.namespace, c.objName, c.fieldSel)
			}
		})
	}
}

// fakeStream is the server side of a stream whose client sent req.
type fakeStream struct {
	ctx context.Context
	req proto.Message
}

func (f *fakeStream) Context() context.Context     { return f.ctx }
func (f *fakeStream) SetHeader(metadata.MD) error  { return nil }
func (f *fakeStream) SendHeader(metadata.MD) error { return nil }
func (f *fakeStream) SetTrailer(metadata.MD)       {}
func (f *fakeStream) SendMsg(any) error            { return nil }
func (f *fakeStream) RecvMsg(m any) error {
	proto.Merge(m.(proto.Message), f.req)
	return nil
}

// TestRequestMetrics: apiserver_request_total and
// apiserver_request_duration_seconds have Kubernetes' labels and values
// (k8s.io/apiserver/pkg/endpoints/metrics): the verb of the REST call
// (POST, PUT, LIST, WATCH, CONNECT...), the HTTP code it would have had,
// the scope of the request (resource, namespace, cluster).
func TestRequestMetrics(t *testing.T) {
	rs := Routes{}
	rs.Add("skiff.core.v1.Pods", "", "pods", true)
	rs.Add("skiff.core.v1.Nodes", "", "nodes", false)
	rs.Add("skiff.apps.v1beta1.Deployments", "apps", "deployments", true)
	type labels map[string]string
	core := func(verb, code, resource, subresource, scope string) labels {
		return labels{"verb": verb, "code": code, "group": "", "version": "v1", "resource": resource,
			"subresource": subresource, "scope": scope, "component": "apiserver"}
	}
	nonResource := func(verb, method string) labels {
		return labels{"verb": verb, "code": "200", "group": "", "version": "", "resource": "",
			"subresource": method, "scope": "", "component": "apiserver"}
	}
	pod := &corev1.Pod{Metadata: &metav1.ObjectMeta{Namespace: "a", Name: "p"}}
	cases := []struct {
		name   string
		method string
		req    proto.Message
		stream bool
		answer bool // a stream's handler answers (header) before it ends
		err    error
		want   labels
	}{
		{"create", "/skiff.core.v1.Pods/Create", pod, false, false, nil, core("POST", "201", "pods", "", "resource")},
		{"create by generateName", "/skiff.core.v1.Pods/Create", &corev1.Pod{Metadata: &metav1.ObjectMeta{Namespace: "a", GenerateName: "p-"}}, false, false, nil, core("POST", "201", "pods", "", "resource")},
		{"create refused", "/skiff.core.v1.Pods/Create", pod, false, false, apierrors.NewAlreadyExists("pods", "p"), core("POST", "409", "pods", "", "resource")},
		{"invalid", "/skiff.core.v1.Pods/Create", pod, false, false, apierrors.NewInvalid("Pod", "p", nil), core("POST", "422", "pods", "", "resource")},
		{"get missing", "/skiff.core.v1.Pods/Get", &metav1.GetRequest{Namespace: "a", Name: "p"}, false, false, apierrors.NewNotFound("pods", "p"), core("GET", "404", "pods", "", "resource")},
		{"list in a namespace", "/skiff.core.v1.Pods/List", &metav1.ListOptions{Namespace: "a"}, false, false, nil, core("LIST", "200", "pods", "", "namespace")},
		{"list across namespaces", "/skiff.core.v1.Pods/List", &metav1.ListOptions{}, false, false, nil, core("LIST", "200", "pods", "", "cluster")},
		{"list throttled", "/skiff.core.v1.Pods/List", &metav1.ListOptions{}, false, false, apierrors.NewTooManyRequests("later", 1), core("LIST", "429", "pods", "", "cluster")},
		{"update", "/skiff.core.v1.Pods/Update", pod, false, false, nil, core("PUT", "200", "pods", "", "resource")},
		{"update of a stale object", "/skiff.core.v1.Pods/Update", pod, false, false, apierrors.NewConflict("pods", "p", "stale"), core("PUT", "409", "pods", "", "resource")},
		{"status", "/skiff.core.v1.Pods/UpdateStatus", pod, false, false, nil, core("PUT", "200", "pods", "status", "resource")},
		{"binding", "/skiff.core.v1.Pods/Bind", &corev1.Binding{Metadata: &metav1.ObjectMeta{Namespace: "a", Name: "p"}}, false, false, nil, core("POST", "201", "pods", "binding", "resource")},
		{"delete", "/skiff.core.v1.Pods/Delete", &metav1.DeleteRequest{Namespace: "a", Name: "p"}, false, false, nil, core("DELETE", "200", "pods", "", "resource")},
		{"internal error", "/skiff.core.v1.Pods/Delete", &metav1.DeleteRequest{Namespace: "a", Name: "p"}, false, false, errors.New("boom"), core("DELETE", "500", "pods", "", "resource")},
		{"cluster-scoped get", "/skiff.core.v1.Nodes/Get", &metav1.GetRequest{Name: "n"}, false, false, nil, core("GET", "200", "nodes", "", "resource")},
		{"cluster-scoped list", "/skiff.core.v1.Nodes/List", &metav1.ListOptions{}, false, false, nil, core("LIST", "200", "nodes", "", "cluster")},
		{"another group and version", "/skiff.apps.v1beta1.Deployments/GetScale", &metav1.GetRequest{Namespace: "a", Name: "d"}, false, false, nil,
			labels{"verb": "GET", "code": "200", "group": "apps", "version": "v1beta1", "resource": "deployments", "subresource": "scale", "scope": "resource", "component": "apiserver"}},
		{"health", "/grpc.health.v1.Health/Check", &metav1.GetRequest{}, false, false, nil, nonResource("GET", "/grpc.health.v1.Health/Check")},
		// Streams. A watch the client ends once it runs is a 200, as
		// Kubernetes' (whose status is written when the watch starts).
		{"watch ended by its client", "/skiff.core.v1.Pods/Watch", &metav1.ListOptions{Namespace: "a"}, true, true, context.Canceled, core("WATCH", "200", "pods", "", "namespace")},
		{"watch from a compacted revision", "/skiff.core.v1.Pods/Watch", &metav1.ListOptions{}, true, false, apierrors.NewExpired("too old"), core("WATCH", "410", "pods", "", "cluster")},
		{"watch abandoned before it started", "/skiff.core.v1.Pods/Watch", &metav1.ListOptions{}, true, false, context.Canceled, core("WATCH", "499", "pods", "", "cluster")},
		{"logs", "/skiff.core.v1.Pods/Logs", &corev1.PodLogOptions{Namespace: "a", Name: "p"}, true, true, nil, core("CONNECT", "200", "pods", "log", "resource")},
		{"reflection", "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo", &metav1.GetRequest{}, true, true, nil, nonResource("CONNECT", "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo")},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			reg := prometheus.NewPedanticRegistry()
			chain := NewChain(rs, NewMetrics(reg), zap.NewNop())
			if c.stream {
				handler := func(srv any, ss grpc.ServerStream) error {
					req := c.req.ProtoReflect().New().Interface()
					if err := ss.RecvMsg(req); err != nil {
						return err
					}
					if c.answer {
						if err := ss.SendHeader(nil); err != nil {
							return err
						}
					}
					return c.err
				}
				_ = chain.Stream(nil, &fakeStream{ctx: context.Background(), req: c.req}, &grpc.StreamServerInfo{FullMethod: c.method}, handler)
			} else {
				handler := func(context.Context, any) (any, error) { return nil, c.err }
				_, _ = chain.Unary(context.Background(), c.req, &grpc.UnaryServerInfo{FullMethod: c.method}, handler)
			}
			mfs, err := reg.Gather()
			if err != nil {
				t.Fatal(err)
			}
			got := map[string][]string{}
			for _, mf := range mfs {
				for _, m := range mf.GetMetric() {
					var l []string
					for _, p := range m.GetLabel() {
						l = append(l, fmt.Sprintf("%s=%q", p.GetName(), p.GetValue()))
					}
					got[mf.GetName()] = append(got[mf.GetName()], strings.Join(l, ","))
				}
			}
			format := func(l labels) string {
				var out []string
				for k, v := range l {
					out = append(out, fmt.Sprintf("%s=%q", k, v))
				}
				sort.Strings(out)
				return strings.Join(out, ",")
			}
			if want := format(c.want); len(got["apiserver_request_total"]) != 1 || got["apiserver_request_total"][0] != want {
				t.Errorf("apiserver_request_total series %v, want [%s]", got["apiserver_request_total"], want)
			}
			duration := got["apiserver_request_duration_seconds"]
			delete(c.want, "code") // Kubernetes' histogram has no code label
			switch {
			case c.stream && len(duration) != 0:
				t.Errorf("apiserver_request_duration_seconds observed a long-running request: %v", duration)
			case !c.stream && (len(duration) != 1 || duration[0] != format(c.want)):
				t.Errorf("apiserver_request_duration_seconds series %v, want [%s]", duration, format(c.want))
			}
		})
	}
}
