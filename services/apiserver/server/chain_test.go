package server

import (
	"context"
	"errors"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"google.golang.org/protobuf/proto"

	"skiff.dev/internal/apierrors"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
)

func TestRoutes(t *testing.T) {
	rs := Routes{}
	rs.Add("skiff.core.v1.Pods", "", "pods", true)
	cases := []struct {
		method string
		want   route
	}{
		{"/skiff.core.v1.Pods/Create", route{resource: "pods", verb: "create", namespaced: true}},
		{"/skiff.core.v1.Pods/UpdateStatus", route{resource: "pods", subresource: "status", verb: "update", namespaced: true}},
		{"/skiff.core.v1.Pods/Bind", route{resource: "pods", subresource: "binding", verb: "create", namespaced: true}},
		{"/skiff.core.v1.Pods/Watch", route{resource: "pods", verb: "watch", namespaced: true}},
		{"/skiff.core.v1.Pods/Logs", route{resource: "pods", subresource: "log", verb: "get", namespaced: true}},
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
