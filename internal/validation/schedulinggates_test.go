package validation_test

import (
	"slices"
	"testing"

	"google.golang.org/protobuf/proto"

	"skiff.dev/internal/field"
	"skiff.dev/internal/validation"
	corev1 "skiff.dev/proto/core/v1"
)

func gates(names ...string) []*corev1.PodSchedulingGate {
	var out []*corev1.PodSchedulingGate
	for _, n := range names {
		out = append(out, &corev1.PodSchedulingGate{Name: n})
	}
	return out
}

func messages(errs field.ErrorList) []string {
	var out []string
	for _, e := range errs {
		out = append(out, e.Error())
	}
	return out
}

func TestSchedulingGatesOnCreate(t *testing.T) {
	cases := []struct {
		name     string
		gates    []string
		nodeName string
		want     []string
	}{
		{name: "qualified names", gates: []string{"example.com/quota", "wait"}},
		{name: "a name that is not qualified", gates: []string{"bad gate"},
			want: []string{`spec.schedulingGates[0]: Invalid value: "bad gate": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`}},
		{name: "duplicates", gates: []string{"wait", "wait"},
			want: []string{`spec.schedulingGates[1]: Duplicate value: "wait"`}},
		{name: "no node name while gated", gates: []string{"wait"}, nodeName: "n1",
			want: []string{"spec.nodeName: Forbidden: cannot be set until all schedulingGates have been cleared"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := nginxPod()
			p.Spec.SchedulingGates = gates(tc.gates...)
			p.Spec.NodeName = tc.nodeName
			if got := messages(validation.Pod(p)); !slices.Equal(got, tc.want) {
				t.Errorf("got:\n  %q\nwant:\n  %q", got, tc.want)
			}
		})
	}
}

func TestSchedulingGatesOnUpdate(t *testing.T) {
	cases := []struct {
		name     string
		old, new []string
		want     []string
	}{
		{name: "removing one", old: []string{"a", "b"}, new: []string{"b"}},
		{name: "removing all", old: []string{"a", "b"}},
		{name: "adding one", old: []string{"a"}, new: []string{"a", "x"},
			want: []string{"spec.schedulingGates[1].name: Forbidden: only deletion is allowed, but found new scheduling gate 'x'"}},
		{name: "adding to none", new: []string{"x"},
			want: []string{"spec.schedulingGates[0].name: Forbidden: only deletion is allowed, but found new scheduling gate 'x'"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			old := nginxPod()
			old.Metadata.ResourceVersion = "1"
			old.Spec.SchedulingGates = gates(tc.old...)
			cur := proto.Clone(old).(*corev1.Pod)
			cur.Spec.SchedulingGates = gates(tc.new...)
			if got := messages(validation.PodUpdate(cur, old)); !slices.Equal(got, tc.want) {
				t.Errorf("got:\n  %q\nwant:\n  %q", got, tc.want)
			}
		})
	}
}
