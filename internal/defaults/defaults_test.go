package defaults_test

import (
	"fmt"
	"testing"

	"google.golang.org/protobuf/proto"
	"skiff.dev/internal/defaults"
	appsv1 "skiff.dev/proto/apps/v1"
	appsv1beta1 "skiff.dev/proto/apps/v1beta1"
	coordinationv1 "skiff.dev/proto/coordination/v1"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
)

func ptr[T any](v T) *T { return &v }

func TestPodDefaults(t *testing.T) {
	p := &corev1.Pod{
		Metadata: &metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: &corev1.PodSpec{
			HostNetwork: true,
			Volumes:     []*corev1.Volume{{Name: "cfg", ConfigMap: &corev1.ConfigMapVolumeSource{Name: "cfg"}}, nil},
			InitContainers: []*corev1.Container{{
				Name: "init", Image: "busybox:1.36",
				Resources: &corev1.ResourceRequirements{Limits: map[string]string{"cpu": "100m"}},
			}},
			Containers: []*corev1.Container{{
				Name:  "web",
				Image: "nginx",
				Ports: []*corev1.ContainerPort{{ContainerPort: 80}, {ContainerPort: 53, Protocol: "UDP", HostPort: 5353}, nil},
				Env: []*corev1.EnvVar{{Name: "POD", ValueFrom: &corev1.EnvVarSource{
					FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}}},
				Resources: &corev1.ResourceRequirements{
					Limits:   map[string]string{"cpu": "500m", "memory": "128Mi"},
					Requests: map[string]string{"cpu": "250m"},
				},
				LivenessProbe:  &corev1.Probe{HttpGet: &corev1.HTTPGetAction{}},
				ReadinessProbe: &corev1.Probe{TcpSocket: &corev1.TCPSocketAction{}, PeriodSeconds: 5},
			}, nil},
		},
	}
	defaults.Pod(p)
	s := p.Spec
	c := s.Containers[0]
	checks := []struct {
		name      string
		got, want any
	}{
		{"restartPolicy", s.RestartPolicy, "Always"},
		{"dnsPolicy", s.DnsPolicy, "ClusterFirst"},
		{"schedulerName", s.SchedulerName, "default-scheduler"},
		{"terminationGracePeriodSeconds", s.GetTerminationGracePeriodSeconds(), int64(30)},
		{"enableServiceLinks", s.GetEnableServiceLinks(), true},
		{"priority", s.GetPriority(), int32(0)},
		{"status.phase", p.Status.GetPhase(), "Pending"},
		{"configMap defaultMode", s.Volumes[0].ConfigMap.GetDefaultMode(), int32(0o644)},
		{"imagePullPolicy", c.ImagePullPolicy, "Always"},
		{"init imagePullPolicy", s.InitContainers[0].ImagePullPolicy, "IfNotPresent"},
		{"terminationMessagePath", c.TerminationMessagePath, "/dev/termination-log"},
		{"terminationMessagePolicy", c.TerminationMessagePolicy, "File"},
		{"port protocol", c.Ports[0].Protocol, "TCP"},
		{"port protocol kept", c.Ports[1].Protocol, "UDP"},
		{"hostNetwork hostPort", c.Ports[0].HostPort, int32(80)},
		{"hostPort kept", c.Ports[1].HostPort, int32(5353)},
		{"fieldRef apiVersion", c.Env[0].ValueFrom.FieldRef.ApiVersion, "v1"},
		{"memory request from limit", c.Resources.Requests["memory"], "128Mi"},
		{"cpu request kept", c.Resources.Requests["cpu"], "250m"},
		{"init cpu request from limit", s.InitContainers[0].Resources.Requests["cpu"], "100m"},
		{"liveness timeout", c.LivenessProbe.TimeoutSeconds, int32(1)},
		{"liveness period", c.LivenessProbe.PeriodSeconds, int32(10)},
		{"liveness success", c.LivenessProbe.SuccessThreshold, int32(1)},
		{"liveness failure", c.LivenessProbe.FailureThreshold, int32(3)},
		{"httpGet path", c.LivenessProbe.HttpGet.Path, "/"},
		{"httpGet scheme", c.LivenessProbe.HttpGet.Scheme, "HTTP"},
		{"readiness period kept", c.ReadinessProbe.PeriodSeconds, int32(5)},
	}
	for _, ch := range checks {
		if ch.got != ch.want {
			t.Errorf("%s = %v, want %v", ch.name, ch.got, ch.want)
		}
	}
}

func TestPodDefaultsKeepClientValues(t *testing.T) {
	p := &corev1.Pod{Spec: &corev1.PodSpec{
		RestartPolicy:                 "Never",
		DnsPolicy:                     "Default",
		SchedulerName:                 "my-scheduler",
		TerminationGracePeriodSeconds: ptr[int64](0),
		Priority:                      ptr[int32](1000),
		Containers:                    []*corev1.Container{{Name: "c", Image: "app:latest", ImagePullPolicy: "Never"}},
	}, Status: &corev1.PodStatus{Phase: "Running"}}
	defaults.Pod(p)
	s := p.Spec
	if s.RestartPolicy != "Never" || s.DnsPolicy != "Default" || s.SchedulerName != "my-scheduler" ||
		s.GetTerminationGracePeriodSeconds() != 0 || s.GetPriority() != 1000 ||
		s.Containers[0].ImagePullPolicy != "Never" || p.Status.Phase != "Running" {
		t.Fatalf("client values overwritten: %v", p)
	}
}

func TestImagePullPolicy(t *testing.T) {
	cases := []struct{ image, want string }{
		{"nginx", "Always"},
		{"nginx:latest", "Always"},
		{"nginx:1.25", "IfNotPresent"},
		{"docker.io/library/nginx:1.25-alpine", "IfNotPresent"},
		{"localhost:5000/app", "Always"},
		{"localhost:5000/app:v2", "IfNotPresent"},
		{"app@sha256:0123456789abcdef", "IfNotPresent"},
		{"app:latest@sha256:0123456789abcdef", "Always"},
		{"", "Always"},
	}
	for _, c := range cases {
		t.Run(c.image, func(t *testing.T) {
			spec := &corev1.PodSpec{Containers: []*corev1.Container{{Image: c.image}}}
			defaults.PodSpec(spec)
			if got := spec.Containers[0].ImagePullPolicy; got != c.want {
				t.Fatalf("imagePullPolicy = %q, want %q", got, c.want)
			}
		})
	}
}

func TestPodSpecDoesNotDefaultPodOnlyFields(t *testing.T) {
	// A template's requests stay as written, as in Kubernetes: only pods get
	// requests copied from limits, and a priority.
	spec := &corev1.PodSpec{Containers: []*corev1.Container{{
		Name: "c", Image: "app:v1",
		Resources: &corev1.ResourceRequirements{Limits: map[string]string{"cpu": "1"}},
	}}}
	defaults.PodSpec(spec)
	if len(spec.Containers[0].Resources.Requests) != 0 || spec.Priority != nil {
		t.Fatalf("template got pod-only defaults: %v", spec)
	}
}

func TestDeploymentDefaults(t *testing.T) {
	d := &appsv1.Deployment{
		Metadata: &metav1.ObjectMeta{Name: "web"},
		Spec: &appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: &corev1.PodTemplateSpec{
				Metadata: &metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec:     &corev1.PodSpec{Containers: []*corev1.Container{{Name: "web", Image: "nginx:1.25"}}},
			},
		},
	}
	defaults.Deployment(d)
	s := d.Spec
	ru := s.GetStrategy().GetRollingUpdate()
	checks := []struct {
		name      string
		got, want any
	}{
		{"replicas", s.GetReplicas(), int32(1)},
		{"strategy", s.GetStrategy().GetType(), "RollingUpdate"},
		{"maxUnavailable", ru.GetMaxUnavailable().GetStrVal(), "25%"},
		{"maxSurge", ru.GetMaxSurge().GetStrVal(), "25%"},
		{"revisionHistoryLimit", s.GetRevisionHistoryLimit(), int32(10)},
		{"progressDeadlineSeconds", s.GetProgressDeadlineSeconds(), int32(600)},
		{"metadata.labels", d.Metadata.Labels["app"], "web"},
		{"template restartPolicy", s.Template.Spec.RestartPolicy, "Always"},
		{"template imagePullPolicy", s.Template.Spec.Containers[0].ImagePullPolicy, "IfNotPresent"},
	}
	for _, ch := range checks {
		if ch.got != ch.want {
			t.Errorf("%s = %v, want %v", ch.name, ch.got, ch.want)
		}
	}
	// The labels are a copy: changing the template later must not relabel the deployment.
	s.Template.Metadata.Labels["app"] = "other"
	if d.Metadata.Labels["app"] != "web" {
		t.Errorf("metadata.labels aliases the template's labels")
	}
}

func TestDeploymentDefaultsStrategy(t *testing.T) {
	cases := []struct {
		name                  string
		in                    *appsv1.DeploymentStrategy
		wantType              string
		wantUnavail, wantSurg string // "" when no rollingUpdate is expected
	}{
		{"recreate gets no rollingUpdate", &appsv1.DeploymentStrategy{Type: "Recreate"}, "Recreate", "", ""},
		{"empty IntOrString is unset", &appsv1.DeploymentStrategy{RollingUpdate: &appsv1.RollingUpdateDeployment{
			MaxSurge: &metav1.IntOrString{}}}, "RollingUpdate", "25%", "25%"},
		{"set bound kept", &appsv1.DeploymentStrategy{RollingUpdate: &appsv1.RollingUpdateDeployment{
			MaxUnavailable: &metav1.IntOrString{Value: &metav1.IntOrString_StrVal{StrVal: "50%"}}}}, "RollingUpdate", "50%", "25%"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := &appsv1.Deployment{Spec: &appsv1.DeploymentSpec{Strategy: c.in}}
			defaults.Deployment(d)
			st := d.Spec.Strategy
			if st.Type != c.wantType {
				t.Fatalf("type = %q, want %q", st.Type, c.wantType)
			}
			if c.wantUnavail == "" {
				if st.RollingUpdate != nil {
					t.Fatalf("rollingUpdate = %v, want nil", st.RollingUpdate)
				}
				return
			}
			if got := st.RollingUpdate.MaxUnavailable.GetStrVal(); got != c.wantUnavail {
				t.Errorf("maxUnavailable = %q, want %q", got, c.wantUnavail)
			}
			if got := st.RollingUpdate.MaxSurge.GetStrVal(); got != c.wantSurg {
				t.Errorf("maxSurge = %q, want %q", got, c.wantSurg)
			}
		})
	}
}

func TestDeploymentV1beta1Defaults(t *testing.T) {
	d := &appsv1beta1.Deployment{Spec: &appsv1beta1.DeploymentSpec{
		Template: &corev1.PodTemplateSpec{Metadata: &metav1.ObjectMeta{Labels: map[string]string{"app": "web"}}},
	}}
	defaults.DeploymentV1beta1(d)
	s := d.Spec
	ru := s.GetStrategy().GetRollingUpdate()
	if s.GetReplicas() != 1 || s.GetRevisionHistoryLimit() != 2 || s.GetProgressDeadlineSeconds() != 600 ||
		s.GetStrategy().GetType() != "RollingUpdate" ||
		ru.GetMaxSurge().GetIntVal() != 1 || ru.GetMaxUnavailable().GetIntVal() != 1 ||
		s.GetSelector().GetMatchLabels()["app"] != "web" || d.GetMetadata().GetLabels()["app"] != "web" {
		t.Fatalf("v1beta1 defaults wrong: %v", d)
	}
	if _, ok := ru.MaxSurge.Value.(*metav1.IntOrString_IntVal); !ok {
		t.Fatalf("maxSurge is %T, want an int", ru.MaxSurge.Value)
	}
	// A selector the client set is kept.
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "x"}}
	d2 := &appsv1beta1.Deployment{Spec: &appsv1beta1.DeploymentSpec{Selector: sel,
		Template: &corev1.PodTemplateSpec{Metadata: &metav1.ObjectMeta{Labels: map[string]string{"app": "web"}}}}}
	defaults.DeploymentV1beta1(d2)
	if d2.Spec.Selector != sel || len(sel.MatchLabels) != 1 {
		t.Fatalf("selector replaced: %v", d2.Spec.Selector)
	}
}

func TestReplicaSetDefaults(t *testing.T) {
	rs := &appsv1.ReplicaSet{
		Metadata: &metav1.ObjectMeta{Labels: map[string]string{"own": "label"}},
		Spec: &appsv1.ReplicaSetSpec{Template: &corev1.PodTemplateSpec{
			Metadata: &metav1.ObjectMeta{Labels: map[string]string{"app": "web"}}}},
	}
	defaults.ReplicaSet(rs)
	if rs.Spec.GetReplicas() != 1 {
		t.Errorf("replicas = %d, want 1", rs.Spec.GetReplicas())
	}
	if len(rs.Metadata.Labels) != 1 || rs.Metadata.Labels["own"] != "label" {
		t.Errorf("labels the client set were replaced: %v", rs.Metadata.Labels)
	}
	if rs.Spec.Template.Spec.GetRestartPolicy() != "Always" {
		t.Errorf("template spec not defaulted")
	}
}

func TestOtherKinds(t *testing.T) {
	ns := &corev1.Namespace{Metadata: &metav1.ObjectMeta{Name: "team-a"}}
	defaults.Namespace(ns)
	if ns.Status.GetPhase() != "Active" || ns.Metadata.Labels[defaults.NamespaceNameLabel] != "team-a" {
		t.Errorf("namespace: %v", ns)
	}
	n := &corev1.Node{Status: &corev1.NodeStatus{Capacity: map[string]string{"cpu": "4"}}}
	defaults.Node(n)
	if n.Status.Allocatable["cpu"] != "4" {
		t.Errorf("node allocatable: %v", n.Status.Allocatable)
	}
	e := &corev1.Event{}
	defaults.Event(e)
	if e.Type != "Normal" || e.Count != 1 {
		t.Errorf("event: %v", e)
	}
	w := &corev1.Event{Type: "Warning", Count: 7}
	defaults.Event(w)
	if w.Type != "Warning" || w.Count != 7 {
		t.Errorf("event values overwritten: %v", w)
	}
}

// allKinds defaults each kind; the cases cover nil, empty and sparse objects.
func allKinds() []struct {
	name string
	msg  proto.Message
	fn   func()
} {
	type kind = struct {
		name string
		msg  proto.Message
		fn   func()
	}
	var ks []kind
	add := func(name string, m proto.Message, fn func()) { ks = append(ks, kind{name, m, fn}) }
	for _, p := range []*corev1.Pod{{}, {Spec: &corev1.PodSpec{
		Containers:     []*corev1.Container{nil, {Resources: &corev1.ResourceRequirements{}, Env: []*corev1.EnvVar{{}, {ValueFrom: &corev1.EnvVarSource{}}}}},
		InitContainers: []*corev1.Container{{Resources: &corev1.ResourceRequirements{Limits: map[string]string{"cpu": "1"}}}},
		Volumes:        []*corev1.Volume{nil, {}},
	}}} {
		add("pod", p, func() { defaults.Pod(p) })
	}
	for _, d := range []*appsv1.Deployment{{}, {Spec: &appsv1.DeploymentSpec{Template: &corev1.PodTemplateSpec{}, Strategy: &appsv1.DeploymentStrategy{}}}} {
		add("deployment", d, func() { defaults.Deployment(d) })
	}
	for _, d := range []*appsv1beta1.Deployment{{}, {Spec: &appsv1beta1.DeploymentSpec{Template: &corev1.PodTemplateSpec{Metadata: &metav1.ObjectMeta{Labels: map[string]string{"a": "b"}}}}}} {
		add("deployment v1beta1", d, func() { defaults.DeploymentV1beta1(d) })
	}
	rs := &appsv1.ReplicaSet{}
	add("replicaset", rs, func() { defaults.ReplicaSet(rs) })
	ns := &corev1.Namespace{Metadata: &metav1.ObjectMeta{Name: "x"}}
	add("namespace", ns, func() { defaults.Namespace(ns) })
	node := &corev1.Node{Status: &corev1.NodeStatus{}}
	add("node", node, func() { defaults.Node(node) })
	ev := &corev1.Event{}
	add("event", ev, func() { defaults.Event(ev) })
	cm := &corev1.ConfigMap{}
	add("configmap", cm, func() { defaults.ConfigMap(cm) })
	l := &coordinationv1.Lease{}
	add("lease", l, func() { defaults.Lease(l) })
	return ks
}

func TestIdempotent(t *testing.T) {
	for _, k := range allKinds() {
		t.Run(k.name, func(t *testing.T) {
			k.fn()
			once := proto.Clone(k.msg)
			k.fn()
			if !proto.Equal(once, k.msg) {
				t.Fatalf("second defaulting changed the object:\nonce:  %v\ntwice: %v", once, k.msg)
			}
		})
	}
}

func TestNilArguments(t *testing.T) {
	defaults.Pod(nil)
	defaults.PodSpec(nil)
	defaults.Deployment(nil)
	defaults.DeploymentV1beta1(nil)
	defaults.ReplicaSet(nil)
	defaults.Namespace(nil)
	defaults.Node(nil)
	defaults.Event(nil)
	defaults.ConfigMap(nil)
	defaults.Lease(nil)
}

// Kubernetes' defaults of the volume sources of issue 20: every volume's
// defaultMode 0644, a token projection's expirationSeconds 3600, and
// apiVersion v1 of every fieldRef (SetDefaults_ObjectFieldSelector),
// volumes' items included.
func TestPodVolumeSourceDefaults(t *testing.T) {
	field := func() *corev1.DownwardAPIVolumeFile {
		return &corev1.DownwardAPIVolumeFile{Path: "name", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}
	}
	p := &corev1.Pod{Spec: &corev1.PodSpec{
		Containers: []*corev1.Container{{Name: "c", Image: "i:1"}},
		Volumes: []*corev1.Volume{
			{Name: "s", Secret: &corev1.SecretVolumeSource{SecretName: "s"}},
			{Name: "d", DownwardApi: &corev1.DownwardAPIVolumeSource{Items: []*corev1.DownwardAPIVolumeFile{field()}}},
			{Name: "p", Projected: &corev1.ProjectedVolumeSource{Sources: []*corev1.VolumeProjection{
				{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"}},
				{DownwardApi: &corev1.DownwardAPIProjection{Items: []*corev1.DownwardAPIVolumeFile{field()}}},
				nil,
			}}},
		},
	}}
	defaults.Pod(p)
	vs := p.GetSpec().GetVolumes()
	for _, tc := range []struct {
		what      string
		got, want any
	}{
		{"secret defaultMode", vs[0].GetSecret().DefaultMode, ptrTo[int32](0o644)},
		{"downwardAPI defaultMode", vs[1].GetDownwardApi().DefaultMode, ptrTo[int32](0o644)},
		{"downwardAPI item's fieldRef apiVersion", vs[1].GetDownwardApi().GetItems()[0].GetFieldRef().GetApiVersion(), "v1"},
		{"projected defaultMode", vs[2].GetProjected().DefaultMode, ptrTo[int32](0o644)},
		{"token expirationSeconds", vs[2].GetProjected().GetSources()[0].GetServiceAccountToken().ExpirationSeconds, ptrTo[int64](3600)},
		{"projected downwardAPI item's fieldRef apiVersion", vs[2].GetProjected().GetSources()[1].GetDownwardApi().GetItems()[0].GetFieldRef().GetApiVersion(), "v1"},
	} {
		if fmt.Sprint(deref(tc.got)) != fmt.Sprint(deref(tc.want)) {
			t.Errorf("%s: %v, want %v", tc.what, deref(tc.got), deref(tc.want))
		}
	}
}

func ptrTo[T any](v T) *T { return &v }

// deref is the value a pointer points at (nil for a nil pointer), else v.
func deref(v any) any {
	switch p := v.(type) {
	case *int32:
		if p == nil {
			return nil
		}
		return *p
	case *int64:
		if p == nil {
			return nil
		}
		return *p
	}
	return v
}

// TestDeprecatedServiceAccount: spec.serviceAccount, Kubernetes' old name
// of serviceAccountName, gives it when it is empty and reads back equal to
// it, as Kubernetes' v1 conversion of PodSpec.
func TestDeprecatedServiceAccount(t *testing.T) {
	for _, tc := range []struct{ name, alias, wantName, wantAlias string }{
		{"", "builder", "builder", "builder"},
		{"runner", "", "runner", "runner"},
		{"runner", "builder", "runner", "runner"},
		{"", "", "", ""},
	} {
		s := &corev1.PodSpec{ServiceAccountName: tc.name, ServiceAccount: tc.alias}
		defaults.PodSpec(s)
		if s.ServiceAccountName != tc.wantName || s.ServiceAccount != tc.wantAlias {
			t.Errorf("name %q alias %q: got %q %q, want %q %q", tc.name, tc.alias, s.ServiceAccountName, s.ServiceAccount, tc.wantName, tc.wantAlias)
		}
	}
}
