package admission

import (
	"context"
	"errors"
	"flag"
	"io"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/apiserver/scheme"
)

func TestFlags(t *testing.T) {
	parse := func(args ...string) (*Options, error) {
		fs := flag.NewFlagSet("test", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		o := &Options{}
		o.AddFlags(fs)
		return o, fs.Parse(args)
	}
	o, err := parse()
	if err != nil || !slices.Equal(o.Enabled(), DefaultPlugins) || o.DefaultNotReadyTolerationSeconds != 300 {
		t.Fatalf("defaults: %v %+v", err, o)
	}
	o, err = parse("--enable-admission-plugins", "ResourceQuota, NamespaceLifecycle,LimitRanger", "--disable-admission-plugins=LimitRanger")
	if err != nil || !slices.Equal(o.Enabled(), []string{"ResourceQuota", "NamespaceLifecycle"}) {
		t.Fatalf("enable/disable: %v %v", err, o.Enabled())
	}
	if o, err = parse("--enable-admission-plugins="); err != nil || len(o.Enabled()) != 0 {
		t.Fatalf("empty list: %v %v", err, o.Enabled())
	}
	_, err = parse("--enable-admission-plugins", "NamespaceLifecycle,PodSecurity,AlwaysPullImages")
	if err == nil || !strings.Contains(err.Error(), "unknown admission plugin(s) PodSecurity, AlwaysPullImages (known: DefaultStorageClass, DefaultTolerationSeconds, LimitRanger, ") {
		t.Fatalf("unknown plugins: %v", err)
	}
	if _, err := parse("--disable-admission-plugins", "Nope"); err == nil || !strings.Contains(err.Error(), "Nope") {
		t.Fatalf("unknown disabled plugin: %v", err)
	}
	if err := (&Options{EnablePlugins: []string{"Nope"}}).Validate(); err == nil || !strings.Contains(err.Error(), "--enable-admission-plugins: unknown admission plugin(s) Nope") {
		t.Fatalf("Validate: %v", err)
	}
	if err := (&Options{DefaultUnreachableTolerationSeconds: -1}).Validate(); err == nil || !strings.Contains(err.Error(), "--default-unreachable-toleration-seconds") {
		t.Fatalf("Validate: %v", err)
	}
}

func TestZeroOptionsIsNoChain(t *testing.T) {
	c, err := New(Options{}, Config{})
	if err != nil || c != nil {
		t.Fatalf("New(zero) = %v, %v; want nil, nil", c, err)
	}
	// A nil chain admits everything.
	if err := c.Admit(context.Background(), &Attributes{}); err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(context.Background(), &Attributes{}); err != nil {
		t.Fatal(err)
	}
}

var podKind = &scheme.Kind{GVK: scheme.GroupVersionKind{GroupVersion: scheme.GroupVersion{Version: "v1"}, Kind: "Pod"}, Resource: "pods", Namespaced: true}

func TestDefaultTolerationSeconds(t *testing.T) {
	p, _ := newDefaultTolerationSeconds(&Deps{Options: &Options{DefaultNotReadyTolerationSeconds: 60}})
	plugin := p.(*defaultTolerationSeconds)
	tol := func(key, effect string) *corev1.Toleration {
		return &corev1.Toleration{Key: key, Operator: "Exists", Effect: effect}
	}
	cases := []struct {
		name     string
		have     []*corev1.Toleration
		wantKeys []string // keys of the tolerations added
	}{
		{"none: both added", nil, []string{TaintNodeNotReady, TaintNodeUnreachable}},
		{"not-ready tolerated", []*corev1.Toleration{tol(TaintNodeNotReady, "NoExecute")}, []string{TaintNodeUnreachable}},
		{"unreachable tolerated with any effect", []*corev1.Toleration{tol(TaintNodeUnreachable, "")}, []string{TaintNodeNotReady}},
		{"a NoSchedule toleration does not count", []*corev1.Toleration{tol(TaintNodeUnreachable, "NoSchedule")}, []string{TaintNodeNotReady, TaintNodeUnreachable}},
		{"tolerating everything", []*corev1.Toleration{{Operator: "Exists"}}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pod := &corev1.Pod{Metadata: &metav1.ObjectMeta{Name: "p"}, Spec: &corev1.PodSpec{Tolerations: slices.Clone(tc.have)}}
			if err := plugin.Admit(context.Background(), &Attributes{Operation: Create, Kind: podKind, Object: pod}); err != nil {
				t.Fatal(err)
			}
			added := pod.Spec.Tolerations[len(tc.have):]
			var keys []string
			for _, a := range added {
				keys = append(keys, a.Key)
				want := int64(300)
				if a.Key == TaintNodeNotReady {
					want = 60
				}
				if a.GetOperator() != "Exists" || a.GetEffect() != "NoExecute" || a.GetTolerationSeconds() != want {
					t.Errorf("added %v, want Exists NoExecute for %ds", a, want)
				}
			}
			if !slices.Equal(keys, tc.wantKeys) {
				t.Errorf("added %v, want %v", keys, tc.wantKeys)
			}
		})
	}
	// Subresources and other kinds are left alone.
	pod := &corev1.Pod{Spec: &corev1.PodSpec{}}
	_ = plugin.Admit(context.Background(), &Attributes{Operation: Update, Kind: podKind, Subresource: "status", Object: pod})
	if len(pod.Spec.Tolerations) != 0 {
		t.Errorf("a status update got tolerations")
	}
}

func TestContainerDefaults(t *testing.T) {
	it := &corev1.LimitRangeItem{Type: "Container",
		Max:            map[string]string{"cpu": "2", "memory": "1Gi"},
		Default:        map[string]string{"cpu": "1"},
		DefaultRequest: map[string]string{"cpu": "250m"},
		Min:            map[string]string{"memory": "64Mi", "cpu": "100m"},
	}
	limits, requests := containerDefaults(it)
	if want := map[string]string{"cpu": "1", "memory": "1Gi"}; !maps.Equal(limits, want) {
		t.Errorf("default limits = %v, want %v (default, else max)", limits, want)
	}
	if want := map[string]string{"cpu": "250m", "memory": "1Gi"}; !maps.Equal(requests, want) {
		t.Errorf("default requests = %v, want %v (defaultRequest, else the default limit, else min)", requests, want)
	}
	c := &corev1.Container{Name: "web", Resources: &corev1.ResourceRequirements{Limits: map[string]string{"cpu": "500m"}, Requests: map[string]string{"cpu": "500m"}}}
	set := applyDefaults(c, limits, requests)
	slices.Sort(set)
	if want := []string{"memory limit for container web", "memory request for container web"}; !slices.Equal(set, want) {
		t.Errorf("set %v, want %v", set, want)
	}
	if c.Resources.Limits["cpu"] != "500m" || c.Resources.Requests["cpu"] != "500m" {
		t.Errorf("the container's own values were changed: %v", c.Resources)
	}
}

// A plugin's refusal stops the chain and is counted.
type refuse struct{ calls *[]string }

func (r refuse) Validate(context.Context, *Attributes) error {
	*r.calls = append(*r.calls, "refuse")
	return errors.New("no")
}

type record struct {
	name  string
	calls *[]string
}

func (r record) Admit(_ context.Context, a *Attributes) error {
	*r.calls = append(*r.calls, r.name+".admit")
	a.Object.(*corev1.Pod).Metadata.Labels = map[string]string{"by": r.name}
	return nil
}

func (r record) Validate(context.Context, *Attributes) error {
	*r.calls = append(*r.calls, r.name+".validate")
	return nil
}

func TestChainOrder(t *testing.T) {
	var calls []string
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg)
	c := &Chain{m: m}
	c.mutating = []entry[MutationInterface]{{"a", record{"a", &calls}, m.pluginSeries("a", stepAdmit)}, {"b", record{"b", &calls}, m.pluginSeries("b", stepAdmit)}}
	c.validating = []entry[ValidationInterface]{
		{"a", record{"a", &calls}, m.pluginSeries("a", stepValidate)},
		{"r", refuse{&calls}, m.pluginSeries("r", stepValidate)},
		{"b", record{"b", &calls}, m.pluginSeries("b", stepValidate)},
	}
	pod := &corev1.Pod{Metadata: &metav1.ObjectMeta{}}
	a := &Attributes{Operation: Create, Kind: podKind, Object: pod}
	if err := c.Admit(context.Background(), a); err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(context.Background(), a); err == nil {
		t.Fatal("the refusal was lost")
	}
	if want := []string{"a.admit", "b.admit", "a.validate", "refuse"}; !slices.Equal(calls, want) {
		t.Errorf("calls %v, want %v", calls, want)
	}
	if pod.Metadata.Labels["by"] != "b" {
		t.Errorf("the last mutation should win: %v", pod.Metadata.Labels)
	}
	mfs, _ := reg.Gather()
	found := false
	for _, mf := range mfs {
		if mf.GetName() != "apiserver_admission_step_admission_duration_seconds" {
			continue
		}
		for _, mm := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range mm.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["type"] == "validate" && labels["operation"] == "CREATE" && labels["rejected"] == "true" && mm.GetHistogram().GetSampleCount() == 1 {
				found = true
			}
		}
	}
	if !found {
		t.Error("no apiserver_admission_step_admission_duration_seconds{type=validate,operation=CREATE,rejected=true} sample")
	}
}
