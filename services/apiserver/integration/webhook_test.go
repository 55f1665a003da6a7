package integration

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/protobuf/types/known/anypb"

	"skiff.dev/internal/await"
	"skiff.dev/internal/client"
	admissionv1 "skiff.dev/proto/admission/v1"
	admissionregistrationv1 "skiff.dev/proto/admissionregistration/v1"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/apiserver/admission"
	"skiff.dev/services/apiserver/apiserver"
	"skiff.dev/services/apiserver/apiservertest"
	"skiff.dev/services/apiserver/authn/pki"
)

// webhookServer is a real admission webhook on 127.0.0.1:0 whose answer
// the test chooses.
type webhookServer struct {
	admissionv1.UnimplementedAdmissionWebhookServer
	review func(ctx context.Context, req *admissionv1.AdmissionRequest) (*admissionv1.AdmissionResponse, error)

	mu   sync.Mutex
	seen []*admissionv1.AdmissionRequest
	sig  await.Signal
}

func (w *webhookServer) Review(ctx context.Context, req *admissionv1.AdmissionRequest) (*admissionv1.AdmissionResponse, error) {
	w.mu.Lock()
	w.seen = append(w.seen, req)
	w.mu.Unlock()
	w.sig.Poke()
	return w.review(ctx, req)
}

// saw returns the last request the webhook got for an object name.
func (w *webhookServer) saw(name string) *admissionv1.AdmissionRequest {
	w.mu.Lock()
	defer w.mu.Unlock()
	for i := len(w.seen) - 1; i >= 0; i-- {
		if w.seen[i].GetName() == name {
			return w.seen[i]
		}
	}
	return nil
}

// startWebhook serves w (plain text when creds is nil) and returns its address.
func startWebhook(t *testing.T, creds credentials.TransportCredentials, w *webhookServer) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var opts []grpc.ServerOption
	if creds != nil {
		opts = append(opts, grpc.Creds(creds))
	}
	srv := grpc.NewServer(opts...)
	admissionv1.RegisterAdmissionWebhookServer(srv, w)
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	return lis.Addr().String()
}

func allow(req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	return &admissionv1.AdmissionResponse{Uid: req.GetUid(), Allowed: true}
}

// relabel is a mutating webhook's answer: the pod with labels changed by fn.
func relabel(req *admissionv1.AdmissionRequest, fn func(*corev1.Pod)) (*admissionv1.AdmissionResponse, error) {
	p := &corev1.Pod{}
	if err := req.GetObject().UnmarshalTo(p); err != nil {
		return nil, err
	}
	fn(p)
	obj, err := anypb.New(p)
	if err != nil {
		return nil, err
	}
	resp := allow(req)
	resp.Object = obj
	return resp, nil
}

var podRules = []*admissionregistrationv1.RuleWithOperations{{
	Operations: []string{"CREATE"}, ApiGroups: []string{""}, ApiVersions: []string{"v1"}, Resources: []string{"pods"},
}}

func selectApp(app string) *metav1.LabelSelector {
	return &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}
}

// awaitWebhook creates probe pods (labels app=app) until the webhook
// server sees one: the apiserver's informer has the configuration.
func awaitWebhook(t *testing.T, s *apiservertest.Server, w *webhookServer, app string) {
	t.Helper()
	ctx := testContext(t)
	n := 0
	w.sig.Until(t, 20*time.Second, "the webhook configuration to take effect", ctx.Done(), func() (bool, string) {
		n++
		name := fmt.Sprintf("probe-%s-%d", app, n)
		p := pod("default", name)
		p.Metadata.Labels = map[string]string{"app": app}
		_, err := client.Pods(s.Conn).Create(ctx, p)
		return w.saw(name) != nil, fmt.Sprintf("probe %d not seen by the webhook (create: %v)", n, err)
	})
}

func labeled(name, app string) *corev1.Pod {
	p := pod("default", name)
	p.Metadata.Labels = map[string]string{"app": app}
	return p
}

func TestWebhooksMutateAndValidate(t *testing.T) {
	s := startAdmission(t)
	ctx := testContext(t)
	labeler := &webhookServer{review: func(_ context.Context, req *admissionv1.AdmissionRequest) (*admissionv1.AdmissionResponse, error) {
		return relabel(req, func(p *corev1.Pod) { p.Metadata.Labels["admitted-by"] = "labeler" })
	}}
	namecheck := &webhookServer{review: func(_ context.Context, req *admissionv1.AdmissionRequest) (*admissionv1.AdmissionResponse, error) {
		if req.GetName() == "forbidden" {
			return &admissionv1.AdmissionResponse{Uid: req.GetUid(), Result: &admissionv1.AdmissionResult{Message: "the name forbidden is not allowed"}}, nil
		}
		return allow(req), nil
	}}
	renamer := &webhookServer{review: func(_ context.Context, req *admissionv1.AdmissionRequest) (*admissionv1.AdmissionResponse, error) {
		return relabel(req, func(p *corev1.Pod) { p.Metadata.Name = "renamed" })
	}}
	_, err := client.MutatingWebhookConfigurations(s.Conn).Create(ctx, &admissionregistrationv1.MutatingWebhookConfiguration{
		Metadata: &metav1.ObjectMeta{Name: "mutators"},
		Webhooks: []*admissionregistrationv1.MutatingWebhook{
			{Name: "labeler.skiff.test", ClientConfig: &admissionregistrationv1.WebhookClientConfig{Url: "insecure://" + startWebhook(t, nil, labeler)},
				Rules: podRules, ObjectSelector: selectApp("web")},
			{Name: "renamer.skiff.test", ClientConfig: &admissionregistrationv1.WebhookClientConfig{Url: "insecure://" + startWebhook(t, nil, renamer)},
				Rules: podRules, ObjectSelector: selectApp("rename")},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	_, err = client.ValidatingWebhookConfigurations(s.Conn).Create(ctx, &admissionregistrationv1.ValidatingWebhookConfiguration{
		Metadata: &metav1.ObjectMeta{Name: "validators"},
		Webhooks: []*admissionregistrationv1.ValidatingWebhook{{Name: "namecheck.skiff.test",
			ClientConfig: &admissionregistrationv1.WebhookClientConfig{Url: "insecure://" + startWebhook(t, nil, namecheck)},
			Rules:        podRules, ObjectSelector: selectApp("web")}},
	})
	if err != nil {
		t.Fatal(err)
	}
	awaitWebhook(t, s, labeler, "web")
	awaitWebhook(t, s, namecheck, "web")
	awaitWebhook(t, s, renamer, "rename")

	pods := client.Pods(s.Conn)
	p, err := pods.Create(ctx, labeled("web-1", "web"))
	if err != nil {
		t.Fatal(err)
	}
	if p.GetMetadata().GetLabels()["admitted-by"] != "labeler" {
		t.Errorf("labels %v: the mutating webhook's label is missing", p.GetMetadata().GetLabels())
	}
	// The validating webhook saw the mutated object.
	req := namecheck.saw("web-1")
	seen := &corev1.Pod{}
	if req == nil || req.GetObject().UnmarshalTo(seen) != nil || seen.GetMetadata().GetLabels()["admitted-by"] != "labeler" {
		t.Errorf("the validating webhook did not see the mutated pod: %v", req)
	}
	if req.GetOperation() != "CREATE" || req.GetNamespace() != "default" || req.GetKind().GetKind() != "Pod" ||
		req.GetResource().GetResource() != "pods" || req.GetUserInfo().GetUsername() == "" {
		t.Errorf("review request %v", req)
	}

	_, err = pods.Create(ctx, labeled("forbidden", "web"))
	wantRefused(t, err, codes.PermissionDenied, `admission webhook "namecheck.skiff.test" denied the request: the name forbidden is not allowed`)
	if _, err := pods.Get(ctx, "default", "forbidden"); err == nil {
		t.Error("the refused pod was stored")
	}
	// Pods outside the webhooks' selectors pass untouched.
	if p, err := pods.Create(ctx, labeled("other", "db")); err != nil || p.GetMetadata().GetLabels()["admitted-by"] != "" {
		t.Errorf("a pod the selectors do not select: %v %v", p.GetMetadata().GetLabels(), err)
	}
	// A mutating webhook may not rename the object.
	_, err = pods.Create(ctx, labeled("original", "rename"))
	wantRefused(t, err, codes.PermissionDenied, `admission webhook "renamer.skiff.test" may not change metadata.name (from "original" to "renamed")`)
}

func counterValue(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	metrics:
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if v, ok := labels[l.GetName()]; ok && v != l.GetValue() {
					continue metrics
				}
			}
			return m.GetCounter().GetValue()
		}
	}
	return 0
}

func TestWebhookTimeoutFailurePolicy(t *testing.T) {
	s := startAdmission(t)
	ctx := testContext(t)
	// The webhook never answers: every call times out.
	slow := &webhookServer{review: func(ctx context.Context, req *admissionv1.AdmissionRequest) (*admissionv1.AdmissionResponse, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	}}
	url := "insecure://" + startWebhook(t, nil, slow)
	one := int32(1)
	_, err := client.ValidatingWebhookConfigurations(s.Conn).Create(ctx, &admissionregistrationv1.ValidatingWebhookConfiguration{
		Metadata: &metav1.ObjectMeta{Name: "slow"},
		Webhooks: []*admissionregistrationv1.ValidatingWebhook{
			{Name: "slow-fail.skiff.test", ClientConfig: &admissionregistrationv1.WebhookClientConfig{Url: url},
				Rules: podRules, ObjectSelector: selectApp("fail"), FailurePolicy: "Fail", TimeoutSeconds: &one},
			{Name: "slow-ignore.skiff.test", ClientConfig: &admissionregistrationv1.WebhookClientConfig{Url: url},
				Rules: podRules, ObjectSelector: selectApp("ignore"), FailurePolicy: "Ignore", TimeoutSeconds: &one},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	awaitWebhook(t, s, slow, "fail")

	pods := client.Pods(s.Conn)
	start := time.Now()
	_, err = pods.Create(ctx, labeled("failing", "fail"))
	wantRefused(t, err, codes.Internal, `failed calling webhook "slow-fail.skiff.test"`, "DeadlineExceeded", "timeout 1s")
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("the call took %v with a timeout of 1s", took)
	}
	if _, err := pods.Create(ctx, labeled("ignored", "ignore")); err != nil {
		t.Fatalf("failurePolicy Ignore: %v", err)
	}
	if slow.saw("ignored") == nil {
		t.Error("the Ignore webhook was not called")
	}
	if n := counterValue(t, s.Registry, "apiserver_admission_webhook_fail_open_total", map[string]string{"name": "slow-ignore.skiff.test", "type": "validate"}); n != 1 {
		t.Errorf("apiserver_admission_webhook_fail_open_total = %v, want 1", n)
	}
	if n := counterValue(t, s.Registry, "apiserver_admission_webhook_rejection_total", map[string]string{"name": "slow-fail.skiff.test", "error_type": "calling_webhook_error"}); n < 1 {
		t.Errorf("apiserver_admission_webhook_rejection_total{calling_webhook_error} = %v, want >= 1", n)
	}
}

// A webhook over TLS whose certificate the cluster CA signed: no caBundle
// needed.
func TestWebhookTLSWithClusterCA(t *testing.T) {
	s := apiservertest.Start(t, apiservertest.Secure(), apiservertest.WithConfig(func(c *apiserver.Config) {
		c.Admission = admission.Options{EnablePlugins: admission.DefaultPlugins, DisablePlugins: []string{admission.ServiceAccountName}}
	}))
	ctx := testContext(t)
	certPEM, keyPEM, err := s.CA.Issue(pki.Request{CommonName: "webhook", Hosts: []string{"127.0.0.1"}, Server: true, Validity: time.Hour}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	labeler := &webhookServer{review: func(_ context.Context, req *admissionv1.AdmissionRequest) (*admissionv1.AdmissionResponse, error) {
		return relabel(req, func(p *corev1.Pod) { p.Metadata.Labels["admitted-by"] = "tls" })
	}}
	addr := startWebhook(t, credentials.NewTLS(&tls.Config{Certificates: []tls.Certificate{cert}}), labeler)
	_, err = client.MutatingWebhookConfigurations(s.Conn).Create(ctx, &admissionregistrationv1.MutatingWebhookConfiguration{
		Metadata: &metav1.ObjectMeta{Name: "tls"},
		Webhooks: []*admissionregistrationv1.MutatingWebhook{{Name: "tls.skiff.test",
			ClientConfig: &admissionregistrationv1.WebhookClientConfig{Url: addr}, Rules: podRules, ObjectSelector: selectApp("web")}},
	})
	if err != nil {
		t.Fatal(err)
	}
	awaitWebhook(t, s, labeler, "web")
	p, err := client.Pods(s.Conn).Create(ctx, labeled("secure", "web"))
	if err != nil || p.GetMetadata().GetLabels()["admitted-by"] != "tls" {
		t.Fatalf("pod %v, %v: want the TLS webhook's label", p.GetMetadata().GetLabels(), err)
	}
	if u := labeler.saw("secure").GetUserInfo().GetUsername(); u != apiservertest.AdminUser {
		t.Errorf("the review names user %q, want %q", u, apiservertest.AdminUser)
	}
}

// Subresources pass the validating webhooks too: Pods.Bind is a CREATE of
// pods/binding.
func TestWebhookOnBinding(t *testing.T) {
	s := startAdmission(t)
	ctx := testContext(t)
	guard := &webhookServer{review: func(_ context.Context, req *admissionv1.AdmissionRequest) (*admissionv1.AdmissionResponse, error) {
		p := &corev1.Pod{}
		if err := req.GetObject().UnmarshalTo(p); err != nil {
			return nil, err
		}
		if p.GetSpec().GetNodeName() == "forbidden-node" {
			return &admissionv1.AdmissionResponse{Uid: req.GetUid(), Result: &admissionv1.AdmissionResult{Message: "no pods on forbidden-node"}}, nil
		}
		return allow(req), nil
	}}
	_, err := client.ValidatingWebhookConfigurations(s.Conn).Create(ctx, &admissionregistrationv1.ValidatingWebhookConfiguration{
		Metadata: &metav1.ObjectMeta{Name: "binding"},
		Webhooks: []*admissionregistrationv1.ValidatingWebhook{{Name: "binding.skiff.test",
			ClientConfig: &admissionregistrationv1.WebhookClientConfig{Url: "insecure://" + startWebhook(t, nil, guard)},
			Rules: []*admissionregistrationv1.RuleWithOperations{{
				Operations: []string{"CREATE"}, ApiGroups: []string{""}, ApiVersions: []string{"v1"}, Resources: []string{"pods/binding"},
			}}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	pods := client.Pods(s.Conn)
	podsClient := corev1.NewPodsClient(s.Conn)
	bind := func(name, node string) error {
		_, err := podsClient.Bind(ctx, &corev1.Binding{Metadata: &metav1.ObjectMeta{Namespace: "default", Name: name},
			Target: &corev1.ObjectReference{Kind: "Node", Name: node}})
		return err
	}
	n := 0
	guard.sig.Until(t, 20*time.Second, "the binding webhook to take effect", ctx.Done(), func() (bool, string) {
		n++
		name := fmt.Sprintf("probe-%d", n)
		if _, err := pods.Create(ctx, pod("default", name)); err != nil {
			t.Fatal(err)
		}
		err := bind(name, "node-a")
		return guard.saw(name) != nil, fmt.Sprintf("bind %d not seen (%v)", n, err)
	})
	req := guard.saw(fmt.Sprintf("probe-%d", n))
	if req.GetOperation() != "CREATE" || req.GetSubResource() != "binding" || req.GetResource().GetResource() != "pods" {
		t.Errorf("review of a bind: operation %q subresource %q resource %v", req.GetOperation(), req.GetSubResource(), req.GetResource())
	}
	if _, err := pods.Create(ctx, pod("default", "web")); err != nil {
		t.Fatal(err)
	}
	err = bind("web", "forbidden-node")
	wantRefused(t, err, codes.PermissionDenied, `admission webhook "binding.skiff.test" denied the request: no pods on forbidden-node`)
	if p, _ := pods.Get(ctx, "default", "web"); p.GetSpec().GetNodeName() != "" {
		t.Errorf("the refused bind was stored: nodeName %q", p.GetSpec().GetNodeName())
	}
	if err := bind("web", "node-b"); err != nil {
		t.Errorf("an allowed bind: %v", err)
	}
	// Creating pods does not call a pods/binding webhook.
	guard.mu.Lock()
	defer guard.mu.Unlock()
	for _, r := range guard.seen {
		if r.GetSubResource() != "binding" {
			t.Errorf("the pods/binding webhook saw %s %s/%s", r.GetOperation(), r.GetResource().GetResource(), r.GetName())
		}
	}
}
