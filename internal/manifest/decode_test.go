package manifest

import (
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/testing/protocmp"

	"github.com/google/go-cmp/cmp"

	"skiff.dev/internal/kfields"
	"skiff.dev/internal/kinds"
	appsv1 "skiff.dev/proto/apps/v1"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
)

func parse(t testing.TB, src string) map[string]any {
	t.Helper()
	docs, err := Read("test.yaml", strings.NewReader(src))
	if err != nil {
		t.Fatal(err)
	}
	if len(docs) != 1 {
		t.Fatalf("%d documents, want 1", len(docs))
	}
	return docs[0].Object
}

func TestDecodeKubernetesShapes(t *testing.T) {
	cases := []struct {
		name string
		src  string
		want proto.Message
	}{
		{
			name: "quantities as numbers and strings",
			src: `spec:
  containers:
  - name: a
    resources:
      limits: {cpu: 1, memory: 128Mi}
      requests: {cpu: 0.5, memory: "64Mi", ephemeral-storage: 1e3}`,
			want: &corev1.Pod{Spec: &corev1.PodSpec{Containers: []*corev1.Container{{Name: "a", Resources: &corev1.ResourceRequirements{
				Limits:   map[string]string{"cpu": "1", "memory": "128Mi"},
				Requests: map[string]string{"cpu": "0.5", "memory": "64Mi", "ephemeral-storage": "1000"},
			}}}}},
		},
		{
			name: "int-or-string from a number or a percentage",
			src: `spec:
  strategy:
    rollingUpdate: {maxSurge: 25%, maxUnavailable: 1}`,
			want: &appsv1.Deployment{Spec: &appsv1.DeploymentSpec{Strategy: &appsv1.DeploymentStrategy{RollingUpdate: &appsv1.RollingUpdateDeployment{
				MaxSurge:       &metav1.IntOrString{Value: &metav1.IntOrString_StrVal{StrVal: "25%"}},
				MaxUnavailable: &metav1.IntOrString{Value: &metav1.IntOrString_IntVal{IntVal: 1}},
			}}}},
		},
		{
			name: "probe ports by number and by name",
			src: `spec:
  containers:
  - name: a
    livenessProbe: {httpGet: {path: /healthz, port: 8080}}
    readinessProbe: {tcpSocket: {port: http}}`,
			want: &corev1.Pod{Spec: &corev1.PodSpec{Containers: []*corev1.Container{{Name: "a",
				LivenessProbe:  &corev1.Probe{HttpGet: &corev1.HTTPGetAction{Path: "/healthz", Port: &metav1.IntOrString{Value: &metav1.IntOrString_IntVal{IntVal: 8080}}}},
				ReadinessProbe: &corev1.Probe{TcpSocket: &corev1.TCPSocketAction{Port: &metav1.IntOrString{Value: &metav1.IntOrString_StrVal{StrVal: "http"}}}},
			}}}},
		},
		{
			name: "json names that differ from the proto names",
			src:  `status: {podIP: 10.0.0.1, hostIP: 192.168.0.1, qosClass: BestEffort, podIPs: [{ip: 10.0.0.1}]}`,
			want: &corev1.Pod{Status: &corev1.PodStatus{PodIp: "10.0.0.1", HostIp: "192.168.0.1", QosClass: "BestEffort", PodIps: []*corev1.PodIP{{Ip: "10.0.0.1"}}}},
		},
		{
			name: "an empty object is kept, null is absent",
			src: `spec:
  volumes:
  - {name: cache, emptyDir: {}}
  nodeSelector: null`,
			want: &corev1.Pod{Spec: &corev1.PodSpec{Volumes: []*corev1.Volume{{Name: "cache", EmptyDir: &corev1.EmptyDirVolumeSource{}}}}},
		},
		{
			name: "timestamps in RFC 3339, optional fields at zero",
			src:  `metadata: {creationTimestamp: "2024-05-01T12:00:00Z"}` + "\n" + `spec: {replicas: 0, paused: false}`,
			want: &appsv1.Deployment{Metadata: &metav1.ObjectMeta{CreationTimestamp: ts("2024-05-01T12:00:00Z")}, Spec: &appsv1.DeploymentSpec{Replicas: proto.Int32(0)}},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.want.ProtoReflect().New().Interface()
			if err := Decode(parse(t, tc.src), got, DecodeOptions{}); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got, protocmp.Transform()); diff != "" {
				t.Errorf("decoded (-want +got):\n%s", diff)
			}
			// And back: encoding gives a tree that decodes to the same message.
			again := tc.want.ProtoReflect().New().Interface()
			if err := Decode(Encode(got), again, DecodeOptions{}); err != nil {
				t.Fatal(err)
			}
			if !proto.Equal(got, again) {
				t.Errorf("round trip changed the object:\n%v\n%v", got, again)
			}
		})
	}
}

func TestDecodeErrorsNameTheField(t *testing.T) {
	cases := []struct {
		name, src string
		want      []string
	}{
		{"a typo, with a suggestion", `spec:
  template:
    spec:
      containers:
      - name: a
        imagePullPolicyy: Always`,
			[]string{`spec.template.spec.containers[0].imagePullPolicyy: unknown field, did you mean "imagePullPolicy"?`}},
		{"a field nothing resembles", `spec: {flavour: vanilla}`, []string{`spec.flavour: unknown field`}},
		{"wrong case", `metadata: {Name: web}`, []string{`metadata.Name: unknown field, did you mean "name"?`}},
		{"every problem at once", `spec:
  replicas: two
  paused: "yes"
  selector: {matchLabels: {app: 1}}
  strategy: {rollingUpdate: {maxSurge: true}}`,
			[]string{
				`spec.paused: expected a boolean, got string "yes"`,
				`spec.replicas: expected an integer, got string "two"`,
				`spec.selector.matchLabels[app]: expected a string, got integer 1`,
				`spec.strategy.rollingUpdate.maxSurge: expected an integer or a string, got boolean true`,
			}},
		{"an integer out of range", `spec: {replicas: 3000000000}`, []string{`spec.replicas: expected an integer, got integer 3000000000`}},
		{"a list where an object goes", `spec: {template: [a]}`, []string{`spec.template: expected an object, got a list`}},
		{"a bad timestamp", `metadata: {creationTimestamp: yesterday}`, []string{`metadata.creationTimestamp: expected an RFC 3339 time (2006-01-02T15:04:05Z), got "yesterday"`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := Decode(parse(t, tc.src), &appsv1.Deployment{}, DecodeOptions{})
			errs, ok := err.(Errors)
			if !ok {
				t.Fatalf("error %v (%T), want Errors", err, err)
			}
			var got []string
			for _, e := range errs {
				got = append(got, e.Error())
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
	t.Run("unknown fields allowed when not validating", func(t *testing.T) {
		d := &appsv1.Deployment{}
		if err := Decode(parse(t, `spec: {flavour: vanilla, replicas: 2}`), d, DecodeOptions{AllowUnknown: true}); err != nil {
			t.Fatal(err)
		}
		if d.GetSpec().GetReplicas() != 2 {
			t.Errorf("replicas %d, want 2", d.GetSpec().GetReplicas())
		}
	})
}

// A field Kubernetes has but Skiff does not is refused whether or not the
// decoder validates: dropping it would change what the object means (a
// required pod affinity gone, a scoped quota made namespace-wide). Only
// fields Kubernetes does not know either follow the validation mode.
func TestDecodeRefusesKubernetesFieldsSkiffLacks(t *testing.T) {
	const refused = ": field is not supported by Skiff (see docs/fields.md)"
	cases := []struct {
		name string
		msg  proto.Message
		src  string
		// want are the errors when validating; lenient those with
		// --validate=false (nil: none).
		want, lenient []string
	}{
		{
			name:    "a pod's os",
			msg:     &corev1.Pod{},
			src:     `spec: {os: {name: linux}, containers: [{name: a, image: nginx}]}`,
			want:    []string{"spec.os" + refused},
			lenient: []string{"spec.os" + refused},
		},
		{
			name:    "a container's resizePolicy",
			msg:     &corev1.Pod{},
			src:     `spec: {containers: [{name: a, image: nginx}, {name: b, resizePolicy: [{resourceName: cpu, restartPolicy: NotRequired}]}]}`,
			want:    []string{"spec.containers[1].resizePolicy" + refused},
			lenient: []string{"spec.containers[1].resizePolicy" + refused},
		},
		{
			name:    "seLinuxOptions of a pod's security context, not a did-you-mean",
			msg:     &corev1.Pod{},
			src:     `spec: {securityContext: {runAsUser: 1000, seLinuxOptions: {level: "s0:c123,c456"}}}`,
			want:    []string{"spec.securityContext.seLinuxOptions" + refused},
			lenient: []string{"spec.securityContext.seLinuxOptions" + refused},
		},
		{
			name:    "in a workload's pod template",
			msg:     &appsv1.Deployment{},
			src:     "spec:\n  template:\n    spec:\n      hostUsers: false\n      volumes:\n      - {name: v, nfs: {server: nfs.example, path: /}}",
			want:    []string{"spec.template.spec.hostUsers" + refused, "spec.template.spec.volumes[0].nfs" + refused},
			lenient: []string{"spec.template.spec.hostUsers" + refused, "spec.template.spec.volumes[0].nfs" + refused},
		},
		{
			name:    "in metadata",
			msg:     &corev1.ConfigMap{},
			src:     `metadata: {name: a, selfLink: /api/v1/namespaces/default/configmaps/a}`,
			want:    []string{"metadata.selfLink" + refused},
			lenient: []string{"metadata.selfLink" + refused},
		},
		{
			name: "a kind's status: the server ignores it, so only a validating decoder refuses",
			msg:  &corev1.Pod{},
			src:  `status: {phase: Running, hostIPs: [{ip: 192.168.0.1}]}`,
			want: []string{"status.hostIPs" + refused},
		},
		{
			name:    "a field nobody has beside one Skiff lacks",
			msg:     &corev1.Pod{},
			src:     `spec: {flavour: vanilla, os: {name: linux}}`,
			want:    []string{"spec.flavour: unknown field", "spec.os" + refused},
			lenient: []string{"spec.os" + refused},
		},
		{
			name: "a typo of a field Skiff lacks is suggested as what it is",
			msg:  &corev1.Pod{},
			src:  `spec: {securityContext: {seLinuxOption: {level: s0}}}`,
			want: []string{`spec.securityContext.seLinuxOption: unknown field, did you mean "seLinuxOptions"? (not supported by Skiff)`},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, o := range []DecodeOptions{{}, {AllowUnknown: true}} {
				want := tc.want
				if o.AllowUnknown {
					want = tc.lenient
				}
				got := errorStrings(t, Decode(parse(t, tc.src), proto.Clone(tc.msg), o))
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("AllowUnknown %v: errors (-want +got):\n%s", o.AllowUnknown, diff)
				}
			}
		})
	}
}

// TestDecodeRefusesEveryFieldDocsListAsRefused sets, one at a time, every
// Kubernetes field Skiff lacks in every kind (as docs/fields.md lists them
// for some), reached through fields Skiff has, and decodes it leniently:
// each is refused at its path (but in status, which is ignored).
func TestDecodeRefusesEveryFieldDocsListAsRefused(t *testing.T) {
	type step struct {
		name string
		kind string // "", "list" or "map": how the value holds the next object
	}
	type place struct {
		k    string
		md   protoreflect.MessageDescriptor
		path []step
	}
	// tree builds the document that sets the field at path to "x".
	tree := func(path []step) (map[string]any, string) {
		root := map[string]any{}
		cur, p := root, ""
		for i, s := range path {
			p = join(p, s.name)
			if i == len(path)-1 {
				cur[s.name] = "x"
				break
			}
			next := map[string]any{}
			switch s.kind {
			case "list":
				cur[s.name] = []any{next}
				p += "[0]"
			case "map":
				cur[s.name] = map[string]any{"k": next}
				p += "[k]"
			default:
				cur[s.name] = next
			}
			cur = next
		}
		return root, p
	}
	refused := 0
	for _, k := range kinds.All() {
		root, ok := kfields.Root(k.Group, k.Version, k.Kind.Kind)
		if !ok {
			continue
		}
		newObj := k.New
		seen := map[string]bool{root: true}
		queue := []place{{root, newObj().ProtoReflect().Descriptor(), nil}}
		for len(queue) > 0 {
			pl := queue[0]
			queue = queue[1:]
			for _, name := range kfields.Fields(pl.k) {
				path := append(pl.path[:len(pl.path):len(pl.path)], step{name: name})
				fd := pl.md.Fields().ByJSONName(name)
				if fd == nil {
					refused++
					doc, p := tree(path)
					var want []string
					if !strings.HasPrefix(p, "status.") {
						want = []string{p + ": " + notSupported}
					}
					got := errorStrings(t, Decode(doc, newObj(), DecodeOptions{AllowUnknown: true}))
					if diff := cmp.Diff(want, got); diff != "" {
						t.Errorf("%s %s: errors (-want +got):\n%s", k.GVK(), p, diff)
					}
					continue
				}
				kchild, _ := kfields.Field(pl.k, name)
				md := fd.Message()
				if fd.IsMap() {
					md = fd.MapValue().Message()
					path[len(path)-1].kind = "map"
				} else if fd.IsList() {
					path[len(path)-1].kind = "list"
				}
				if kchild == "" || md == nil || seen[kchild] {
					continue
				}
				seen[kchild] = true
				queue = append(queue, place{kchild, md, path})
			}
		}
	}
	if refused < 100 {
		t.Errorf("%d refused fields tried: the walk went wrong", refused)
	}
	t.Logf("%d refused fields, each refused", refused)
}

func errorStrings(t *testing.T, err error) []string {
	t.Helper()
	if err == nil {
		return nil
	}
	errs, ok := err.(Errors)
	if !ok {
		t.Fatalf("error %v (%T), want Errors", err, err)
	}
	var out []string
	for _, e := range errs {
		out = append(out, e.Error())
	}
	return out
}

func TestSuggest(t *testing.T) {
	names := []string{"image", "imagePullPolicy", "name", "ports", "env", "envFrom"}
	for in, want := range map[string]string{
		"imagePullPolicyy": "imagePullPolicy",
		"imag":             "image",
		"Ports":            "ports",
		"evn":              "env",
		"volumes":          "",
		"x":                "",
	} {
		if got := Suggest(in, names); got != want {
			t.Errorf("Suggest(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestReadStreams(t *testing.T) {
	cases := []struct {
		name, src string
		kinds     []string
	}{
		{"yaml documents, empty ones skipped", "kind: A\n---\n---\nkind: B\n...\n", []string{"A", "B"}},
		{"a kind: List", "kind: List\nitems:\n- kind: A\n- kind: B\n", []string{"A", "B"}},
		{"a JSON stream", `{"kind": "A"} {"kind": "B", "n": 1.5}`, []string{"A", "B"}},
		{"a JSON array", `[{"kind": "A"}, {"kind": "B"}]`, []string{"A", "B"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			docs, err := Read("x", strings.NewReader(tc.src))
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, d := range docs {
				got = append(got, d.Object["kind"].(string))
			}
			if diff := cmp.Diff(tc.kinds, got); diff != "" {
				t.Errorf("kinds (-want +got):\n%s", diff)
			}
		})
	}
	if _, err := Read("bad.yaml", strings.NewReader("a: [b\n")); err == nil || !strings.Contains(err.Error(), "error parsing bad.yaml") {
		t.Errorf("a syntax error: %v", err)
	}
	if _, err := Read("bad.yaml", strings.NewReader("a: 1\na: 2\n")); err == nil || !strings.Contains(err.Error(), `key "a" already set`) {
		t.Errorf("a duplicate key: %v", err)
	}
}

func TestYAMLShape(t *testing.T) {
	tree := map[string]any{
		"kind": "Pod",
		"metadata": map[string]any{
			"name":        "web",
			"annotations": map[string]any{"note": "line one\nline two\n", "n": "1", "t": "true", "empty": ""},
		},
		"spec": map[string]any{
			"containers":   []any{map[string]any{"name": "a", "args": []any{"-v", "--x=1"}, "ports": []any{map[string]any{"containerPort": int64(80)}}}},
			"volumes":      []any{map[string]any{"name": "c", "emptyDir": map[string]any{}}},
			"nodeSelector": map[string]any{},
		},
	}
	want := `kind: Pod
metadata:
  annotations:
    empty: ""
    "n": "1"
    note: |
      line one
      line two
    t: "true"
  name: web
spec:
  containers:
  - args:
    - -v
    - --x=1
    name: a
    ports:
    - containerPort: 80
  nodeSelector: {}
  volumes:
  - emptyDir: {}
    name: c
`
	if got := string(YAML(tree)); got != want {
		t.Errorf("YAML:\n%s\nwant:\n%s", got, want)
	}
	back, err := ParseYAML([]byte(want))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(tree, back); diff != "" {
		t.Errorf("YAML does not read back the same (-want +got):\n%s", diff)
	}
}

func ts(s string) *timestamppb.Timestamp {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return timestamppb.New(t)
}
