package agent

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"skiff.dev/internal/apierrors"
	"skiff.dev/internal/quantity"
	corev1 "skiff.dev/proto/core/v1"
)

// configMapGetter reads a ConfigMap (from the API; a map in tests).
type configMapGetter func(ctx context.Context, namespace, name string) (*corev1.ConfigMap, error)

// secretGetter reads a Secret (from the API; a map in tests).
type secretGetter func(ctx context.Context, namespace, name string) (*corev1.Secret, error)

// sources reads the objects a pod's environment and volumes project.
type sources struct {
	configMap configMapGetter
	secret    secretGetter
	// claim and volume read persistentVolumeClaim volumes' claims and
	// their bound PersistentVolumes (the volume's namespace is "").
	claim  func(ctx context.Context, namespace, name string) (*corev1.PersistentVolumeClaim, error)
	volume func(ctx context.Context, namespace, name string) (*corev1.PersistentVolume, error)
}

// cached remembers the objects read during one sync, so that a pod
// reading the same one for several containers and volumes asks once.
func (s sources) cached() sources {
	return sources{configMap: cachedGetter(s.configMap), secret: cachedGetter(s.secret),
		claim: cachedGetter(s.claim), volume: cachedGetter(s.volume)}
}

// cachedGetter remembers what get returned, by namespace and name.
func cachedGetter[T any](get func(ctx context.Context, namespace, name string) (T, error)) func(ctx context.Context, namespace, name string) (T, error) {
	if get == nil {
		return nil
	}
	type entry struct {
		obj T
		err error
	}
	seen := map[string]entry{}
	return func(ctx context.Context, namespace, name string) (T, error) {
		k := namespace + "/" + name
		if e, ok := seen[k]; ok {
			return e.obj, e.err
		}
		obj, err := get(ctx, namespace, name)
		seen[k] = entry{obj, err}
		return obj, err
	}
}

func (s sources) getConfigMap(ctx context.Context, ns, name string) (*corev1.ConfigMap, error) {
	if s.configMap == nil {
		return nil, apierrors.NewNotFound("configmaps", name)
	}
	return s.configMap(ctx, ns, name)
}

func (s sources) getSecret(ctx context.Context, ns, name string) (*corev1.Secret, error) {
	if s.secret == nil {
		return nil, apierrors.NewNotFound("secrets", name)
	}
	return s.secret(ctx, ns, name)
}

// envContext is what environment values can refer to besides ConfigMaps.
type envContext struct {
	PodIP, HostIP string
	Allocatable   map[string]string // the node's, for resource fields of containers without limits
	// ServiceEnv are the Services' variables (KUBERNETES_SERVICE_HOST...,
	// serviceenv.go): $(VAR) may refer to them, and they are added after
	// the container's own unless it sets the same name.
	ServiceEnv map[string]string
}

// envVarName is what Kubernetes accepts as an environment variable name
// (C identifiers and more: letters, digits, '_', '-', '.'; not starting
// with a digit).
var envVarName = regexp.MustCompile(`^[-._a-zA-Z][-._a-zA-Z0-9]*$`)

// containerEnv resolves c's environment as the kubelet does: envFrom
// first (every key of a ConfigMap or Secret, with the prefix; keys that
// are not valid names are skipped), then env in order (literal values with
// $(VAR) references expanded, configMapKeyRef, secretKeyRef, fieldRef,
// resourceFieldRef); a later name replaces an earlier one in place; last
// the Services' variables the container did not set. A missing Secret or
// ConfigMap, or key, that is not optional is an error (the container then
// waits in CreateContainerConfigError). Secret values are never logged nor
// put in errors.
func containerEnv(ctx context.Context, p *corev1.Pod, c *corev1.Container, ec envContext, get sources) ([]*runtimeapi.KeyValue, error) {
	ns := p.GetMetadata().GetNamespace()
	var names []string
	vals := map[string]string{}
	set := func(k, v string) {
		if _, ok := vals[k]; !ok {
			names = append(names, k)
		}
		vals[k] = v
	}
	// $(VAR) references see the Services' variables too.
	lookup := func() map[string]string {
		if len(ec.ServiceEnv) == 0 {
			return vals
		}
		m := make(map[string]string, len(vals)+len(ec.ServiceEnv))
		for k, v := range ec.ServiceEnv {
			m[k] = v
		}
		for k, v := range vals {
			m[k] = v
		}
		return m
	}
	for _, from := range c.GetEnvFrom() {
		if ref := from.GetSecretRef(); ref != nil {
			sec, err := get.getSecret(ctx, ns, ref.GetName())
			if apierrors.IsNotFound(err) && ref.GetOptional() {
				continue
			}
			if err != nil {
				return nil, secretError(ns, ref.GetName(), err)
			}
			for _, k := range sortedKeys(sec.GetData()) {
				name := from.GetPrefix() + k
				if envVarName.MatchString(name) {
					set(name, string(sec.GetData()[k]))
				}
			}
			continue
		}
		ref := from.GetConfigMapRef()
		if ref == nil {
			continue
		}
		cm, err := get.getConfigMap(ctx, ns, ref.GetName())
		if apierrors.IsNotFound(err) && ref.GetOptional() {
			continue
		}
		if err != nil {
			return nil, configMapError(ns, ref.GetName(), err)
		}
		for _, k := range sortedKeys(cm.GetData()) {
			name := from.GetPrefix() + k
			if envVarName.MatchString(name) {
				set(name, cm.GetData()[k])
			}
		}
	}
	for _, e := range c.GetEnv() {
		src := e.GetValueFrom()
		switch {
		case src == nil:
			set(e.GetName(), expand(e.GetValue(), lookup()))
		case src.GetSecretKeyRef() != nil:
			ref := src.GetSecretKeyRef()
			sec, err := get.getSecret(ctx, ns, ref.GetName())
			if apierrors.IsNotFound(err) && ref.GetOptional() {
				continue
			}
			if err != nil {
				return nil, secretError(ns, ref.GetName(), err)
			}
			v, ok := sec.GetData()[ref.GetKey()]
			if !ok {
				if ref.GetOptional() {
					continue
				}
				return nil, fmt.Errorf("couldn't find key %s in Secret %s/%s", ref.GetKey(), ns, ref.GetName())
			}
			set(e.GetName(), string(v))
		case src.GetConfigMapKeyRef() != nil:
			ref := src.GetConfigMapKeyRef()
			cm, err := get.getConfigMap(ctx, ns, ref.GetName())
			if apierrors.IsNotFound(err) && ref.GetOptional() {
				continue
			}
			if err != nil {
				return nil, configMapError(ns, ref.GetName(), err)
			}
			v, ok := cm.GetData()[ref.GetKey()]
			if !ok {
				if ref.GetOptional() {
					continue
				}
				return nil, fmt.Errorf("couldn't find key %s in ConfigMap %s/%s", ref.GetKey(), ns, ref.GetName())
			}
			set(e.GetName(), v)
		case src.GetFieldRef() != nil:
			v, err := podField(p, src.GetFieldRef().GetFieldPath(), ec)
			if err != nil {
				return nil, fmt.Errorf("env %s: %w", e.GetName(), err)
			}
			set(e.GetName(), v)
		case src.GetResourceFieldRef() != nil:
			v, err := resourceField(p, c, src.GetResourceFieldRef(), ec.Allocatable)
			if err != nil {
				return nil, fmt.Errorf("env %s: %w", e.GetName(), err)
			}
			set(e.GetName(), v)
		}
	}
	for _, k := range sortedKeys(ec.ServiceEnv) {
		if _, ok := vals[k]; !ok {
			set(k, ec.ServiceEnv[k])
		}
	}
	out := make([]*runtimeapi.KeyValue, 0, len(names))
	for _, k := range names {
		out = append(out, &runtimeapi.KeyValue{Key: k, Value: []byte(vals[k])})
	}
	return out, nil
}

// secretError is the kubelet's message for a Secret that cannot be read:
// its name, never its content.
func secretError(ns, name string, err error) error {
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("secret %q not found", name)
	}
	return fmt.Errorf("secret %s/%s: %w", ns, name, err)
}

func configMapError(ns, name string, err error) error {
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("configmap %q not found", name)
	}
	return fmt.Errorf("configmap %s/%s: %w", ns, name, err)
}

// podField is the value of a downward API field path.
func podField(p *corev1.Pod, path string, ec envContext) (string, error) {
	m := p.GetMetadata()
	if k, ok := subscript(path, "metadata.labels"); ok {
		return m.GetLabels()[k], nil
	}
	if k, ok := subscript(path, "metadata.annotations"); ok {
		return m.GetAnnotations()[k], nil
	}
	switch path {
	case "metadata.name":
		return m.GetName(), nil
	case "metadata.namespace":
		return m.GetNamespace(), nil
	case "metadata.uid":
		return m.GetUid(), nil
	case "spec.nodeName":
		return p.GetSpec().GetNodeName(), nil
	case "spec.serviceAccountName":
		return p.GetSpec().GetServiceAccountName(), nil
	case "status.podIP", "status.podIPs":
		return ec.PodIP, nil
	case "status.hostIP", "status.hostIPs":
		return ec.HostIP, nil
	}
	return "", fmt.Errorf("unsupported fieldPath %q", path)
}

// subscript parses "<prefix>['key']".
func subscript(path, prefix string) (string, bool) {
	rest, ok := strings.CutPrefix(path, prefix+"['")
	if !ok {
		return "", false
	}
	return strings.CutSuffix(rest, "']")
}

// resourceField is limits.cpu, limits.memory, requests.cpu or
// requests.memory of a container (its own, or the container named by the
// selector), in units of the divisor, rounded up; a limit not set is the
// node's allocatable.
func resourceField(p *corev1.Pod, c *corev1.Container, ref *corev1.ResourceFieldSelector, allocatable map[string]string) (string, error) {
	if n := ref.GetContainerName(); n != "" && n != c.GetName() {
		c = nil
		for _, x := range append(append([]*corev1.Container(nil), p.GetSpec().GetInitContainers()...), p.GetSpec().GetContainers()...) {
			if x.GetName() == n {
				c = x
			}
		}
		if c == nil {
			return "", fmt.Errorf("container %q not found", n)
		}
	}
	kind, name, ok := strings.Cut(ref.GetResource(), ".")
	if !ok || (kind != "limits" && kind != "requests") {
		return "", fmt.Errorf("unsupported resource %q", ref.GetResource())
	}
	var s string
	if kind == "limits" {
		s = c.GetResources().GetLimits()[name]
		if s == "" {
			s = allocatable[name]
		}
	} else {
		s = c.GetResources().GetRequests()[name]
	}
	if s == "" {
		s = "0"
	}
	q, err := quantity.Parse(s)
	if err != nil {
		return "", err
	}
	div := quantity.MustParse("1")
	if d := ref.GetDivisor(); d != "" {
		if div, err = quantity.Parse(d); err != nil {
			return "", err
		}
	}
	if div.MilliValue() == 0 {
		return "", fmt.Errorf("divisor %q: must not be zero", ref.GetDivisor())
	}
	v := (q.MilliValue() + div.MilliValue() - 1) / div.MilliValue()
	return strconv.FormatInt(v, 10), nil
}

// expand replaces $(VAR) references in s with the values of vars,
// Kubernetes' way: "$$" is a literal "$", a reference to an unknown name
// stays as written.
func expand(s string, vars map[string]string) string {
	if !strings.Contains(s, "$") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 >= len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i++
		case '(':
			end := strings.IndexByte(s[i+2:], ')')
			if end < 0 {
				b.WriteString(s[i:])
				return b.String()
			}
			name := s[i+2 : i+2+end]
			if v, ok := vars[name]; ok && name != "" {
				b.WriteString(v)
			} else {
				b.WriteString(s[i : i+3+end])
			}
			i += 2 + end
		default:
			b.WriteByte('$')
		}
	}
	return b.String()
}

func expandAll(in []string, vars map[string]string) []string {
	if in == nil {
		return nil
	}
	out := make([]string, len(in))
	for i, s := range in {
		out[i] = expand(s, vars)
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
