package webhook

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"skiff.dev/internal/labels"
	admissionregistrationv1 "skiff.dev/proto/admissionregistration/v1"
	metav1 "skiff.dev/proto/meta/v1"
)

// Hook is one registered webhook, ready to match requests.
type Hook struct {
	Name          string // the webhook's name ("pod-labels.example.com")
	Configuration string // its configuration's name
	ClientConfig  *admissionregistrationv1.WebhookClientConfig
	Rules         []*admissionregistrationv1.RuleWithOperations
	// FailOpen is failurePolicy Ignore: a failed call lets the request pass.
	FailOpen bool
	Timeout  time.Duration
	// NamespaceSelector and ObjectSelector; Everything when unset.
	NamespaceSelector labels.Selector
	ObjectSelector    labels.Selector
	// Err is set when a selector could not be parsed (validation should
	// have refused it): every call the hook matches fails by its policy.
	Err error
}

// DefaultTimeout is a webhook's timeout when the configuration sets none.
const DefaultTimeout = 10 * time.Second

func newHook(config, name string, cc *admissionregistrationv1.WebhookClientConfig, rules []*admissionregistrationv1.RuleWithOperations,
	failurePolicy string, timeout *int32, nsSel, objSel *metav1.LabelSelector) *Hook {
	h := &Hook{
		Name: name, Configuration: config, ClientConfig: cc, Rules: rules,
		FailOpen: failurePolicy == "Ignore", Timeout: DefaultTimeout,
	}
	if timeout != nil && *timeout > 0 {
		h.Timeout = time.Duration(*timeout) * time.Second
	}
	var err error
	if h.NamespaceSelector, err = selector(nsSel); err != nil {
		h.Err = fmt.Errorf("namespaceSelector: %w", err)
	}
	if h.ObjectSelector, err = selector(objSel); err != nil {
		h.Err = fmt.Errorf("objectSelector: %w", err)
	}
	return h
}

// selector parses a webhook's selector: unset selects everything (the
// Kubernetes default for webhooks, unlike workloads' selectors).
func selector(sel *metav1.LabelSelector) (labels.Selector, error) {
	if sel == nil {
		return labels.Everything(), nil
	}
	return labels.FromProto(sel)
}

// CompileMutating returns the webhooks of the configurations in the order
// they run: configurations by name, webhooks in their configuration's order.
func CompileMutating(cfgs []*admissionregistrationv1.MutatingWebhookConfiguration) []*Hook {
	return compile(cfgs, func(c *admissionregistrationv1.MutatingWebhookConfiguration) []*Hook {
		out := make([]*Hook, 0, len(c.GetWebhooks()))
		for _, w := range c.GetWebhooks() {
			out = append(out, newHook(c.GetMetadata().GetName(), w.GetName(), w.GetClientConfig(), w.GetRules(),
				w.GetFailurePolicy(), w.TimeoutSeconds, w.GetNamespaceSelector(), w.GetObjectSelector()))
		}
		return out
	})
}

// CompileValidating is CompileMutating for validating webhooks.
func CompileValidating(cfgs []*admissionregistrationv1.ValidatingWebhookConfiguration) []*Hook {
	return compile(cfgs, func(c *admissionregistrationv1.ValidatingWebhookConfiguration) []*Hook {
		out := make([]*Hook, 0, len(c.GetWebhooks()))
		for _, w := range c.GetWebhooks() {
			out = append(out, newHook(c.GetMetadata().GetName(), w.GetName(), w.GetClientConfig(), w.GetRules(),
				w.GetFailurePolicy(), w.TimeoutSeconds, w.GetNamespaceSelector(), w.GetObjectSelector()))
		}
		return out
	})
}

// compile orders configurations by name and concatenates their hooks.
func compile[C interface{ GetMetadata() *metav1.ObjectMeta }](cfgs []C, hooks func(C) []*Hook) []*Hook {
	cfgs = slices.SortedFunc(slices.Values(cfgs), func(a, b C) int {
		return cmp.Compare(a.GetMetadata().GetName(), b.GetMetadata().GetName())
	})
	var out []*Hook
	for _, c := range cfgs {
		out = append(out, hooks(c)...)
	}
	return out
}

// Object is what selectors look at.
type Object struct {
	// Labels and OldLabels of the object (new and current); the object
	// selector matches when either matches.
	Labels, OldLabels map[string]string
	// IsNamespace: the object is a Namespace, whose own labels the
	// namespace selector reads.
	IsNamespace bool
}

// Matches says whether the hook wants r. nsLabels returns the labels of
// the request's namespace; it is called only when the namespace selector
// needs them (a namespaced object and a non-empty selector).
func (h *Hook) Matches(r *Request, obj Object, nsLabels func() (map[string]string, error)) (bool, error) {
	if !MatchRules(h.Rules, r) {
		return false, nil
	}
	if h.Err != nil {
		return true, h.Err
	}
	if !h.ObjectSelector.Empty() && !h.ObjectSelector.Matches(obj.Labels) && !h.ObjectSelector.Matches(obj.OldLabels) {
		return false, nil
	}
	if h.NamespaceSelector.Empty() {
		return true, nil
	}
	switch {
	case obj.IsNamespace:
		return h.NamespaceSelector.Matches(obj.Labels) || h.NamespaceSelector.Matches(obj.OldLabels), nil
	case !r.Namespaced:
		return true, nil // the selector does not apply to cluster-scoped objects
	}
	ls, err := nsLabels()
	if err != nil {
		return true, err
	}
	return h.NamespaceSelector.Matches(ls), nil
}

// Keys returns the connection keys the hooks use.
func Keys(hooks ...[]*Hook) map[string]bool {
	keep := map[string]bool{}
	for _, hs := range hooks {
		for _, h := range hs {
			keep[Key(h.ClientConfig)] = true
		}
	}
	return keep
}
