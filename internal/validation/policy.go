package validation

import (
	"fmt"
	"strconv"
	"strings"

	"skiff.dev/internal/field"
	"skiff.dev/internal/podresources"
	"skiff.dev/internal/quantity"
	admissionregistrationv1 "skiff.dev/proto/admissionregistration/v1"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
)

// quantities validates a map of resource name -> quantity, each >= 0.
func quantities(m map[string]string, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, k := range sortedKeys(m) {
		kp := p.Key(k)
		if k == "" {
			errs = append(errs, field.Required(kp, "resource name"))
			continue
		}
		q, ferr := parseQuantity(m[k], kp)
		if ferr != nil {
			errs = append(errs, ferr)
			continue
		}
		if q.Sign() < 0 {
			errs = append(errs, field.Invalid(kp, m[k], "must be greater than or equal to 0"))
		}
	}
	return errs
}

// LimitRange validates a LimitRange: types, quantities, and for each
// resource min <= defaultRequest <= default <= max.
func LimitRange(lr *corev1.LimitRange) field.ErrorList {
	errs := ObjectMeta(lr.GetMetadata(), true, NameIsDNSSubdomain, field.NewPath("metadata"))
	lp := field.NewPath("spec", "limits")
	for i, it := range lr.GetSpec().GetLimits() {
		ip := lp.Index(i)
		errs = append(errs, supported(it.GetType(), []string{"Container", "Pod"}, ip.Child("type"))...)
		for _, m := range []struct {
			name string
			v    map[string]string
		}{{"max", it.GetMax()}, {"min", it.GetMin()}, {"default", it.GetDefault()}, {"defaultRequest", it.GetDefaultRequest()}, {"maxLimitRequestRatio", it.GetMaxLimitRequestRatio()}} {
			errs = append(errs, quantities(m.v, ip.Child(m.name))...)
		}
		if it.GetType() == "Pod" && (len(it.GetDefault()) > 0 || len(it.GetDefaultRequest()) > 0) {
			errs = append(errs, field.Forbidden(ip.Child("default"), "may not be set for type Pod"))
		}
		// Ordering between the bounds, per resource.
		less := func(a, b map[string]string, an, bn string) {
			for _, k := range sortedKeys(a) {
				bv, ok := b[k]
				if !ok {
					continue
				}
				qa, e1 := parseQuantity(a[k], ip.Child(an).Key(k))
				qb, e2 := parseQuantity(bv, ip.Child(bn).Key(k))
				if e1 == nil && e2 == nil && qa.Cmp(qb) > 0 {
					errs = append(errs, field.Invalid(ip.Child(an).Key(k), a[k], an+" value "+a[k]+" is greater than "+bn+" value "+bv))
				}
			}
		}
		less(it.GetMin(), it.GetMax(), "min", "max")
		less(it.GetDefaultRequest(), it.GetDefault(), "defaultRequest", "default")
		less(it.GetDefault(), it.GetMax(), "default", "max")
		less(it.GetMin(), it.GetDefaultRequest(), "min", "defaultRequest")
	}
	return errs
}

// LimitRangeUpdate validates an update of a LimitRange.
func LimitRangeUpdate(newLR, oldLR *corev1.LimitRange) field.ErrorList {
	return ObjectMetaUpdate(newLR.GetMetadata(), oldLR.GetMetadata(), field.NewPath("metadata"))
}

// quotaResource says whether name is a resource a quota may cap: object
// counts ("pods", "configmaps", "count/<resource>[.<group>]") and pod
// compute ("requests.cpu", "limits.memory", "cpu", "memory").
func quotaResource(name string) bool {
	switch name {
	case "pods", "configmaps", "services", "secrets", "resourcequotas", "replicationcontrollers",
		"cpu", "memory", "requests.cpu", "requests.memory", "limits.cpu", "limits.memory":
		return true
	}
	return strings.HasPrefix(name, "count/") && len(name) > len("count/")
}

// ResourceQuota validates a ResourceQuota.
func ResourceQuota(q *corev1.ResourceQuota) field.ErrorList {
	errs := ObjectMeta(q.GetMetadata(), true, NameIsDNSSubdomain, field.NewPath("metadata"))
	hp := field.NewPath("spec", "hard")
	errs = append(errs, quantities(q.GetSpec().GetHard(), hp)...)
	for _, k := range sortedKeys(q.GetSpec().GetHard()) {
		if k != "" && !quotaResource(k) {
			errs = append(errs, field.Invalid(hp.Key(k), k, `not a quota resource: use pods, configmaps, count/<resource>[.<group>], requests.cpu, requests.memory, limits.cpu, limits.memory, cpu or memory`))
		}
	}
	errs = append(errs, quotaScopes(q.GetSpec(), field.NewPath("spec"))...)
	errs = append(errs, quantities(q.GetStatus().GetHard(), field.NewPath("status", "hard"))...)
	return append(errs, quantities(q.GetStatus().GetUsed(), field.NewPath("status", "used"))...)
}

// ResourceQuotaUpdate validates an update of a ResourceQuota.
func ResourceQuotaUpdate(newQ, oldQ *corev1.ResourceQuota) field.ErrorList {
	errs := ObjectMetaUpdate(newQ.GetMetadata(), oldQ.GetMetadata(), field.NewPath("metadata"))
	return append(errs, quotaScopesUpdate(newQ.GetSpec(), oldQ.GetSpec(), field.NewPath("spec"))...)
}

var (
	webhookOperations = []string{"CREATE", "UPDATE", "DELETE", "CONNECT", "*"}
	webhookScopes     = []string{"Cluster", "Namespaced", "*"}
	failurePolicies   = []string{"Fail", "Ignore"}
)

// webhookCommon validates what mutating and validating webhooks share.
func webhookCommon(name string, cc *admissionregistrationv1.WebhookClientConfig, rules []*admissionregistrationv1.RuleWithOperations,
	failurePolicy string, timeout *int32, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if name == "" {
		errs = append(errs, field.Required(p.Child("name"), "a webhook needs a name (a DNS subdomain such as pod-labels.example.com)"))
	} else {
		errs = append(errs, invalidEach(p.Child("name"), name, NameIsDNSSubdomain(name))...)
	}
	cp := p.Child("clientConfig", "url")
	switch u := cc.GetUrl(); {
	case u == "":
		errs = append(errs, field.Required(cp, `the webhook's gRPC address, "host:port" or "insecure://host:port"`))
	case strings.Contains(strings.TrimPrefix(u, "insecure://"), "/"):
		errs = append(errs, field.Invalid(cp, u, `must be "host:port" or "insecure://host:port"`))
	case !strings.Contains(u, ":"):
		errs = append(errs, field.Invalid(cp, u, "must include a port"))
	}
	if len(rules) == 0 {
		errs = append(errs, field.Required(p.Child("rules"), "at least one rule: which operations on which resources"))
	}
	for i, r := range rules {
		rp := p.Child("rules").Index(i)
		if len(r.GetOperations()) == 0 {
			errs = append(errs, field.Required(rp.Child("operations"), ""))
		}
		for j, op := range r.GetOperations() {
			errs = append(errs, supported(op, webhookOperations, rp.Child("operations").Index(j))...)
		}
		if len(r.GetApiGroups()) == 0 {
			errs = append(errs, field.Required(rp.Child("apiGroups"), `"" is the core group, "*" all groups`))
		}
		if len(r.GetApiVersions()) == 0 {
			errs = append(errs, field.Required(rp.Child("apiVersions"), `"*" for all versions`))
		}
		if len(r.GetResources()) == 0 {
			errs = append(errs, field.Required(rp.Child("resources"), `"pods", "pods/status", "*"...`))
		}
		if s := r.GetScope(); s != "" {
			errs = append(errs, supported(s, webhookScopes, rp.Child("scope"))...)
		}
	}
	if failurePolicy != "" {
		errs = append(errs, supported(failurePolicy, failurePolicies, p.Child("failurePolicy"))...)
	}
	if timeout != nil && (*timeout < 1 || *timeout > 30) {
		errs = append(errs, field.Invalid(p.Child("timeoutSeconds"), *timeout, "must be between 1 and 30 seconds"))
	}
	return errs
}

// MutatingWebhookConfiguration validates a MutatingWebhookConfiguration.
func MutatingWebhookConfiguration(c *admissionregistrationv1.MutatingWebhookConfiguration) field.ErrorList {
	errs := ObjectMeta(c.GetMetadata(), false, NameIsDNSSubdomain, field.NewPath("metadata"))
	seen := map[string]bool{}
	for i, w := range c.GetWebhooks() {
		p := field.NewPath("webhooks").Index(i)
		errs = append(errs, webhookCommon(w.GetName(), w.GetClientConfig(), w.GetRules(), w.GetFailurePolicy(), w.TimeoutSeconds, p)...)
		if r := w.GetReinvocationPolicy(); r != "" {
			errs = append(errs, supported(r, []string{"Never", "IfNeeded"}, p.Child("reinvocationPolicy"))...)
		}
		errs = append(errs, webhookSelectors(w.GetNamespaceSelector(), w.GetObjectSelector(), p)...)
		if seen[w.GetName()] {
			errs = append(errs, field.Duplicate(p.Child("name"), w.GetName()))
		}
		seen[w.GetName()] = true
	}
	return errs
}

// MutatingWebhookConfigurationUpdate validates an update.
func MutatingWebhookConfigurationUpdate(n, o *admissionregistrationv1.MutatingWebhookConfiguration) field.ErrorList {
	return ObjectMetaUpdate(n.GetMetadata(), o.GetMetadata(), field.NewPath("metadata"))
}

// ValidatingWebhookConfiguration validates a ValidatingWebhookConfiguration.
func ValidatingWebhookConfiguration(c *admissionregistrationv1.ValidatingWebhookConfiguration) field.ErrorList {
	errs := ObjectMeta(c.GetMetadata(), false, NameIsDNSSubdomain, field.NewPath("metadata"))
	seen := map[string]bool{}
	for i, w := range c.GetWebhooks() {
		p := field.NewPath("webhooks").Index(i)
		errs = append(errs, webhookCommon(w.GetName(), w.GetClientConfig(), w.GetRules(), w.GetFailurePolicy(), w.TimeoutSeconds, p)...)
		errs = append(errs, webhookSelectors(w.GetNamespaceSelector(), w.GetObjectSelector(), p)...)
		if seen[w.GetName()] {
			errs = append(errs, field.Duplicate(p.Child("name"), w.GetName()))
		}
		seen[w.GetName()] = true
	}
	return errs
}

// ValidatingWebhookConfigurationUpdate validates an update.
func ValidatingWebhookConfigurationUpdate(n, o *admissionregistrationv1.ValidatingWebhookConfiguration) field.ErrorList {
	return ObjectMetaUpdate(n.GetMetadata(), o.GetMetadata(), field.NewPath("metadata"))
}

func webhookSelectors(ns, obj *metav1.LabelSelector, p *field.Path) field.ErrorList {
	errs := LabelSelector(ns, p.Child("namespaceSelector"))
	return append(errs, LabelSelector(obj, p.Child("objectSelector"))...)
}

func addQuantities(into map[string]quantity.Quantity, list map[string]string) {
	for k, v := range list {
		q, err := quantity.Parse(v)
		if err != nil {
			continue
		}
		if sum, err := into[k].Add(q); err == nil {
			into[k] = sum
		}
	}
}

// PodLimitRange checks a pod against the bounds of a LimitRange: min, max
// and maxLimitRequestRatio per Container (each container and init
// container) and per Pod (podresources.Requests and Limits). Errors name the field
// and the bound, as Kubernetes words them: "maximum cpu usage per Container
// is 1, but limit is 2". Defaults are the LimitRanger admission plugin's
// business and are expected to be applied already.
func PodLimitRange(p *corev1.Pod, lr *corev1.LimitRange) field.ErrorList {
	var errs field.ErrorList
	sp := field.NewPath("spec")
	for _, it := range lr.GetSpec().GetLimits() {
		switch it.GetType() {
		case "Container":
			for _, group := range []struct {
				name string
				cs   []*corev1.Container
			}{{"containers", p.GetSpec().GetContainers()}, {"initContainers", p.GetSpec().GetInitContainers()}} {
				for i, c := range group.cs {
					rp := sp.Child(group.name).Index(i).Child("resources")
					req, lim := parsedList(c.GetResources().GetRequests()), parsedList(c.GetResources().GetLimits())
					errs = append(errs, limitBounds(it, "Container", req, lim, rp.Child("requests"), rp.Child("limits"))...)
				}
			}
		case "Pod":
			req, _ := podresources.Requests(p.GetSpec())
			lim, _ := podresources.Limits(p.GetSpec())
			errs = append(errs, limitBounds(it, "Pod", req, lim, sp.Child("containers[*]", "resources", "requests"), sp.Child("containers[*]", "resources", "limits"))...)
		}
	}
	return errs
}

func parsedList(list map[string]string) map[string]quantity.Quantity {
	out := make(map[string]quantity.Quantity, len(list))
	addQuantities(out, list)
	return out
}

// limitBounds checks one LimitRange item's bounds against requests and
// limits of one container or of the whole pod (what = "Container", "Pod").
func limitBounds(it *corev1.LimitRangeItem, what string, req, lim map[string]quantity.Quantity, reqPath, limPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, k := range sortedKeys(it.GetMin()) {
		min, err := quantity.Parse(it.GetMin()[k])
		if err != nil {
			continue
		}
		r, hasReq := req[k]
		switch {
		case !hasReq:
			errs = append(errs, field.Forbidden(reqPath.Child(k), fmt.Sprintf("minimum %s usage per %s is %s, but no request is specified", k, what, min)))
		case r.Cmp(min) < 0:
			errs = append(errs, field.Forbidden(reqPath.Child(k), fmt.Sprintf("minimum %s usage per %s is %s, but request is %s", k, what, min, r)))
		}
		if l, ok := lim[k]; ok && l.Cmp(min) < 0 {
			errs = append(errs, field.Forbidden(limPath.Child(k), fmt.Sprintf("minimum %s usage per %s is %s, but limit is %s", k, what, min, l)))
		}
	}
	for _, k := range sortedKeys(it.GetMax()) {
		max, err := quantity.Parse(it.GetMax()[k])
		if err != nil {
			continue
		}
		l, hasLim := lim[k]
		switch {
		case !hasLim:
			errs = append(errs, field.Forbidden(limPath.Child(k), fmt.Sprintf("maximum %s usage per %s is %s, but no limit is specified", k, what, max)))
		case l.Cmp(max) > 0:
			errs = append(errs, field.Forbidden(limPath.Child(k), fmt.Sprintf("maximum %s usage per %s is %s, but limit is %s", k, what, max, l)))
		}
		if r, ok := req[k]; ok && r.Cmp(max) > 0 {
			errs = append(errs, field.Forbidden(reqPath.Child(k), fmt.Sprintf("maximum %s usage per %s is %s, but request is %s", k, what, max, r)))
		}
	}
	for _, k := range sortedKeys(it.GetMaxLimitRequestRatio()) {
		ratio, err := quantity.Parse(it.GetMaxLimitRequestRatio()[k])
		if err != nil {
			continue
		}
		r, hasReq := req[k]
		l, hasLim := lim[k]
		switch {
		case !hasLim:
			errs = append(errs, field.Forbidden(limPath.Child(k), fmt.Sprintf("%s max limit to request ratio per %s is %s, but no limit is specified", k, what, ratio)))
		case !hasReq || r.IsZero():
			errs = append(errs, field.Forbidden(reqPath.Child(k), fmt.Sprintf("%s max limit to request ratio per %s is %s, but no request is specified or request is 0", k, what, ratio)))
		default:
			// ratio*request < limit, in milli-units (float: ratios are small).
			got := float64(l.MilliValue()) / float64(r.MilliValue())
			if got > float64(ratio.MilliValue())/1000 {
				errs = append(errs, field.Forbidden(limPath.Child(k), fmt.Sprintf("%s max limit to request ratio per %s is %s, but provided ratio is %s", k, what, ratio, strconv.FormatFloat(got, 'f', -1, 64))))
			}
		}
	}
	return errs
}
