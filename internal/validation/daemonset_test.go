package validation_test

import (
	"testing"

	"google.golang.org/protobuf/proto"
	"skiff.dev/internal/defaults"
	"skiff.dev/internal/validation"
	appsv1 "skiff.dev/proto/apps/v1"
	metav1 "skiff.dev/proto/meta/v1"
)

// fluentd is a DaemonSet with the nginx Deployment's pod template, defaulted.
func fluentd() *appsv1.DaemonSet {
	d := nginxDeployment()
	ds := &appsv1.DaemonSet{
		ApiVersion: "apps/v1", Kind: "DaemonSet",
		Metadata: &metav1.ObjectMeta{Name: "fluentd-elasticsearch", Namespace: "kube-system"},
		Spec:     &appsv1.DaemonSetSpec{Selector: d.Spec.Selector, Template: d.Spec.Template},
	}
	defaults.DaemonSet(ds)
	return ds
}

func TestDaemonSetValid(t *testing.T) {
	ds := fluentd()
	before := proto.Clone(ds)
	expectErrors(t, validation.DaemonSet(ds), nil)
	unchanged(t, before, ds)
}

func TestDaemonSetRules(t *testing.T) {
	ru := func(ds *appsv1.DaemonSet) *appsv1.RollingUpdateDaemonSet { return ds.Spec.UpdateStrategy.RollingUpdate }
	cases := []struct {
		name   string
		mutate func(ds *appsv1.DaemonSet)
		want   []string
	}{
		{"name not a subdomain", func(ds *appsv1.DaemonSet) { ds.Metadata.Name = "Fluentd" }, []string{"metadata.name: Invalid value"}},
		{"selector missing", func(ds *appsv1.DaemonSet) { ds.Spec.Selector = nil }, []string{"spec.selector: Required value"}},
		{"selector empty", func(ds *appsv1.DaemonSet) { ds.Spec.Selector = &metav1.LabelSelector{} }, []string{"spec.selector: Invalid value"}},
		{"selector does not match template labels", func(ds *appsv1.DaemonSet) { ds.Spec.Selector.MatchLabels = map[string]string{"app": "other"} },
			[]string{"spec.template.metadata.labels: Invalid value"}},
		{"restartPolicy OnFailure", func(ds *appsv1.DaemonSet) { ds.Spec.Template.Spec.RestartPolicy = "OnFailure" },
			[]string{"spec.template.spec.restartPolicy: Unsupported value"}},
		{"activeDeadlineSeconds", func(ds *appsv1.DaemonSet) { ds.Spec.Template.Spec.ActiveDeadlineSeconds = proto.Int64(5) },
			[]string{"spec.template.spec.activeDeadlineSeconds: Forbidden"}},
		{"minReadySeconds negative", func(ds *appsv1.DaemonSet) { ds.Spec.MinReadySeconds = -1 }, []string{"spec.minReadySeconds: Invalid value"}},
		{"revisionHistoryLimit negative", func(ds *appsv1.DaemonSet) { ds.Spec.RevisionHistoryLimit = proto.Int32(-1) },
			[]string{"spec.revisionHistoryLimit: Invalid value"}},
		{"strategy unknown", func(ds *appsv1.DaemonSet) { ds.Spec.UpdateStrategy.Type = "Recreate" }, []string{"spec.updateStrategy: Unsupported value"}},
		{"OnDelete", func(ds *appsv1.DaemonSet) { ds.Spec.UpdateStrategy = &appsv1.DaemonSetUpdateStrategy{Type: "OnDelete"} }, nil},
		{"rollingUpdate missing", func(ds *appsv1.DaemonSet) { ds.Spec.UpdateStrategy.RollingUpdate = nil },
			[]string{"spec.updateStrategy.rollingUpdate: Required value"}},
		{"both zero", func(ds *appsv1.DaemonSet) { ru(ds).MaxUnavailable = intOr(0) },
			[]string{"spec.updateStrategy.rollingUpdate.maxUnavailable: Required value"}},
		{"both zero as percentages", func(ds *appsv1.DaemonSet) { ru(ds).MaxUnavailable = strOr("0%"); ru(ds).MaxSurge = strOr("0%") },
			[]string{"spec.updateStrategy.rollingUpdate.maxUnavailable: Required value"}},
		{"surge only", func(ds *appsv1.DaemonSet) { ru(ds).MaxUnavailable = intOr(0); ru(ds).MaxSurge = strOr("20%") }, nil},
		{"both set", func(ds *appsv1.DaemonSet) { ru(ds).MaxSurge = intOr(1) },
			[]string{"spec.updateStrategy.rollingUpdate.maxSurge: Invalid value"}},
		{"maxUnavailable over 100%", func(ds *appsv1.DaemonSet) { ru(ds).MaxUnavailable = strOr("150%") },
			[]string{"spec.updateStrategy.rollingUpdate.maxUnavailable: Invalid value"}},
		{"maxUnavailable negative", func(ds *appsv1.DaemonSet) { ru(ds).MaxUnavailable = intOr(-1) },
			[]string{"spec.updateStrategy.rollingUpdate.maxUnavailable: Invalid value"}},
		{"maxSurge not a percentage", func(ds *appsv1.DaemonSet) { ru(ds).MaxUnavailable = intOr(0); ru(ds).MaxSurge = strOr("ten") },
			[]string{"spec.updateStrategy.rollingUpdate.maxSurge: Invalid value", "spec.updateStrategy.rollingUpdate.maxUnavailable: Required value"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ds := fluentd()
			c.mutate(ds)
			expectErrors(t, validation.DaemonSet(ds), c.want)
		})
	}
}

func TestDaemonSetTemplateSpecRules(t *testing.T) {
	for _, c := range podSpecCases() {
		t.Run(c.name, func(t *testing.T) {
			ds := fluentd()
			c.mutate(ds.Spec.Template.Spec)
			expectErrors(t, validation.DaemonSet(ds), prefixed("spec.template.spec.", c.want))
		})
	}
}

func TestDaemonSetUpdate(t *testing.T) {
	old := fluentd()
	old.Metadata.ResourceVersion = "5"
	old.Metadata.Uid = "u1"
	cases := []struct {
		name   string
		mutate func(ds *appsv1.DaemonSet)
		want   []string
	}{
		{"image change", func(ds *appsv1.DaemonSet) { ds.Spec.Template.Spec.Containers[0].Image = "nginx:2" }, nil},
		{"strategy change", func(ds *appsv1.DaemonSet) { ds.Spec.UpdateStrategy = &appsv1.DaemonSetUpdateStrategy{Type: "OnDelete"} }, nil},
		{"selector change", func(ds *appsv1.DaemonSet) {
			ds.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "nginx", "tier": "frontend"}}
		}, []string{"spec.selector: Invalid value"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ds := proto.Clone(old).(*appsv1.DaemonSet)
			c.mutate(ds)
			expectErrors(t, validation.DaemonSetUpdate(ds, old), c.want)
		})
	}
}
