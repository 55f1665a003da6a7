package patch

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/testing/protocmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields/managedfieldstest"
	"sigs.k8s.io/yaml"

	"skiff.dev/internal/apierrors"
	"skiff.dev/internal/kinds"
	metav1 "skiff.dev/proto/meta/v1"
)

// An op is one write of a scenario: an apply of a configuration (YAML),
// or an update to an object (JSON, Kubernetes' shape), by a manager.
type op struct {
	manager string
	apply   string // an applied configuration
	update  string // the whole new object
	force   bool
	// noop: the write changes nothing, so its manager's entry keeps the
	// time it had (an update's) or has none (an apply's).
	noop bool
	// conflict is the message of the 409 the apply fails with ("" for
	// none).
	conflict string
}

// scenario runs ops on Skiff's Patcher and on Kubernetes' field manager
// (apimachinery's, over the k8s.io/api schema client-go carries),
// checking after every op that the two give the same object, the same
// managedFields (but for their times) and the same errors, and that the
// entries an op changed carry its time (the clock steps a minute per op).
// It returns Skiff's object after the last op.
func scenario(t *testing.T, gvk schema.GroupVersionKind, ops []op) map[string]any {
	t.Helper()
	p := patcher(t)
	kube := managedfieldstest.NewFakeFieldManager(kubernetesTypeConverter, gvk)
	var live []byte // Skiff's object
	kubeLive := &unstructured.Unstructured{Object: map[string]any{}}
	kubeLive.SetGroupVersionKind(gvk)
	clock := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	stamps := map[string]string{} // manager/operation -> the time of its entry
	for i, o := range ops {
		now := clock.Add(time.Duration(i) * time.Minute)
		var got []byte
		var err error
		var kubeOut *unstructured.Unstructured
		var kubeErr error
		if o.apply != "" {
			got, err = p.Apply(gvk, live, []byte(o.apply), o.manager, o.force, now)
			applied := &unstructured.Unstructured{Object: map[string]any{}}
			if err := yaml.Unmarshal([]byte(o.apply), &applied.Object); err != nil {
				t.Fatal(err)
			}
			out, e := kube.Apply(kubeLive.DeepCopy(), applied, o.manager, o.force)
			kubeErr = e
			if e == nil {
				kubeOut = out.(*unstructured.Unstructured)
			}
		} else {
			got, err = p.Update(gvk, live, []byte(o.update), o.manager, "", now)
			newObj := &unstructured.Unstructured{Object: map[string]any{}}
			if err := json.Unmarshal([]byte(o.update), &newObj.Object); err != nil {
				t.Fatal(err)
			}
			out, e := kube.Update(kubeLive.DeepCopy(), newObj, o.manager)
			kubeErr = e
			if e == nil {
				kubeOut = out.(*unstructured.Unstructured)
			}
		}
		if o.conflict != "" {
			se := apierrors.FromError(err)
			if err == nil || se.Status.GetCode() != 409 || se.Reason() != apierrors.ReasonConflict || se.Status.GetMessage() != o.conflict {
				t.Fatalf("op %d: error %v, want the conflict %q", i, err, o.conflict)
			}
			if kubeErr == nil || fromError(kubeErr).Error() != o.conflict {
				t.Fatalf("op %d: Kubernetes' field manager: %v", i, kubeErr)
			}
			// Kubernetes lists the causes in no order (its managers'
			// map's); Skiff sorts them.
			kubeCauses := fromError(kubeErr).(*apierrors.StatusError).Status.GetDetails().GetCauses()
			slices.SortFunc(kubeCauses, func(a, b *metav1.StatusCause) int {
				return strings.Compare(a.GetMessage()+a.GetField(), b.GetMessage()+b.GetField())
			})
			if diff := cmp.Diff(kubeCauses, se.Status.GetDetails().GetCauses(), cmpProto); diff != "" {
				t.Errorf("op %d: causes (-kubernetes +skiff):\n%s", i, diff)
			}
			continue
		}
		if err != nil {
			t.Fatalf("op %d: %v", i, err)
		}
		if kubeErr != nil {
			t.Fatalf("op %d: Kubernetes' field manager: %v", i, kubeErr)
		}
		obj := decode(t, got)
		kubeJSON, _ := json.Marshal(kubeOut.Object)
		kubeObj := decode(t, kubeJSON)
		ours, theirs := withoutTimes(obj), withoutTimes(kubeObj)
		if diff := cmp.Diff(theirs, ours); diff != "" {
			t.Fatalf("op %d: not what Kubernetes gives (-kubernetes +skiff):\n%s", i, diff)
		}
		// Times: the op's own entry is stamped now, the others keep theirs.
		entries, _ := at(obj, "metadata.managedFields").([]any)
		checkOrder(t, i, entries)
		seen := map[string]bool{}
		for _, e := range entries {
			key := at(e, "manager").(string) + "/" + at(e, "operation").(string)
			seen[key] = true
			tm, _ := at(e, "time").(string)
			if key == o.manager+"/"+operation(o) && !o.noop {
				if tm != now.Format(time.RFC3339) {
					t.Errorf("op %d: %s's entry is of %s, want %s", i, key, tm, now.Format(time.RFC3339))
				}
				stamps[key] = tm
			} else if tm != stamps[key] {
				t.Errorf("op %d: %s's entry is of %s, it was of %s", i, key, tm, stamps[key])
			}
		}
		for key := range stamps {
			if !seen[key] {
				delete(stamps, key)
			}
		}
		live, kubeLive = got, kubeOut
	}
	return decode(t, live)
}

func operation(o op) string {
	if o.apply != "" {
		return "Apply"
	}
	return "Update"
}

// withoutTimes is obj without the times of its managedFields entries
// (but whether each has one: an apply that changes nothing leaves its
// entry without), and the entries in the order of their managers:
// Kubernetes orders them by time, and the reference's times are the wall
// clock's.
func withoutTimes(obj map[string]any) map[string]any {
	b, _ := json.Marshal(obj)
	out := map[string]any{}
	_ = json.Unmarshal(b, &out)
	entries, _ := at(out, "metadata.managedFields").([]any)
	for _, e := range entries {
		if _, ok := e.(map[string]any)["time"]; ok {
			e.(map[string]any)["time"] = "set"
		}
	}
	slices.SortFunc(entries, func(a, b any) int {
		return strings.Compare(fmt.Sprint(at(a, "operation"), at(a, "manager"), at(a, "subresource")), fmt.Sprint(at(b, "operation"), at(b, "manager"), at(b, "subresource")))
	})
	return out
}

// checkOrder: entries are in Kubernetes' order: updates after applies,
// and by time within each.
func checkOrder(t *testing.T, i int, entries []any) {
	t.Helper()
	for j := 1; j < len(entries); j++ {
		a, b := entries[j-1], entries[j]
		ta, _ := at(a, "time").(string) // none sorts first, as the zero time
		tb, _ := at(b, "time").(string)
		if x, y := at(a, "operation").(string), at(b, "operation").(string); x > y || x == y && ta > tb {
			t.Errorf("op %d: entry %d (%v %v) before entry %d (%v %v)", i, j-1, x, at(a, "time"), j, y, at(b, "time"))
		}
	}
}

// managers are the managers of obj's entries and the fields each owns,
// as "manager/Operation" -> fieldsV1.
func managers(obj map[string]any) map[string]any {
	out := map[string]any{}
	entries, _ := at(obj, "metadata.managedFields").([]any)
	for _, e := range entries {
		out[at(e, "manager").(string)+"/"+at(e, "operation").(string)] = at(e, "fieldsV1")
	}
	return out
}

const deploymentWeb = `
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: default
  labels: {app: web}
spec:
  replicas: 3
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: web
        image: nginx:1.25
        ports: [{containerPort: 80}]
`

// TestApplyTwoManagersConflictAndForce: two managers that apply the same
// value share the field; a manager that applies another value conflicts
// with the other (409, worded as kube-apiserver words it) until it
// forces, and then owns the field alone.
func TestApplyTwoManagersConflictAndForce(t *testing.T) {
	bob := `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"default"},"spec":{"replicas":%d}}`
	obj := scenario(t, deploymentGVK, []op{
		{manager: "alice", apply: deploymentWeb},
		{manager: "bob", apply: strings.Replace(bob, "%d", "3", 1), noop: true},
		{manager: "bob", apply: strings.Replace(bob, "%d", "5", 1), conflict: `Apply failed with 1 conflict: conflict with "alice": .spec.replicas`},
		{manager: "bob", apply: strings.Replace(bob, "%d", "5", 1), force: true},
	})
	if at(obj, "spec.replicas") != 5.0 {
		t.Errorf("replicas = %v", at(obj, "spec.replicas"))
	}
	ms := managers(obj)
	if at(ms["alice/Apply"], "f:spec.f:replicas") != nil || at(ms["bob/Apply"], "f:spec.f:replicas") == nil {
		t.Errorf("managers: %v", ms)
	}
}

// TestApplyConflictWithAnUpdate: the conflict message names an update
// manager with its version, as in kubectl's famous one.
func TestApplyConflictWithAnUpdate(t *testing.T) {
	created := `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"default"},"spec":{"replicas":2,"selector":{"matchLabels":{"app":"web"}}}}`
	scenario(t, deploymentGVK, []op{
		{manager: "kubectl-client-side-apply", update: created},
		{manager: "kubectl", apply: deploymentWeb, conflict: `Apply failed with 1 conflict: conflict with "kubectl-client-side-apply" using apps/v1: .spec.replicas`},
	})
}

// TestApplyConflictsWithTwoManagers: the message of several conflicts
// lists them by manager, one field a line.
func TestApplyConflictsWithTwoManagers(t *testing.T) {
	scenario(t, configMapGVK, []op{
		{manager: "alice", apply: "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: conf}\ndata: {a: '1', b: '2'}\n"},
		{manager: "bob", apply: "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: conf}\ndata: {c: '3'}\n"},
		{manager: "carol", apply: "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: conf}\ndata: {a: 'x', b: 'y', c: 'z'}\n",
			conflict: "Apply failed with 3 conflicts: conflicts with \"alice\":\n- .data.a\n- .data.b\nconflicts with \"bob\":\n- .data.c"},
	})
}

// TestApplyRemovesWhatItsOnlyManagerNoLongerApplies: a field a manager
// applied and no longer applies goes, unless another manager owns it.
func TestApplyRemovesWhatItsOnlyManagerNoLongerApplies(t *testing.T) {
	cm := func(data string) string {
		return "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: conf}\ndata: {" + data + "}\n"
	}
	obj := scenario(t, configMapGVK, []op{
		{manager: "alice", apply: cm("a: '1', b: '2', c: '3'")},
		{manager: "bob", apply: cm("c: '3'"), noop: true},
		{manager: "alice", apply: cm("a: '1'")},
	})
	if diff := cmp.Diff(map[string]any{"a": "1", "c": "3"}, obj["data"]); diff != "" {
		t.Errorf("data (-want +got):\n%s", diff)
	}
}

// TestApplyContainersByName: containers are a map list keyed by name, so
// two managers apply one container each; ports are keyed by port and
// protocol, TCP when the configuration says none; a container its only
// manager no longer applies goes.
func TestApplyContainersByName(t *testing.T) {
	sidecar := `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: default}
spec:
  template:
    spec:
      containers:
      - name: sidecar
        image: busybox:1.36
        ports: [{containerPort: 9000, protocol: UDP}]
`
	webPorts := strings.Replace(deploymentWeb, "ports: [{containerPort: 80}]", "ports: [{containerPort: 80, protocol: TCP}, {containerPort: 443}]", 1)
	withoutWeb := strings.Replace(deploymentWeb, "      - name: web\n        image: nginx:1.25\n        ports: [{containerPort: 80}]\n", "      - name: init-free\n        image: alpine:3\n", 1)
	obj := scenario(t, deploymentGVK, []op{
		{manager: "alice", apply: deploymentWeb},
		{manager: "bob", apply: sidecar},
		{manager: "alice", apply: webPorts},
	})
	cs := at(obj, "spec.template.spec.containers").([]any)
	if len(cs) != 2 || len(at(cs[0], "ports").([]any)) != 2 {
		t.Errorf("containers = %v", cs)
	}
	obj = scenario(t, deploymentGVK, []op{
		{manager: "alice", apply: deploymentWeb},
		{manager: "bob", apply: sidecar},
		{manager: "alice", apply: withoutWeb},
	})
	var names []string
	for _, c := range at(obj, "spec.template.spec.containers").([]any) {
		names = append(names, at(c, "name").(string))
	}
	if diff := cmp.Diff([]string{"sidecar", "init-free"}, names); diff != "" {
		t.Errorf("containers (-want +got):\n%s", diff)
	}
}

// TestManagedFieldsOfUpdates: plain writes (creates, updates, patches)
// record their managers' fields with the operation Update and the
// version, and an applier and an updater share what they both set.
func TestManagedFieldsOfUpdates(t *testing.T) {
	created := `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"default","labels":{"app":"web"}},"spec":{"replicas":2,"selector":{"matchLabels":{"app":"web"}},"template":{"metadata":{"labels":{"app":"web"}},"spec":{"containers":[{"name":"web","image":"nginx:1.25"}]}}}}`
	scaled := strings.Replace(created, `"replicas":2`, `"replicas":4`, 1)
	relabelled := strings.Replace(scaled, `"labels":{"app":"web"}},"spec"`, `"labels":{"app":"web","team":"a"}},"spec"`, 1)
	obj := scenario(t, deploymentGVK, []op{
		{manager: "kubectl-create", update: created},
		{manager: "hpa", update: scaled},
		{manager: "kubectl-label", update: relabelled},
		{manager: "hpa", update: relabelled, noop: true},
	})
	ms := managers(obj)
	if at(ms["hpa/Update"], "f:spec.f:replicas") == nil || at(ms["kubectl-create/Update"], "f:spec.f:replicas") != nil ||
		at(ms["kubectl-label/Update"], "f:metadata.f:labels.f:team") == nil || at(ms["kubectl-create/Update"], "f:spec.f:template") == nil {
		t.Errorf("managers: %v", ms)
	}
	for _, e := range at(obj, "metadata.managedFields").([]any) {
		if at(e, "apiVersion") != "apps/v1" || at(e, "fieldsType") != "FieldsV1" {
			t.Errorf("entry %v", e)
		}
	}
}

// TestApplyCreates: an apply of an object that does not exist makes it,
// with one entry.
func TestApplyCreates(t *testing.T) {
	obj := scenario(t, podGVK, []op{{manager: "kubectl", apply: `
apiVersion: v1
kind: Pod
metadata: {name: web-1, labels: {app: web}}
spec:
  containers: [{name: web, image: nginx:1.25}]
  tolerations: [{key: a, operator: Exists}]
`}})
	if ms := managers(obj); len(ms) != 1 || ms["kubectl/Apply"] == nil {
		t.Errorf("managers: %v", ms)
	}
}

// TestApplyErrors: kube-apiserver's answers to applies that cannot be.
func TestApplyErrors(t *testing.T) {
	p := patcher(t)
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		name, manager, applied string
		code                   int32
		reason                 apierrors.Reason
		message                string
	}{
		{"no manager", "", deploymentWeb, 422, apierrors.ReasonInvalid, "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is required for apply patch"},
		{"not YAML", "kubectl", "spec: [", 400, apierrors.ReasonBadRequest, "error decoding patch: error converting YAML to JSON: yaml: line 1: did not find expected node content"},
		{"another version", "kubectl", strings.Replace(deploymentWeb, "apps/v1", "apps/v1beta1", 1), 400, apierrors.ReasonBadRequest, "invalid object type: apps/v1beta1, Kind=Deployment"},
		{"managedFields in the configuration", "kubectl", strings.Replace(deploymentWeb, "labels: {app: web}\n", "labels: {app: web}\n  managedFields: [{manager: x, operation: Apply}]\n", 1),
			400, apierrors.ReasonBadRequest, "metadata.managedFields must be nil"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := p.Apply(deploymentGVK, nil, []byte(c.applied), c.manager, false, now)
			checkResult(t, nil, err, nil, c.code, c.reason, c.message)
		})
	}
}

// TestUpdateKeepsManagedFieldsItCannotTrack: an object the schema does
// not describe is written with the managed fields it had, and Update says
// so, as kube-apiserver logs it.
func TestUpdateKeepsManagedFieldsItCannotTrack(t *testing.T) {
	p := patcher(t)
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	old, err := p.Update(configMapGVK, nil, []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"conf"},"data":{"a":"1"}}`), "kubectl", "", now)
	if err != nil {
		t.Fatal(err)
	}
	got, err := p.Update(configMapGVK, old, []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"conf"},"data":{"a":"1"},"unknownField":1}`), "other", "", now.Add(time.Minute))
	if !errors.Is(err, ErrNotTracked) {
		t.Fatalf("error %v, want ErrNotTracked", err)
	}
	if diff := cmp.Diff(at(decode(t, old), "metadata.managedFields"), at(decode(t, got), "metadata.managedFields")); diff != "" {
		t.Errorf("managedFields changed (-old +new):\n%s", diff)
	}
}

// TestStatusSubresource: a write through the status subresource is
// recorded with it, and owns no spec field even when the object it writes
// changes one (the registry resets them: DefaultResetFields).
func TestStatusSubresource(t *testing.T) {
	p := patcher(t)
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	created := `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web"},"spec":{"replicas":2}}`
	old, err := p.Update(deploymentGVK, nil, []byte(created), "kubectl", "", now)
	if err != nil {
		t.Fatal(err)
	}
	withStatus := `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","managedFields":` + string(mustJSON(t, at(decode(t, old), "metadata.managedFields"))) + `},"spec":{"replicas":9},"status":{"replicas":2}}`
	got, err := p.Update(deploymentGVK, old, []byte(withStatus), "kube-controller-manager", "status", now.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range at(decode(t, got), "metadata.managedFields").([]any) {
		if at(e, "manager") != "kube-controller-manager" {
			continue
		}
		if at(e, "subresource") != "status" || at(e, "fieldsV1.f:status.f:replicas") == nil || at(e, "fieldsV1.f:spec") != nil {
			t.Errorf("status entry %v", e)
		}
		return
	}
	t.Errorf("no entry of the status write: %v", at(decode(t, got), "metadata.managedFields"))
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// cmpProto compares proto messages (Skiff's Status causes) by value.
var cmpProto = protocmp.Transform()

// TestUpdateResetsManagedFields: an update whose object carries an empty
// managedFields list resets them, as in Kubernetes.
func TestUpdateResetsManagedFields(t *testing.T) {
	created := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"conf"},"data":{"a":"1"}}`
	changed := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"conf"},"data":{"a":"1","b":"2"}}`
	reset := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"conf","managedFields":[]},"data":{"a":"1","b":"2","c":"3"}}`
	obj := scenario(t, configMapGVK, []op{
		{manager: "kubectl-create", update: created},
		{manager: "editor", update: changed},
		{manager: "resetter", update: reset},
	})
	if ms := managers(obj); len(ms) != 1 || at(ms["resetter/Update"], "f:data.f:c") == nil {
		t.Errorf("managers: %v", ms)
	}
}

// TestTimesComeFromTheCaller: the entries' times are the caller's now,
// whatever the wall clock says, even within the second of another entry
// or before it (a clock set back), and the entries are ordered by them.
func TestTimesComeFromTheCaller(t *testing.T) {
	p := patcher(t)
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	created, err := p.Update(configMapGVK, nil, []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"conf"},"data":{"a":"1"}}`), "creator", "", t0)
	if err != nil {
		t.Fatal(err)
	}
	same, err := p.Update(configMapGVK, created, []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"conf"},"data":{"a":"1","b":"2"}}`), "same-second", "", t0.Add(300*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	earlier, err := p.Update(configMapGVK, same, []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"conf"},"data":{"a":"1","b":"2","c":"3"}}`), "set-back", "", t0.Add(-time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range at(decode(t, earlier), "metadata.managedFields").([]any) {
		got = append(got, at(e, "manager").(string)+"@"+at(e, "time").(string))
	}
	want := []string{"set-back@2026-03-01T11:00:00Z", "creator@2026-03-01T12:00:00Z", "same-second@2026-03-01T12:00:00Z"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("entries (-want +got):\n%s", diff)
	}
}

// TestManagedFieldsOfAnotherVersion: an entry recorded at another version
// of the kind is compared at its version through the Converter, so its
// manager keeps its fields and conflicts as in Kubernetes; without one it
// is dropped, as Kubernetes drops those of versions it no longer serves.
func TestManagedFieldsOfAnotherVersion(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	v1beta1 := schema.GroupVersionKind{Group: "apps", Version: "v1beta1", Kind: "Deployment"}
	// The Deployment's fields used here are the same at both versions:
	// converting is changing apiVersion.
	relabel := func(obj map[string]any, apiVersion string) (map[string]any, error) {
		obj["apiVersion"] = apiVersion
		return obj, nil
	}
	created := `{"apiVersion":"apps/v1beta1","kind":"Deployment","metadata":{"name":"web","namespace":"default"},"spec":{"replicas":2}}`
	old, err := patcher(t).Update(v1beta1, nil, []byte(created), "old-client", "", now)
	if err != nil {
		t.Fatal(err)
	}
	asV1 := strings.Replace(string(old), `{"apiVersion":"apps/v1beta1"`, `{"apiVersion":"apps/v1"`, 1)
	if !strings.Contains(asV1, `"manager":"old-client"`) || !strings.Contains(asV1, `"apiVersion":"apps/v1beta1"`) {
		t.Fatalf("the object at apps/v1: %s", asV1)
	}
	applied := `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"default"},"spec":{"replicas":3}}`

	docs, err := newDocs()
	if err != nil {
		t.Fatal(err)
	}
	converting, err := New(docs, WithConverter(relabel))
	if err != nil {
		t.Fatal(err)
	}
	_, err = converting.Apply(deploymentGVK, []byte(asV1), []byte(applied), "kubectl", false, now)
	if want := `Apply failed with 1 conflict: conflict with "old-client" using apps/v1beta1: .spec.replicas`; err == nil || err.Error() != want {
		t.Errorf("with a converter: %v, want %s", err, want)
	}

	got, err := patcher(t).Apply(deploymentGVK, []byte(asV1), []byte(applied), "kubectl", false, now)
	if err != nil {
		t.Fatalf("without a converter: %v", err)
	}
	if ms := managers(decode(t, got)); len(ms) != 1 || ms["kubectl/Apply"] == nil {
		t.Errorf("without a converter, managers: %v", ms)
	}
}

// TestConcurrentUse: one Patcher serves concurrent requests (run with
// -race), as one kube-apiserver field manager serves a resource.
func TestConcurrentUse(t *testing.T) {
	p := patcher(t)
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for i := range 8 {
		wg.Go(func() {
			gvk := []schema.GroupVersionKind{deploymentGVK, podGVK}[i%2]
			cfg := deploymentWeb
			if gvk == podGVK {
				cfg = "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, image: i}]}\n"
			}
			obj, err := p.Apply(gvk, nil, []byte(cfg), fmt.Sprint("m", i), false, now)
			if err == nil {
				_, err = p.Patch(gvk, StrategicMergePatchType, obj, []byte(`{"metadata":{"labels":{"x":"y"}}}`))
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
}

// TestManagerFromUserAgent: kube-apiserver's manager of a write that
// names none.
func TestManagerFromUserAgent(t *testing.T) {
	for ua, want := range map[string]string{
		"kubectl/v1.36.0 (linux/amd64) kubernetes/abcdef": "kubectl",
		"helm/v3.17.0": "helm",
		"kube-controller-manager/v1.36.0 (linux/amd64) kubernetes/abcdef/system:serviceaccount:kube-system:deployment-controller": "kube-controller-manager",
		"odd\x00agent":           "oddagent",
		"":                       "",
		strings.Repeat("é", 100): strings.Repeat("é", 64),
	} {
		if got := ManagerFromUserAgent(ua); got != want {
			t.Errorf("ManagerFromUserAgent(%q) = %q, want %q", ua, got, want)
		}
	}
}

// TestEveryKind: every declared kind can be applied, updated and
// strategically patched (its schema is found and structured-merge-diff
// takes it), at every version it is served at.
func TestEveryKind(t *testing.T) {
	p := patcher(t)
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, k := range kinds.All() {
		gvk := schema.GroupVersionKind{Group: k.Group, Version: k.Version, Kind: k.Kind.Kind}
		t.Run(k.GVK(), func(t *testing.T) {
			cfg := fmt.Sprintf(`{"apiVersion":%q,"kind":%q,"metadata":{"name":"x","labels":{"a":"b"}}}`, gvk.GroupVersion().String(), gvk.Kind)
			created, err := p.Update(gvk, nil, []byte(cfg), "creator", "", now)
			if err != nil {
				t.Fatalf("update: %v", err)
			}
			applied, err := p.Apply(gvk, created, []byte(strings.Replace(cfg, `"a":"b"`, `"c":"d"`, 1)), "applier", false, now)
			if err != nil {
				t.Fatalf("apply: %v", err)
			}
			if _, err := p.Patch(gvk, StrategicMergePatchType, applied, []byte(`{"metadata":{"labels":{"e":"f"}}}`)); err != nil {
				t.Fatalf("strategic merge patch: %v", err)
			}
			if ms := managers(decode(t, applied)); len(ms) != 2 {
				t.Errorf("managers: %v", ms)
			}
		})
	}
}

// TestApplyIntOrStringAndQuantities: fields of two JSON forms (an
// IntOrString, a quantity) apply in either form, as in Kubernetes.
func TestApplyIntOrStringAndQuantities(t *testing.T) {
	cfg := func(surge, unavailable, cpu string) string {
		return `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  strategy: {type: RollingUpdate, rollingUpdate: {maxSurge: ` + surge + `, maxUnavailable: ` + unavailable + `}}
  template:
    spec:
      containers: [{name: web, image: nginx, resources: {limits: {cpu: ` + cpu + `, memory: 128Mi}}}]
`
	}
	obj := scenario(t, deploymentGVK, []op{
		{manager: "alice", apply: cfg("25%", "1", "500m")},
		{manager: "bob", apply: cfg("2", "1", "1"), conflict: "Apply failed with 2 conflicts: conflicts with \"alice\":\n- .spec.strategy.rollingUpdate.maxSurge\n- .spec.template.spec.containers[name=\"web\"].resources.limits.cpu"},
		{manager: "bob", apply: cfg("2", "1", "1"), force: true},
	})
	if at(obj, "spec.strategy.rollingUpdate.maxSurge") != 2.0 || at(obj, "spec.template.spec.containers.0.resources.limits.cpu") != 1.0 {
		t.Errorf("object: %v", obj["spec"])
	}
}
