package validation_test

import (
	"testing"

	"google.golang.org/protobuf/proto"
	"skiff.dev/internal/defaults"
	"skiff.dev/internal/validation"
	appsv1 "skiff.dev/proto/apps/v1"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
)

func TestDeploymentValid(t *testing.T) {
	d := nginxDeployment()
	before := proto.Clone(d)
	expectErrors(t, validation.Deployment(d), nil)
	unchanged(t, before, d)
}

func TestDeploymentTemplateSpecRules(t *testing.T) {
	for _, c := range podSpecCases() {
		t.Run(c.name, func(t *testing.T) {
			d := nginxDeployment()
			c.mutate(d.Spec.Template.Spec)
			expectErrors(t, validation.Deployment(d), prefixed("spec.template.spec.", c.want))
		})
	}
}

func TestDeploymentRules(t *testing.T) {
	ru := func(d *appsv1.Deployment) *appsv1.RollingUpdateDeployment { return d.Spec.Strategy.RollingUpdate }
	cases := []struct {
		name   string
		mutate func(d *appsv1.Deployment)
		want   []string
	}{
		{"replicas negative", func(d *appsv1.Deployment) { d.Spec.Replicas = ptr[int32](-1) }, []string{"spec.replicas: Invalid value"}},
		{"replicas zero", func(d *appsv1.Deployment) { d.Spec.Replicas = ptr[int32](0) }, nil},
		{"selector missing", func(d *appsv1.Deployment) { d.Spec.Selector = nil }, []string{"spec.selector: Required value"}},
		{"selector empty", func(d *appsv1.Deployment) { d.Spec.Selector = &metav1.LabelSelector{} }, []string{"spec.selector: Invalid value"}},
		{"selector does not match template labels", func(d *appsv1.Deployment) { d.Spec.Selector.MatchLabels["app"] = "apache" },
			[]string{"spec.template.metadata.labels: Invalid value"}},
		{"selector expression matches template labels", func(d *appsv1.Deployment) {
			d.Spec.Selector.MatchExpressions = []*metav1.LabelSelectorRequirement{
				{Key: "tier", Operator: "In", Values: []string{"frontend", "edge"}},
				{Key: "canary", Operator: "DoesNotExist"},
			}
		}, nil},
		{"selector expression excludes template labels", func(d *appsv1.Deployment) {
			d.Spec.Selector.MatchExpressions = []*metav1.LabelSelectorRequirement{{Key: "tier", Operator: "NotIn", Values: []string{"frontend"}}}
		}, []string{"spec.template.metadata.labels: Invalid value"}},
		{"selector operator unknown", func(d *appsv1.Deployment) {
			d.Spec.Selector.MatchExpressions = []*metav1.LabelSelectorRequirement{{Key: "tier", Operator: "Equals", Values: []string{"frontend"}}}
		}, []string{"spec.selector.matchExpressions[0].operator: Invalid value"}},
		{"selector In without values", func(d *appsv1.Deployment) {
			d.Spec.Selector.MatchExpressions = []*metav1.LabelSelectorRequirement{{Key: "tier", Operator: "In"}}
		}, []string{"spec.selector.matchExpressions[0].values: Required value"}},
		{"selector Exists with values", func(d *appsv1.Deployment) {
			d.Spec.Selector.MatchExpressions = []*metav1.LabelSelectorRequirement{{Key: "tier", Operator: "Exists", Values: []string{"x"}}}
		}, []string{"spec.selector.matchExpressions[0].values: Forbidden"}},
		{"selector label value invalid", func(d *appsv1.Deployment) { d.Spec.Selector.MatchLabels["app"] = "nginx!" },
			[]string{"spec.selector.matchLabels[app]: Invalid value"}},
		{"template missing", func(d *appsv1.Deployment) { d.Spec.Template = nil }, []string{"spec.template: Required value"}},
		{"template label invalid", func(d *appsv1.Deployment) { d.Spec.Template.Metadata.Labels["-team"] = "web" },
			[]string{"spec.template.metadata.labels[-team]: Invalid value"}},
		{"template annotation key invalid", func(d *appsv1.Deployment) {
			d.Spec.Template.Metadata.Annotations = map[string]string{"not a key": "x"}
		}, []string{"spec.template.metadata.annotations[not a key]: Invalid value"}},
		{"template restartPolicy must be Always", func(d *appsv1.Deployment) { d.Spec.Template.Spec.RestartPolicy = "OnFailure" },
			[]string{"spec.template.spec.restartPolicy: Unsupported value"}},
		{"template activeDeadlineSeconds", func(d *appsv1.Deployment) { d.Spec.Template.Spec.ActiveDeadlineSeconds = ptr[int64](30) },
			[]string{"spec.template.spec.activeDeadlineSeconds: Forbidden"}},
		{"strategy type unsupported", func(d *appsv1.Deployment) { d.Spec.Strategy.Type = "BlueGreen" }, []string{"spec.strategy.type: Unsupported value"}},
		{"strategy type missing", func(d *appsv1.Deployment) { d.Spec.Strategy.Type = "" }, []string{"spec.strategy.type: Required value"}},
		{"Recreate with rollingUpdate", func(d *appsv1.Deployment) { d.Spec.Strategy.Type = "Recreate" }, []string{"spec.strategy.rollingUpdate: Forbidden"}},
		{"Recreate", func(d *appsv1.Deployment) { d.Spec.Strategy = &appsv1.DeploymentStrategy{Type: "Recreate"} }, nil},
		{"RollingUpdate without parameters", func(d *appsv1.Deployment) { d.Spec.Strategy.RollingUpdate = nil },
			[]string{"spec.strategy.rollingUpdate: Required value"}},
		{"maxSurge not a percentage", func(d *appsv1.Deployment) { ru(d).MaxSurge = strOr("25") },
			[]string{"spec.strategy.rollingUpdate.maxSurge: Invalid value"}},
		{"maxUnavailable negative", func(d *appsv1.Deployment) { ru(d).MaxUnavailable = intOr(-1) },
			[]string{"spec.strategy.rollingUpdate.maxUnavailable: Invalid value"}},
		{"both zero", func(d *appsv1.Deployment) { ru(d).MaxUnavailable, ru(d).MaxSurge = intOr(0), intOr(0) },
			[]string{"spec.strategy.rollingUpdate.maxUnavailable: Invalid value"}},
		{"both zero percent", func(d *appsv1.Deployment) { ru(d).MaxUnavailable, ru(d).MaxSurge = strOr("0%"), strOr("0%") },
			[]string{"spec.strategy.rollingUpdate.maxUnavailable: Invalid value"}},
		{"maxUnavailable zero with a surge", func(d *appsv1.Deployment) { ru(d).MaxUnavailable = intOr(0) }, nil},
		{"maxUnavailable above 100%", func(d *appsv1.Deployment) { ru(d).MaxUnavailable = strOr("150%") },
			[]string{"spec.strategy.rollingUpdate.maxUnavailable: Invalid value"}},
		{"maxSurge above 100%", func(d *appsv1.Deployment) { ru(d).MaxSurge = strOr("200%") }, nil},
		{"revisionHistoryLimit negative", func(d *appsv1.Deployment) { d.Spec.RevisionHistoryLimit = ptr[int32](-1) },
			[]string{"spec.revisionHistoryLimit: Invalid value"}},
		{"minReadySeconds negative", func(d *appsv1.Deployment) { d.Spec.MinReadySeconds = -1 }, []string{"spec.minReadySeconds: Invalid value"}},
		{"progressDeadlineSeconds not above minReadySeconds", func(d *appsv1.Deployment) { d.Spec.ProgressDeadlineSeconds = ptr[int32](5) },
			[]string{"spec.progressDeadlineSeconds: Invalid value"}},
		{"progressDeadlineSeconds negative", func(d *appsv1.Deployment) { d.Spec.ProgressDeadlineSeconds = ptr[int32](-1) },
			[]string{"spec.progressDeadlineSeconds: Invalid value", "spec.progressDeadlineSeconds: Invalid value"}},
		{"name not a DNS subdomain", func(d *appsv1.Deployment) { d.Metadata.Name = "nginx deployment" }, []string{"metadata.name: Invalid value"}},
		{"namespace missing", func(d *appsv1.Deployment) { d.Metadata.Namespace = "" }, []string{"metadata.namespace: Required value"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := nginxDeployment()
			c.mutate(d)
			expectErrors(t, validation.Deployment(d), c.want)
		})
	}
}

func TestDeploymentSelectorMismatchMessage(t *testing.T) {
	d := nginxDeployment()
	d.Spec.Selector.MatchLabels["app"] = "apache"
	expectDetail(t, validation.Deployment(d), "spec.template.metadata.labels", "`selector` does not match template `labels`")
}

func TestDeploymentUndefaulted(t *testing.T) {
	// Without defaulting, the fields defaults fill are reported as missing.
	d := &appsv1.Deployment{
		Metadata: &metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: &appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: &corev1.PodTemplateSpec{
				Metadata: &metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec:     &corev1.PodSpec{Containers: []*corev1.Container{{Name: "web", Image: "nginx"}}},
			},
		},
	}
	expectErrors(t, validation.Deployment(d), []string{
		"spec.strategy.type: Required value",
		"spec.template.spec.restartPolicy: Required value",
		"spec.template.spec.dnsPolicy: Required value",
		"spec.template.spec.containers[0].imagePullPolicy: Required value",
		"spec.template.spec.containers[0].terminationMessagePolicy: Required value",
	})
	defaults.Deployment(d)
	expectErrors(t, validation.Deployment(d), nil)
}

func TestDeploymentUpdate(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(d *appsv1.Deployment)
		want   []string
	}{
		{"scale", func(d *appsv1.Deployment) { d.Spec.Replicas = ptr[int32](10) }, nil},
		{"new image", func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Image = "nginx:1.16.1" }, nil},
		{"selector changed", func(d *appsv1.Deployment) {
			d.Spec.Selector.MatchLabels["tier"] = "frontend"
		}, []string{"spec.selector: Invalid value"}},
		{"selector removed", func(d *appsv1.Deployment) { d.Spec.Selector = nil }, []string{"spec.selector: Invalid value", "spec.selector: Required value"}},
		{"namespace changed", func(d *appsv1.Deployment) { d.Metadata.Namespace = "prod" }, []string{"metadata.namespace: Invalid value"}},
		{"new object invalid", func(d *appsv1.Deployment) { d.Spec.Replicas = ptr[int32](-1) }, []string{"spec.replicas: Invalid value"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			oldD := nginxDeployment()
			newD := proto.Clone(oldD).(*appsv1.Deployment)
			c.mutate(newD)
			expectErrors(t, validation.DeploymentUpdate(newD, oldD), c.want)
		})
	}
}

func nginxReplicaSet() *appsv1.ReplicaSet {
	d := nginxDeployment()
	d.Spec.Template.Metadata.Labels["pod-template-hash"] = "7c5ddbdf54"
	rs := &appsv1.ReplicaSet{
		ApiVersion: "apps/v1",
		Kind:       "ReplicaSet",
		Metadata: &metav1.ObjectMeta{
			Name:      "nginx-deployment-7c5ddbdf54",
			Namespace: "default",
			OwnerReferences: []*metav1.OwnerReference{{
				ApiVersion: "apps/v1", Kind: "Deployment", Name: "nginx-deployment", Uid: "7d3c9a52-0d0e-4b0e-8f57-1f5d3c1a2b3c", Controller: ptr(true),
			}},
		},
		Spec: &appsv1.ReplicaSetSpec{
			Replicas: ptr[int32](3),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "nginx", "pod-template-hash": "7c5ddbdf54"}},
			Template: d.Spec.Template,
		},
	}
	defaults.ReplicaSet(rs)
	return rs
}

func TestReplicaSet(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(rs *appsv1.ReplicaSet)
		want   []string
	}{
		{"valid", func(rs *appsv1.ReplicaSet) {}, nil},
		{"replicas negative", func(rs *appsv1.ReplicaSet) { rs.Spec.Replicas = ptr[int32](-3) }, []string{"spec.replicas: Invalid value"}},
		{"minReadySeconds negative", func(rs *appsv1.ReplicaSet) { rs.Spec.MinReadySeconds = -1 }, []string{"spec.minReadySeconds: Invalid value"}},
		{"selector missing", func(rs *appsv1.ReplicaSet) { rs.Spec.Selector = nil }, []string{"spec.selector: Required value"}},
		{"selector empty", func(rs *appsv1.ReplicaSet) { rs.Spec.Selector = &metav1.LabelSelector{} }, []string{"spec.selector: Invalid value"}},
		{"selector does not match template labels", func(rs *appsv1.ReplicaSet) { rs.Spec.Selector.MatchLabels["pod-template-hash"] = "other" },
			[]string{"spec.template.metadata.labels: Invalid value"}},
		{"template restartPolicy must be Always", func(rs *appsv1.ReplicaSet) { rs.Spec.Template.Spec.RestartPolicy = "Never" },
			[]string{"spec.template.spec.restartPolicy: Unsupported value"}},
		{"template container invalid", func(rs *appsv1.ReplicaSet) { rs.Spec.Template.Spec.Containers[0].Image = "" },
			[]string{"spec.template.spec.containers[0].image: Required value"}},
		{"two controllers", func(rs *appsv1.ReplicaSet) {
			rs.Metadata.OwnerReferences = append(rs.Metadata.OwnerReferences, &metav1.OwnerReference{
				ApiVersion: "apps/v1", Kind: "Deployment", Name: "other", Uid: "u2", Controller: ptr(true)})
		}, []string{"metadata.ownerReferences: Invalid value"}},
		{"nil", func(rs *appsv1.ReplicaSet) { rs.Reset() }, []string{
			"metadata.name: Required value", "metadata.namespace: Required value", "spec.selector: Required value", "spec.template: Required value"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rs := nginxReplicaSet()
			c.mutate(rs)
			expectErrors(t, validation.ReplicaSet(rs), c.want)
		})
	}
}

func TestReplicaSetUpdate(t *testing.T) {
	oldRS := nginxReplicaSet()
	newRS := proto.Clone(oldRS).(*appsv1.ReplicaSet)
	newRS.Spec.Replicas = ptr[int32](0)
	expectErrors(t, validation.ReplicaSetUpdate(newRS, oldRS), nil)

	newRS.Spec.Selector.MatchExpressions = []*metav1.LabelSelectorRequirement{{Key: "app", Operator: "Exists"}}
	expectErrors(t, validation.ReplicaSetUpdate(newRS, oldRS), []string{"spec.selector: Invalid value"})
	expectDetail(t, validation.ReplicaSetUpdate(newRS, oldRS), "spec.selector", "field is immutable")
}
