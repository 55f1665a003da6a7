package validation_test

import (
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"
	"skiff.dev/internal/validation"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
)

func TestPodValid(t *testing.T) {
	p := nginxPod()
	before := proto.Clone(p)
	expectErrors(t, validation.Pod(p), nil)
	unchanged(t, before, p)
}

func TestPodSpecRules(t *testing.T) {
	for _, c := range podSpecCases() {
		t.Run(c.name, func(t *testing.T) {
			p := nginxPod()
			c.mutate(p.Spec)
			expectErrors(t, validation.Pod(p), prefixed("spec.", c.want))
		})
	}
}

func TestPodRules(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(p *corev1.Pod)
		want   []string
	}{
		{"restartPolicy Never is fine for a pod", func(p *corev1.Pod) { p.Spec.RestartPolicy = "Never" }, nil},
		{"restartPolicy unsupported", func(p *corev1.Pod) { p.Spec.RestartPolicy = "Sometimes" }, []string{"spec.restartPolicy: Unsupported value"}},
		{"preemptionPolicy Never is fine", func(p *corev1.Pod) { p.Spec.PreemptionPolicy = ptr("Never") }, nil},
		{"preemptionPolicy unsupported", func(p *corev1.Pod) { p.Spec.PreemptionPolicy = ptr("Sometimes") },
			[]string{"spec.preemptionPolicy: Unsupported value"}},
		{"activeDeadlineSeconds not positive", func(p *corev1.Pod) { p.Spec.ActiveDeadlineSeconds = ptr[int64](0) },
			[]string{"spec.activeDeadlineSeconds: Invalid value"}},
		{"name missing", func(p *corev1.Pod) { p.Metadata.Name = "" }, []string{"metadata.name: Required value"}},
		{"name not a DNS subdomain", func(p *corev1.Pod) { p.Metadata.Name = "Nginx_Pod" }, []string{"metadata.name: Invalid value"}},
		{"namespace missing", func(p *corev1.Pod) { p.Metadata.Namespace = "" }, []string{"metadata.namespace: Required value"}},
		{"spec missing", func(p *corev1.Pod) { p.Spec = nil }, []string{
			"spec.containers: Required value", "spec.restartPolicy: Required value", "spec.dnsPolicy: Required value"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := nginxPod()
			c.mutate(p)
			expectErrors(t, validation.Pod(p), c.want)
		})
	}
}

func TestPodNil(t *testing.T) {
	expectErrors(t, validation.Pod(nil), []string{
		"metadata.name: Required value", "metadata.namespace: Required value",
		"spec.containers: Required value", "spec.restartPolicy: Required value", "spec.dnsPolicy: Required value"})
}

func TestPodRequestAboveLimitMessage(t *testing.T) {
	p := nginxPod()
	p.Spec.Containers[0].Resources.Requests["cpu"] = "1"
	expectDetail(t, validation.Pod(p), "spec.containers[0].resources.requests[cpu]", "must be less than or equal to cpu limit of 500m")
}

func TestPodUpdate(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(p *corev1.Pod)
		want   []string
	}{
		{"no change", func(p *corev1.Pod) {}, nil},
		{"labels may change", func(p *corev1.Pod) { p.Metadata.Labels["track"] = "canary" }, nil},
		{"container image may change", func(p *corev1.Pod) { p.Spec.Containers[0].Image = "nginx:1.16.1" }, nil},
		{"init container image may change", func(p *corev1.Pod) { p.Spec.InitContainers[0].Image = "busybox:1.37" }, nil},
		{"activeDeadlineSeconds may be set", func(p *corev1.Pod) { p.Spec.ActiveDeadlineSeconds = ptr[int64](600) }, nil},
		{"toleration may be added", func(p *corev1.Pod) {
			p.Spec.Tolerations = append(p.Spec.Tolerations, &corev1.Toleration{Key: "gpu", Operator: "Exists", Effect: "NoSchedule"})
		}, nil},
		{"tolerationSeconds may change", func(p *corev1.Pod) { p.Spec.Tolerations[0].TolerationSeconds = ptr[int64](60) }, nil},
		{"toleration may not be modified", func(p *corev1.Pod) { p.Spec.Tolerations[1].Value = "api" }, []string{"spec.tolerations: Forbidden"}},
		{"toleration may not be removed", func(p *corev1.Pod) { p.Spec.Tolerations = p.Spec.Tolerations[:1] }, []string{"spec.tolerations: Forbidden"}},
		{"nodeName may not change", func(p *corev1.Pod) { p.Spec.NodeName = "node-1" }, []string{"spec: Forbidden"}},
		{"container may not be added", func(p *corev1.Pod) {
			p.Spec.Containers = append(p.Spec.Containers, &corev1.Container{Name: "debug", Image: "busybox", ImagePullPolicy: "Always", TerminationMessagePolicy: "File"})
		}, []string{"spec: Forbidden"}},
		{"resources may not change", func(p *corev1.Pod) { p.Spec.Containers[0].Resources.Limits["cpu"] = "1" }, []string{"spec: Forbidden"}},
		{"name is immutable", func(p *corev1.Pod) { p.Metadata.Name = "other" }, []string{"metadata.name: Invalid value"}},
		{"new object is validated too", func(p *corev1.Pod) { p.Spec.Containers[0].Image = "" }, []string{"spec.containers[0].image: Required value"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			oldP := nginxPod()
			newP := proto.Clone(oldP).(*corev1.Pod)
			c.mutate(newP)
			before := proto.Clone(newP)
			expectErrors(t, validation.PodUpdate(newP, oldP), c.want)
			unchanged(t, before, newP)
		})
	}
}

func TestPodUpdateActiveDeadline(t *testing.T) {
	cases := []struct {
		name       string
		old, new   *int64
		wantErrors []string
	}{
		{"lowered", ptr[int64](600), ptr[int64](300), nil},
		{"raised", ptr[int64](300), ptr[int64](600), []string{"spec.activeDeadlineSeconds: Invalid value"}},
		{"removed", ptr[int64](300), nil, []string{"spec.activeDeadlineSeconds: Invalid value"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			oldP := nginxPod()
			oldP.Spec.ActiveDeadlineSeconds = c.old
			newP := proto.Clone(oldP).(*corev1.Pod)
			newP.Spec.ActiveDeadlineSeconds = c.new
			expectErrors(t, validation.PodUpdate(newP, oldP), c.wantErrors)
		})
	}
}

func TestPodUpdateNamesWhatChanged(t *testing.T) {
	oldP := nginxPod()
	newP := proto.Clone(oldP).(*corev1.Pod)
	newP.Spec.NodeName = "node-1"
	newP.Spec.Containers[0].Ports[0].ContainerPort = 8080
	expectDetail(t, validation.PodUpdate(newP, oldP), "spec", "changed: containers, nodeName")
	expectDetail(t, validation.PodUpdate(newP, oldP), "spec", "may not change fields other than `spec.containers[*].image`")
}

func TestPodUpdateMetadata(t *testing.T) {
	ts := func(sec int64) *timestamppb.Timestamp { return &timestamppb.Timestamp{Seconds: sec} }
	cases := []struct {
		name   string
		mutate func(oldM, newM *metav1.ObjectMeta)
		want   []string
	}{
		{"namespace", func(_, m *metav1.ObjectMeta) { m.Namespace = "prod" }, []string{"metadata.namespace: Invalid value"}},
		{"uid", func(_, m *metav1.ObjectMeta) { m.Uid = "other" }, []string{"metadata.uid: Invalid value"}},
		{"creationTimestamp", func(_, m *metav1.ObjectMeta) { m.CreationTimestamp = ts(2) }, []string{"metadata.creationTimestamp: Invalid value"}},
		{"deletionTimestamp removed", func(o, m *metav1.ObjectMeta) { o.DeletionTimestamp = ts(5) }, []string{"metadata.deletionTimestamp: Invalid value"}},
		{"deletionTimestamp kept", func(o, m *metav1.ObjectMeta) { o.DeletionTimestamp = ts(5); m.DeletionTimestamp = ts(5) }, nil},
		{"deletionGracePeriodSeconds changed", func(o, m *metav1.ObjectMeta) {
			o.DeletionGracePeriodSeconds = ptr[int64](30)
			m.DeletionGracePeriodSeconds = ptr[int64](0)
		}, []string{"metadata.deletionGracePeriodSeconds: Invalid value"}},
		{"finalizer added while deleting", func(o, m *metav1.ObjectMeta) {
			o.DeletionTimestamp, m.DeletionTimestamp = ts(5), ts(5)
			o.Finalizers = []string{"example.com/cleanup"}
			m.Finalizers = []string{"example.com/cleanup", "example.com/more"}
		}, []string{"metadata.finalizers[1]: Forbidden"}},
		{"finalizer removed while deleting", func(o, m *metav1.ObjectMeta) {
			o.DeletionTimestamp, m.DeletionTimestamp = ts(5), ts(5)
			o.Finalizers = []string{"example.com/cleanup"}
		}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			oldP := nginxPod()
			oldP.Metadata.Uid = "5e0f2c8e-1d0b-4a77-b1c4-1b6a50b0a9ab"
			oldP.Metadata.CreationTimestamp = ts(1)
			newP := proto.Clone(oldP).(*corev1.Pod)
			c.mutate(oldP.Metadata, newP.Metadata)
			expectErrors(t, validation.PodUpdate(newP, oldP), c.want)
		})
	}
}

func prefixed(prefix string, paths []string) []string {
	out := make([]string, len(paths))
	for i, p := range paths {
		out[i] = prefix + p
	}
	return out
}
