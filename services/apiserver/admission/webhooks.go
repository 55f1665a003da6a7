package admission

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"go.uber.org/zap"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"skiff.dev/internal/apierrors"
	"skiff.dev/internal/client"
	"skiff.dev/internal/informer"
	"skiff.dev/internal/object"
	admissionv1 "skiff.dev/proto/admission/v1"
	admissionregistrationv1 "skiff.dev/proto/admissionregistration/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/apiserver/admission/webhook"
)

// The webhook plugins' flag names.
const (
	MutatingWebhookName   = "MutatingAdmissionWebhook"
	ValidatingWebhookName = "ValidatingAdmissionWebhook"
)

// webhooks calls the admission webhooks registered by
// MutatingWebhookConfiguration (mutating) or ValidatingWebhookConfiguration
// objects over gRPC (skiff.admission.v1.AdmissionWebhook/Review) for the
// requests their rules and selectors select. Mutating webhooks run one
// after the other (configurations by name), each seeing the previous one's
// object; validating webhooks run in parallel. A webhook that cannot be
// called (down, timed out, a malformed answer) fails the request under
// failurePolicy Fail and is skipped, logged and counted under Ignore.
type webhooks struct {
	mutating   bool
	plugin     string
	synced     interface{ Synced() <-chan struct{} }
	hooks      atomic.Pointer[[]*webhook.Hook]
	clients    *webhook.Clients
	namespaces *namespaces
	m          *Metrics
	log        *zap.Logger
}

type mutatingWebhooks struct{ *webhooks }

type validatingWebhooks struct{ *webhooks }

func newWebhooks(d *Deps, mutating bool, plugin string) *webhooks {
	w := &webhooks{
		mutating:   mutating,
		plugin:     plugin,
		clients:    webhook.NewClients(d.Options.WebhookClusterCA),
		namespaces: newNamespaces(d, plugin),
		m:          d.Metrics,
		log:        d.Logger.With(zap.String("plugin", plugin)),
	}
	w.hooks.Store(new([]*webhook.Hook))
	return w
}

// watch rebuilds the webhooks on every change of inf's configurations.
func watch[T interface {
	*admissionregistrationv1.MutatingWebhookConfiguration | *admissionregistrationv1.ValidatingWebhookConfiguration
	object.Object
}](w *webhooks, inf *informer.Informer[T], compile func([]T) []*webhook.Hook) {
	w.synced = inf
	rebuild := func() {
		hooks := compile(inf.Store().List())
		w.hooks.Store(&hooks)
		w.clients.Retain(webhook.Keys(hooks))
	}
	inf.AddHandler(informer.Handler[T]{
		OnAdd:    func(T) { rebuild() },
		OnUpdate: func(_, _ T) { rebuild() },
		OnDelete: func(T) { rebuild() },
	})
}

func newMutatingWebhook(d *Deps) (any, error) {
	w := newWebhooks(d, true, MutatingWebhookName)
	watch(w, informer.For(d.Informers, client.MutatingWebhookConfigurations(d.Loopback)), webhook.CompileMutating)
	return mutatingWebhooks{w}, nil
}

func newValidatingWebhook(d *Deps) (any, error) {
	w := newWebhooks(d, false, ValidatingWebhookName)
	watch(w, informer.For(d.Informers, client.ValidatingWebhookConfigurations(d.Loopback)), webhook.CompileValidating)
	return validatingWebhooks{w}, nil
}

// Start closes the webhook connections when ctx ends.
func (w *webhooks) Start(ctx context.Context) error {
	go func() {
		<-ctx.Done()
		w.clients.Close()
	}()
	return nil
}

type metaObject interface{ GetMetadata() *metav1.ObjectMeta }

func labelsOf(m proto.Message) map[string]string {
	if o, ok := m.(metaObject); ok && m != nil {
		return o.GetMetadata().GetLabels()
	}
	return nil
}

// matching returns the hooks that want a.
func (w *webhooks) matching(ctx context.Context, a *Attributes) ([]*webhook.Hook, []error, error) {
	if err := waitSynced(ctx, w.plugin, w.synced); err != nil {
		return nil, nil, err
	}
	hooks := *w.hooks.Load()
	if len(hooks) == 0 {
		return nil, nil, nil
	}
	req := &webhook.Request{
		Operation: string(a.Operation), Group: a.Kind.GVK.Group, Version: a.Kind.GVK.Version,
		Resource: a.Kind.Resource, Subresource: a.Subresource, Namespaced: a.Kind.Namespaced,
	}
	obj := webhook.Object{Labels: labelsOf(a.Object), OldLabels: labelsOf(a.OldObject), IsNamespace: a.Kind.GVK.Group == "" && a.Kind.Resource == "namespaces"}
	var nsLabels map[string]string
	var nsErr error
	nsRead := false
	readNS := func() (map[string]string, error) {
		if !nsRead {
			nsRead = true
			ns, err := w.namespaces.get(ctx, a.Namespace)
			nsLabels, nsErr = ns.GetMetadata().GetLabels(), err
		}
		return nsLabels, nsErr
	}
	var out []*webhook.Hook
	var errs []error
	for _, h := range hooks {
		ok, err := h.Matches(req, obj, readNS)
		if ok {
			out = append(out, h)
			errs = append(errs, err)
		}
	}
	return out, errs, nil
}

// review builds the request sent to webhooks.
func review(a *Attributes, uid string) (*admissionv1.AdmissionRequest, error) {
	req := &admissionv1.AdmissionRequest{
		Uid:         uid,
		Kind:        &admissionv1.GroupVersionKind{Group: a.Kind.GVK.Group, Version: a.Kind.GVK.Version, Kind: a.Kind.GVK.Kind},
		Resource:    &admissionv1.GroupVersionResource{Group: a.Kind.GVK.Group, Version: a.Kind.GVK.Version, Resource: a.Kind.Resource},
		SubResource: a.Subresource,
		Name:        a.Name,
		Namespace:   a.Namespace,
		Operation:   string(a.Operation),
		DryRun:      a.DryRun,
	}
	if u := a.User; u != nil {
		req.UserInfo = &admissionv1.UserInfo{Username: u.Name, Uid: u.UID, Groups: u.Groups}
	}
	var err error
	if a.Object != nil {
		if req.Object, err = anypb.New(a.Object); err != nil {
			return nil, err
		}
	}
	if a.OldObject != nil {
		if req.OldObject, err = anypb.New(a.OldObject); err != nil {
			return nil, err
		}
	}
	return req, nil
}

// errCall is a failure to get a usable answer from a webhook (as opposed
// to the webhook refusing the request).
type errCall struct{ err error }

func (e *errCall) Error() string { return e.err.Error() }

// call sends req to h and returns its answer, or an *errCall.
func (w *webhooks) call(ctx context.Context, h *webhook.Hook, req *admissionv1.AdmissionRequest) (*admissionv1.AdmissionResponse, error) {
	c, err := w.clients.Get(h.ClientConfig)
	if err != nil {
		return nil, &errCall{err}
	}
	ctx, cancel := context.WithTimeout(ctx, h.Timeout)
	defer cancel()
	resp, err := c.Review(ctx, req)
	if err != nil {
		st := status.Convert(err)
		msg := fmt.Sprintf("%s: %s", st.Code(), st.Message())
		// The webhook's server sees the same deadline (grpc-timeout) and
		// may answer DeadlineExceeded a moment before ctx itself expires.
		if st.Code() == codes.DeadlineExceeded || errors.Is(ctx.Err(), context.DeadlineExceeded) {
			msg += fmt.Sprintf(" (timeout %v)", h.Timeout)
		}
		return nil, &errCall{errors.New(msg)}
	}
	if resp.GetUid() != req.GetUid() {
		return nil, &errCall{fmt.Errorf("the response's uid %q is not the request's %q", resp.GetUid(), req.GetUid())}
	}
	return resp, nil
}

// judge turns a webhook's outcome into the request's fate: nil to go on,
// or the error that refuses it.
func (w *webhooks) judge(a *Attributes, h *webhook.Hook, resp *admissionv1.AdmissionResponse, err error, took time.Duration) error {
	var ce *errCall
	switch {
	case errors.As(err, &ce):
		if h.FailOpen {
			w.m.ObserveWebhook(h.Name, w.mutating, a.Operation, false, took.Seconds())
			w.m.WebhookFailedOpen(h.Name, w.mutating)
			w.log.Warn("admission webhook failed; failurePolicy Ignore lets the request pass",
				zap.String("webhook", h.Name), zap.String("resource", a.Kind.Resource), zap.String("namespace", a.Namespace),
				zap.String("name", a.Name), zap.Error(ce.err))
			return nil
		}
		w.m.ObserveWebhook(h.Name, w.mutating, a.Operation, true, took.Seconds())
		w.m.WebhookRejected(h.Name, w.mutating, a.Operation, "calling_webhook_error")
		return apierrors.NewInternal(fmt.Errorf("failed calling webhook %q: %w", h.Name, ce.err))
	case err != nil:
		w.m.ObserveWebhook(h.Name, w.mutating, a.Operation, true, took.Seconds())
		w.m.WebhookRejected(h.Name, w.mutating, a.Operation, "apiserver_internal_error")
		return err
	case !resp.GetAllowed():
		w.m.ObserveWebhook(h.Name, w.mutating, a.Operation, true, took.Seconds())
		w.m.WebhookRejected(h.Name, w.mutating, a.Operation, "no_error")
		msg := resp.GetResult().GetMessage()
		if msg == "" {
			msg = "without explanation"
		}
		text := fmt.Sprintf("admission webhook %q denied the request: %s", h.Name, msg)
		if resp.GetResult().GetCode() == 400 {
			return apierrors.NewBadRequest(text)
		}
		return apierrors.NewForbidden(a.Kind.Resource, a.Name, text)
	}
	w.m.ObserveWebhook(h.Name, w.mutating, a.Operation, false, took.Seconds())
	return nil
}

// Admit calls the matching mutating webhooks in order; each may replace
// the object.
func (w mutatingWebhooks) Admit(ctx context.Context, a *Attributes) error {
	hooks, matchErrs, err := w.matching(ctx, a)
	if err != nil || len(hooks) == 0 {
		return err
	}
	uid := uuid.NewString()
	for i, h := range hooks {
		start := time.Now()
		if matchErrs[i] != nil {
			if err := w.judge(a, h, nil, &errCall{matchErrs[i]}, time.Since(start)); err != nil {
				return err
			}
			continue
		}
		req, err := review(a, uid)
		if err != nil {
			return apierrors.NewInternal(err)
		}
		resp, err := w.call(ctx, h, req)
		if err == nil && resp.GetAllowed() && resp.GetObject() != nil {
			err = w.patch(a, h, resp.GetObject())
		}
		if err := w.judge(a, h, resp, err, time.Since(start)); err != nil {
			return err
		}
	}
	return nil
}

// patch replaces a.Object with a webhook's object, which must be the same
// kind and keep what the server owns in metadata.
func (w mutatingWebhooks) patch(a *Attributes, h *webhook.Hook, obj *anypb.Any) error {
	want := a.Object.ProtoReflect().Descriptor().FullName()
	if got := obj.MessageName(); got != want {
		return &errCall{fmt.Errorf("the response's object is a %s, want a %s", got, want)}
	}
	next := a.Object.ProtoReflect().New().Interface()
	if err := obj.UnmarshalTo(next); err != nil {
		return &errCall{fmt.Errorf("the response's object: %w", err)}
	}
	if field, from, to := ownedMetadataChange(a.Object.(metaObject).GetMetadata(), next.(metaObject).GetMetadata()); field != "" {
		return apierrors.NewForbidden(a.Kind.Resource, a.Name, fmt.Sprintf("admission webhook %q may not change metadata.%s (from %q to %q): the server owns it", h.Name, field, from, to))
	}
	a.Object = next
	return nil
}

// ownedMetadataChange names the first metadata field the server owns that
// differs between old and next.
func ownedMetadataChange(old, next *metav1.ObjectMeta) (field, from, to string) {
	for _, f := range [...]struct{ name, a, b string }{
		{"name", old.GetName(), next.GetName()},
		{"namespace", old.GetNamespace(), next.GetNamespace()},
		{"uid", old.GetUid(), next.GetUid()},
		{"resourceVersion", old.GetResourceVersion(), next.GetResourceVersion()},
		{"creationTimestamp", old.GetCreationTimestamp().AsTime().String(), next.GetCreationTimestamp().AsTime().String()},
		{"generation", fmt.Sprint(old.GetGeneration()), fmt.Sprint(next.GetGeneration())},
	} {
		if f.a != f.b {
			if f.name == "creationTimestamp" && proto.Equal(old.GetCreationTimestamp(), next.GetCreationTimestamp()) {
				continue
			}
			return f.name, f.a, f.b
		}
	}
	return "", "", ""
}

// Validate calls the matching validating webhooks in parallel; the first
// refusal (in webhook order) refuses the request.
func (w validatingWebhooks) Validate(ctx context.Context, a *Attributes) error {
	hooks, matchErrs, err := w.matching(ctx, a)
	if err != nil || len(hooks) == 0 {
		return err
	}
	req, err := review(a, uuid.NewString())
	if err != nil {
		return apierrors.NewInternal(err)
	}
	one := func(i int) error {
		start := time.Now()
		if matchErrs[i] != nil {
			return w.judge(a, hooks[i], nil, &errCall{matchErrs[i]}, time.Since(start))
		}
		resp, err := w.call(ctx, hooks[i], req)
		return w.judge(a, hooks[i], resp, err, time.Since(start))
	}
	if len(hooks) == 1 {
		return one(0)
	}
	errs := make([]error, len(hooks))
	var wg sync.WaitGroup
	for i := range hooks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = one(i)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
