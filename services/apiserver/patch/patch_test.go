package patch

import (
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	kappsv1 "k8s.io/api/apps/v1"
	kcorev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/strategicpatch"

	"skiff.dev/internal/apierrors"
	"skiff.dev/internal/kinds"
	"skiff.dev/internal/openapi"
)

var (
	deploymentGVK = schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}
	podGVK        = schema.GroupVersionKind{Version: "v1", Kind: "Pod"}
	configMapGVK  = schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
)

// newPatcher is the Patcher of every declared kind, built once: building
// the schemas takes a while and the Patcher is safe to share.
var newPatcher = sync.OnceValues(func() (*Patcher, error) {
	docs, err := newDocs()
	if err != nil {
		return nil, err
	}
	return New(docs)
})

// newDocs are the OpenAPI documents of every declared kind, built once.
var newDocs = sync.OnceValues(func() (*openapi.Documents, error) {
	return openapi.Build(kinds.All(), "v1.36.6-skiff")
})

func patcher(t *testing.T) *Patcher {
	t.Helper()
	p, err := newPatcher()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// The objects the tables patch, in Kubernetes' JSON.
const (
	deployment = `{
  "apiVersion": "apps/v1", "kind": "Deployment",
  "metadata": {"name": "web", "namespace": "default", "labels": {"app": "web", "tier": "front"}, "finalizers": ["a.example/x", "b.example/y"]},
  "spec": {
    "replicas": 2,
    "selector": {"matchLabels": {"app": "web"}},
    "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": 1}},
    "template": {
      "metadata": {"labels": {"app": "web"}},
      "spec": {
        "containers": [
          {"name": "web", "image": "nginx:1.25", "args": ["-g", "daemon off;"],
           "ports": [{"containerPort": 80, "name": "http", "protocol": "TCP"}, {"containerPort": 443, "name": "https", "protocol": "TCP"}],
           "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}]},
          {"name": "sidecar", "image": "busybox:1.36", "command": ["sleep", "infinity"]}
        ],
        "tolerations": [{"key": "a", "operator": "Exists", "effect": "NoSchedule"}, {"key": "b", "operator": "Equal", "value": "x"}],
        "nodeSelector": {"disk": "ssd", "zone": "a"},
        "volumes": [{"name": "data", "emptyDir": {}}, {"name": "conf", "configMap": {"name": "web-conf"}}]
      }
    }
  }
}`
	pod = `{
  "apiVersion": "v1", "kind": "Pod",
  "metadata": {"name": "web-1", "namespace": "default", "labels": {"app": "web"}},
  "spec": {
    "containers": [{"name": "web", "image": "nginx:1.25", "ports": [{"containerPort": 80, "protocol": "TCP"}], "resources": {"limits": {"cpu": "500m", "memory": "128Mi"}}}],
    "tolerations": [{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}],
    "volumes": [{"name": "data", "hostPath": {"path": "/var/data", "type": "Directory"}}]
  }
}`
	configMap = `{
  "apiVersion": "v1", "kind": "ConfigMap",
  "metadata": {"name": "conf", "namespace": "default"},
  "data": {"a": "1", "b": "2"}
}`
)

// kubernetesType is the k8s.io/api type of a kind, whose struct tags
// Kubernetes' own strategic merge patches read.
func kubernetesType(gvk schema.GroupVersionKind) any {
	switch gvk {
	case deploymentGVK:
		return &kappsv1.Deployment{}
	case podGVK:
		return &kcorev1.Pod{}
	case configMapGVK:
		return &kcorev1.ConfigMap{}
	}
	panic("no Kubernetes type for " + gvk.String())
}

// TestStrategicMergePatch: each patch, applied to Skiff's JSON with the
// patch strategies of Skiff's OpenAPI, gives what Kubernetes' own
// strategic merge patch gives over the k8s.io/api type, and what the case
// expects of it.
func TestStrategicMergePatch(t *testing.T) {
	p := patcher(t)
	for _, c := range []struct {
		name    string
		gvk     schema.GroupVersionKind
		current string
		patch   string
		check   func(t *testing.T, obj map[string]any)
	}{
		{
			name: "containers merge by name", gvk: deploymentGVK, current: deployment,
			patch: `{"spec":{"template":{"spec":{"containers":[{"name":"web","image":"nginx:1.27"}]}}}}`,
			check: func(t *testing.T, obj map[string]any) {
				cs := at(obj, "spec.template.spec.containers").([]any)
				if len(cs) != 2 || at(cs[0], "image") != "nginx:1.27" || at(cs[1], "image") != "busybox:1.36" || at(cs[0], "args") == nil {
					t.Errorf("containers = %v", cs)
				}
			},
		},
		{
			name: "a new container is added", gvk: deploymentGVK, current: deployment,
			patch: `{"spec":{"template":{"spec":{"containers":[{"name":"log","image":"fluentbit:3"}]}}}}`,
			check: func(t *testing.T, obj map[string]any) {
				if cs := at(obj, "spec.template.spec.containers").([]any); len(cs) != 3 {
					t.Errorf("containers = %v", cs)
				}
			},
		},
		{
			name: "ports merge by containerPort", gvk: deploymentGVK, current: deployment,
			patch: `{"spec":{"template":{"spec":{"containers":[{"name":"web","ports":[{"containerPort":443,"name":"tls"},{"containerPort":8080,"name":"alt"}]}]}}}}`,
			check: func(t *testing.T, obj map[string]any) {
				ports := at(at(obj, "spec.template.spec.containers").([]any)[0], "ports").([]any)
				if len(ports) != 3 {
					t.Errorf("ports = %v", ports)
				}
			},
		},
		{
			name: "$patch: delete removes a container", gvk: deploymentGVK, current: deployment,
			patch: `{"spec":{"template":{"spec":{"containers":[{"name":"sidecar","$patch":"delete"}]}}}}`,
			check: func(t *testing.T, obj map[string]any) {
				if cs := at(obj, "spec.template.spec.containers").([]any); len(cs) != 1 || at(cs[0], "name") != "web" {
					t.Errorf("containers = %v", cs)
				}
			},
		},
		{
			name: "env merges by name, null deletes a field", gvk: deploymentGVK, current: deployment,
			patch: `{"spec":{"template":{"spec":{"containers":[{"name":"web","env":[{"name":"B","value":"2b"},{"name":"C","value":"3"}]}]}}}}`,
			check: func(t *testing.T, obj map[string]any) {
				env := at(at(obj, "spec.template.spec.containers").([]any)[0], "env").([]any)
				if len(env) != 3 || at(env[1], "value") != "2b" {
					t.Errorf("env = %v", env)
				}
			},
		},
		{
			name: "$patch: delete of an env var", gvk: deploymentGVK, current: deployment,
			patch: `{"spec":{"template":{"spec":{"containers":[{"name":"web","env":[{"name":"A","$patch":"delete"}]}]}}}}`,
			check: func(t *testing.T, obj map[string]any) {
				env := at(at(obj, "spec.template.spec.containers").([]any)[0], "env").([]any)
				if len(env) != 1 || at(env[0], "name") != "B" {
					t.Errorf("env = %v", env)
				}
			},
		},
		{
			name: "$retainKeys drops the other keys of the strategy", gvk: deploymentGVK, current: deployment,
			patch: `{"spec":{"strategy":{"$retainKeys":["type"],"type":"Recreate"}}}`,
			check: func(t *testing.T, obj map[string]any) {
				if s := at(obj, "spec.strategy").(map[string]any); len(s) != 1 || s["type"] != "Recreate" {
					t.Errorf("strategy = %v", s)
				}
			},
		},
		{
			name: "$retainKeys on a volume changes its source", gvk: deploymentGVK, current: deployment,
			patch: `{"spec":{"template":{"spec":{"volumes":[{"name":"data","$retainKeys":["name","hostPath"],"hostPath":{"path":"/data"}}]}}}}`,
			check: func(t *testing.T, obj map[string]any) {
				v := at(obj, "spec.template.spec.volumes").([]any)[0].(map[string]any)
				if v["emptyDir"] != nil || v["hostPath"] == nil {
					t.Errorf("volume = %v", v)
				}
			},
		},
		{
			name: "tolerations are replaced whole", gvk: deploymentGVK, current: deployment,
			patch: `{"spec":{"template":{"spec":{"tolerations":[{"key":"c","operator":"Exists"}]}}}}`,
			check: func(t *testing.T, obj map[string]any) {
				if ts := at(obj, "spec.template.spec.tolerations").([]any); len(ts) != 1 || at(ts[0], "key") != "c" {
					t.Errorf("tolerations = %v", ts)
				}
			},
		},
		{
			name: "args are replaced whole", gvk: deploymentGVK, current: deployment,
			patch: `{"spec":{"template":{"spec":{"containers":[{"name":"web","args":["-v"]}]}}}}`,
			check: func(t *testing.T, obj map[string]any) {
				if args := at(at(obj, "spec.template.spec.containers").([]any)[0], "args").([]any); len(args) != 1 {
					t.Errorf("args = %v", args)
				}
			},
		},
		{
			name: "labels merge, null deletes one", gvk: deploymentGVK, current: deployment,
			patch: `{"metadata":{"labels":{"tier":"back","team":"a","app":null}}}`,
			check: func(t *testing.T, obj map[string]any) {
				if diff := cmp.Diff(map[string]any{"tier": "back", "team": "a"}, at(obj, "metadata.labels")); diff != "" {
					t.Errorf("labels (-want +got):\n%s", diff)
				}
			},
		},
		{
			name: "$patch: replace of a map", gvk: deploymentGVK, current: deployment,
			patch: `{"spec":{"template":{"spec":{"nodeSelector":{"$patch":"replace","zone":"b"}}}}}`,
			check: func(t *testing.T, obj map[string]any) {
				if diff := cmp.Diff(map[string]any{"zone": "b"}, at(obj, "spec.template.spec.nodeSelector")); diff != "" {
					t.Errorf("nodeSelector (-want +got):\n%s", diff)
				}
			},
		},
		{
			name: "$deleteFromPrimitiveList of a finalizer", gvk: deploymentGVK, current: deployment,
			patch: `{"metadata":{"$deleteFromPrimitiveList/finalizers":["a.example/x"]}}`,
			check: func(t *testing.T, obj map[string]any) {
				if diff := cmp.Diff([]any{"b.example/y"}, at(obj, "metadata.finalizers")); diff != "" {
					t.Errorf("finalizers (-want +got):\n%s", diff)
				}
			},
		},
		{
			name: "finalizers merge as a set", gvk: deploymentGVK, current: deployment,
			patch: `{"metadata":{"finalizers":["c.example/z","a.example/x"]}}`,
			check: func(t *testing.T, obj map[string]any) {
				if fs := at(obj, "metadata.finalizers").([]any); len(fs) != 3 {
					t.Errorf("finalizers = %v", fs)
				}
			},
		},
		{
			name: "$setElementOrder reorders containers", gvk: deploymentGVK, current: deployment,
			patch: `{"spec":{"template":{"spec":{"$setElementOrder/containers":[{"name":"sidecar"},{"name":"web"}],"containers":[{"name":"web","image":"nginx:1.27"}]}}}}`,
			check: func(t *testing.T, obj map[string]any) {
				if cs := at(obj, "spec.template.spec.containers").([]any); at(cs[0], "name") != "sidecar" {
					t.Errorf("containers = %v", cs)
				}
			},
		},
		{
			name: "replicas and a quantity", gvk: deploymentGVK, current: deployment,
			patch: `{"spec":{"replicas":5,"template":{"spec":{"containers":[{"name":"web","resources":{"limits":{"cpu":"1"}}}]}}}}`,
			check: func(t *testing.T, obj map[string]any) {
				if at(obj, "spec.replicas") != 5.0 {
					t.Errorf("replicas = %v", at(obj, "spec.replicas"))
				}
			},
		},
		{
			name: "a pod's container image", gvk: podGVK, current: pod,
			patch: `{"spec":{"containers":[{"name":"web","image":"nginx:1.27"}]}}`,
			check: func(t *testing.T, obj map[string]any) {
				c := at(obj, "spec.containers").([]any)[0]
				if at(c, "image") != "nginx:1.27" || at(c, "resources") == nil {
					t.Errorf("container = %v", c)
				}
			},
		},
		{
			name: "a pod's tolerations are replaced", gvk: podGVK, current: pod,
			patch: `{"spec":{"tolerations":[{"key":"gpu","operator":"Exists"}]}}`,
			check: func(t *testing.T, obj map[string]any) {
				if ts := at(obj, "spec.tolerations").([]any); len(ts) != 1 || at(ts[0], "key") != "gpu" {
					t.Errorf("tolerations = %v", ts)
				}
			},
		},
		{
			name: "a pod's volume source replaced with $retainKeys", gvk: podGVK, current: pod,
			patch: `{"spec":{"volumes":[{"$retainKeys":["name","emptyDir"],"name":"data","emptyDir":{"medium":"Memory"}}]}}`,
			check: func(t *testing.T, obj map[string]any) {
				v := at(obj, "spec.volumes").([]any)[0].(map[string]any)
				if v["hostPath"] != nil || v["emptyDir"] == nil {
					t.Errorf("volume = %v", v)
				}
			},
		},
		{
			name: "config map data merge and delete", gvk: configMapGVK, current: configMap,
			patch: `{"data":{"a":null,"c":"3"},"metadata":{"labels":{"x":"y"}}}`,
			check: func(t *testing.T, obj map[string]any) {
				if diff := cmp.Diff(map[string]any{"b": "2", "c": "3"}, obj["data"]); diff != "" {
					t.Errorf("data (-want +got):\n%s", diff)
				}
			},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := p.Patch(c.gvk, StrategicMergePatchType, []byte(c.current), []byte(c.patch))
			if err != nil {
				t.Fatal(err)
			}
			want, err := strategicpatch.StrategicMergePatch([]byte(c.current), []byte(c.patch), kubernetesType(c.gvk))
			if err != nil {
				t.Fatalf("Kubernetes' strategic merge patch: %v", err)
			}
			g, w := decode(t, got), decode(t, want)
			if diff := cmp.Diff(w, g); diff != "" {
				t.Errorf("not what Kubernetes gives (-kubernetes +skiff):\n%s", diff)
			}
			c.check(t, g)
		})
	}
}

// TestJSONPatch: RFC 6902 operations, and the errors kube-apiserver
// answers them with.
func TestJSONPatch(t *testing.T) {
	p := patcher(t)
	for _, c := range []struct {
		name, patch string
		current     string         // deployment when empty
		want        map[string]any // fields of the result, by path
		code        int32          // of the error, 0 for none
		reason      apierrors.Reason
		message     string
	}{
		{name: "a config map's data", current: configMap, patch: `[{"op":"add","path":"/data/c","value":"3"},{"op":"remove","path":"/data/a"}]`,
			want: map[string]any{"data.c": "3", "data.a": nil, "data.b": "2"}},
		{name: "a pod's image, tested first", current: pod, patch: `[{"op":"test","path":"/spec/containers/0/name","value":"web"},{"op":"replace","path":"/spec/containers/0/image","value":"nginx:1.27"}]`,
			want: map[string]any{"spec.containers.0.image": "nginx:1.27", "spec.containers.0.ports.#": 1}},
		{name: "a pod's toleration appended", current: pod, patch: `[{"op":"add","path":"/spec/tolerations/-","value":{"key":"gpu","operator":"Exists"}}]`,
			want: map[string]any{"spec.tolerations.#": 2, "spec.tolerations.1.key": "gpu"}},
		{name: "replace", patch: `[{"op":"replace","path":"/spec/replicas","value":5}]`, want: map[string]any{"spec.replicas": 5.0}},
		{name: "add a label", patch: `[{"op":"add","path":"/metadata/labels/team","value":"a"}]`, want: map[string]any{"metadata.labels.team": "a", "metadata.labels.app": "web"}},
		{name: "remove a container by index", patch: `[{"op":"remove","path":"/spec/template/spec/containers/1"}]`, want: map[string]any{"spec.template.spec.containers.#": 1}},
		{name: "a test that holds", patch: `[{"op":"test","path":"/spec/replicas","value":2},{"op":"replace","path":"/spec/replicas","value":3}]`, want: map[string]any{"spec.replicas": 3.0}},
		{name: "a failed test", patch: `[{"op":"test","path":"/spec/replicas","value":7},{"op":"replace","path":"/spec/replicas","value":3}]`,
			code: 422, reason: apierrors.ReasonInvalid, message: "the server rejected our request due to an error in our request"},
		{name: "removing what is not there", patch: `[{"op":"remove","path":"/spec/paused"}]`,
			code: 422, reason: apierrors.ReasonInvalid, message: "the server rejected our request due to an error in our request"},
		{name: "not a list of operations", patch: `{"op":"replace","path":"/spec/replicas","value":5}`,
			code: 400, reason: apierrors.ReasonBadRequest, message: "json: cannot unmarshal object into Go value of type jsonpatch.Patch"},
		{name: "not JSON", patch: `[{"op":`, code: 400, reason: apierrors.ReasonBadRequest, message: "invalid JSON patch"},
		{name: "too many operations", patch: "[" + strings.Repeat(`{"op":"test","path":"/kind","value":"Deployment"},`, 10000) + `{"op":"test","path":"/kind","value":"Deployment"}]`,
			code: 413, reason: apierrors.ReasonRequestEntityTooLarge, message: "Request entity too large: The allowed maximum operations in a JSON patch is 10000, got 10001"},
	} {
		t.Run(c.name, func(t *testing.T) {
			current, gvk := deployment, deploymentGVK
			switch c.current {
			case pod:
				current, gvk = pod, podGVK
			case configMap:
				current, gvk = configMap, configMapGVK
			}
			got, err := p.Patch(gvk, JSONPatchType, []byte(current), []byte(c.patch))
			checkResult(t, got, err, c.want, c.code, c.reason, c.message)
		})
	}
}

// TestMergePatch: RFC 7386: fields merge, null deletes, lists are
// replaced whole (containers too: no merge keys here).
func TestMergePatch(t *testing.T) {
	p := patcher(t)
	for _, c := range []struct {
		name, patch string
		current     string // deployment when empty
		want        map[string]any
		code        int32
		reason      apierrors.Reason
		message     string
	}{
		{name: "a config map's data", current: configMap, patch: `{"data":{"a":null,"c":"3"}}`,
			want: map[string]any{"data.a": nil, "data.b": "2", "data.c": "3"}},
		{name: "a pod's containers are replaced whole", current: pod, patch: `{"spec":{"containers":[{"name":"web","image":"nginx:1.27"}]}}`,
			want: map[string]any{"spec.containers.0.image": "nginx:1.27", "spec.containers.0.resources": nil, "spec.tolerations.#": 1}},
		{name: "labels merge, null deletes", patch: `{"metadata":{"labels":{"app":null,"team":"a"}}}`,
			want: map[string]any{"metadata.labels.team": "a", "metadata.labels.tier": "front", "metadata.labels.app": nil}},
		{name: "containers are replaced whole", patch: `{"spec":{"template":{"spec":{"containers":[{"name":"web","image":"nginx:1.27"}]}}}}`,
			want: map[string]any{"spec.template.spec.containers.#": 1, "spec.template.spec.containers.0.ports": nil}},
		{name: "null is no patch", patch: `null`, code: 400, reason: apierrors.ReasonBadRequest, message: "Invalid JSON Patch"},
		{name: "not JSON", patch: `{"spec":`, code: 400, reason: apierrors.ReasonBadRequest, message: "invalid JSON patch"},
	} {
		t.Run(c.name, func(t *testing.T) {
			current, gvk := deployment, deploymentGVK
			switch c.current {
			case pod:
				current, gvk = pod, podGVK
			case configMap:
				current, gvk = configMap, configMapGVK
			}
			got, err := p.Patch(gvk, MergePatchType, []byte(current), []byte(c.patch))
			checkResult(t, got, err, c.want, c.code, c.reason, c.message)
		})
	}
}

// TestStrategicMergePatchErrors: kube-apiserver's answers to strategic
// merge patches that are wrong.
func TestStrategicMergePatchErrors(t *testing.T) {
	p := patcher(t)
	for _, c := range []struct {
		name, patch string
		code        int32
		reason      apierrors.Reason
		message     string
	}{
		{"not an object", `[{"spec":{}}]`, 400, apierrors.ReasonBadRequest, "json: cannot unmarshal array into Go value of type map[string]interface {}"},
		{"not JSON", `{"spec":`, 400, apierrors.ReasonBadRequest, "invalid JSON patch"},
		{"a field $retainKeys does not retain", `{"spec":{"strategy":{"$retainKeys":["type"],"rollingUpdate":{"maxSurge":1}}}}`,
			400, apierrors.ReasonBadRequest, "invalid patch format of retainKeys"},
		{"$retainKeys that is no list", `{"spec":{"strategy":{"$retainKeys":"type","type":"Recreate"}}}`,
			400, apierrors.ReasonBadRequest, "invalid patch format of retainKeys"},
		{"a set of strings and lists", `{"metadata":{"finalizers":[["x"]]}}`,
			500, apierrors.ReasonUnknown, "list element types are not identical: [[a.example/x b.example/y] [[x]]]"},
	} {
		t.Run(c.name, func(t *testing.T) {
			current := deployment
			_, err := p.Patch(deploymentGVK, StrategicMergePatchType, []byte(current), []byte(c.patch))
			checkResult(t, nil, err, nil, c.code, c.reason, c.message)
			// The error kube-apiserver interprets is the one Kubernetes'
			// own strategic merge patch gives.
			if c.code != 400 || c.message != "invalid JSON patch" && !strings.HasPrefix(c.message, "json:") {
				_, kerr := strategicpatch.StrategicMergePatch([]byte(current), []byte(c.patch), &kappsv1.Deployment{})
				if kerr == nil || strategicMergeError(kerr).Error() != err.Error() {
					t.Errorf("Kubernetes' strategic merge patch fails with %v", kerr)
				}
			}
		})
	}
	_, err := p.Patch(deploymentGVK, "application/yaml", []byte(deployment), []byte(`{}`))
	if code := apierrors.HTTPStatusCode(err); code != 415 || !strings.Contains(err.Error(), "application/json-patch+json, application/merge-patch+json, application/strategic-merge-patch+json, application/apply-patch+yaml") {
		t.Errorf("an unknown patch type: %d %v", code, err)
	}
}

func checkResult(t *testing.T, got []byte, err error, want map[string]any, code int32, reason apierrors.Reason, message string) {
	t.Helper()
	if code != 0 {
		if err == nil {
			t.Fatalf("no error, want %d %s %q", code, reason, message)
		}
		se := apierrors.FromError(err)
		if se.Status.GetCode() != code || se.Reason() != reason || se.Status.GetMessage() != message {
			t.Fatalf("error %v (%d %s), want %d %s %q", err, se.Status.GetCode(), se.Reason(), code, reason, message)
		}
		if apierrors.HTTPStatusCode(err) != int(code) {
			t.Errorf("HTTP status %d, want %d", apierrors.HTTPStatusCode(err), code)
		}
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	obj := decode(t, got)
	for path, v := range want {
		if n, ok := strings.CutSuffix(path, ".#"); ok {
			if l, _ := at(obj, n).([]any); len(l) != v.(int) {
				t.Errorf("%s has %d elements, want %d", n, len(l), v)
			}
			continue
		}
		if got := at(obj, path); !cmp.Equal(got, v) {
			t.Errorf("%s = %v, want %v", path, got, v)
		}
	}
}

func decode(t *testing.T, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	return m
}

// at is the value at a dotted path ("spec.template.spec.containers.0"),
// nil when there is none.
func at(v any, path string) any {
	for _, k := range strings.Split(path, ".") {
		switch x := v.(type) {
		case map[string]any:
			v = x[k]
		case []any:
			i := 0
			for _, c := range k {
				if c < '0' || c > '9' {
					return nil
				}
				i = i*10 + int(c-'0')
			}
			if i >= len(x) {
				return nil
			}
			v = x[i]
		default:
			return nil
		}
	}
	return v
}
