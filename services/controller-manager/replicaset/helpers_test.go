package replicaset

import (
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	appsv1 "skiff.dev/proto/apps/v1"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
)

// epoch is the time of the pure tests.
var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// podOpt changes a test pod.
type podOpt func(*corev1.Pod)

// testPod returns a pod named name in namespace "ns" with app=web.
func testPod(name string, opts ...podOpt) *corev1.Pod {
	p := &corev1.Pod{
		Metadata: &metav1.ObjectMeta{Name: name, Namespace: "ns", Uid: "uid-" + name, Labels: map[string]string{"app": "web"}},
		Spec:     &corev1.PodSpec{},
		Status:   &corev1.PodStatus{},
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

func onNode(n string) podOpt { return func(p *corev1.Pod) { p.Spec.NodeName = n } }
func phase(ph string) podOpt { return func(p *corev1.Pod) { p.Status.Phase = ph } }
func labeled(kv ...string) podOpt {
	return func(p *corev1.Pod) {
		p.Metadata.Labels = map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			p.Metadata.Labels[kv[i]] = kv[i+1]
		}
	}
}

// ready marks the pod Running and Ready since at (the zero time: since an
// unknown time).
func ready(at time.Time) podOpt {
	return func(p *corev1.Pod) {
		p.Status.Phase = "Running"
		c := &corev1.PodCondition{Type: "Ready", Status: "True"}
		if !at.IsZero() {
			c.LastTransitionTime = timestamppb.New(at)
		}
		p.Status.Conditions = append(p.Status.Conditions, c)
	}
}

func notReady() podOpt {
	return func(p *corev1.Pod) {
		p.Status.Conditions = append(p.Status.Conditions, &corev1.PodCondition{Type: "Ready", Status: "False"})
	}
}

func restarts(n ...int32) podOpt {
	return func(p *corev1.Pod) {
		for i, r := range n {
			p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, &corev1.ContainerStatus{Name: string(rune('a' + i)), RestartCount: r})
		}
	}
}

func created(at time.Time) podOpt {
	return func(p *corev1.Pod) { p.Metadata.CreationTimestamp = timestamppb.New(at) }
}

func deleting() podOpt {
	return func(p *corev1.Pod) { p.Metadata.DeletionTimestamp = timestamppb.New(epoch) }
}

func ownedBy(uid string, controller bool) podOpt {
	return func(p *corev1.Pod) {
		p.Metadata.OwnerReferences = append(p.Metadata.OwnerReferences, &metav1.OwnerReference{
			ApiVersion: "apps/v1", Kind: "ReplicaSet", Name: "rs-" + uid, Uid: uid, Controller: proto.Bool(controller),
		})
	}
}

// testRS returns a ReplicaSet "ns/web" (uid "rs1") selecting app=web.
func testRS(replicas int32, minReady int32) *appsv1.ReplicaSet {
	return &appsv1.ReplicaSet{
		ApiVersion: "apps/v1", Kind: "ReplicaSet",
		Metadata: &metav1.ObjectMeta{Name: "web", Namespace: "ns", Uid: "rs1", Generation: 3},
		Spec: &appsv1.ReplicaSetSpec{
			Replicas:        proto.Int32(replicas),
			MinReadySeconds: minReady,
			Selector:        &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: &corev1.PodTemplateSpec{
				Metadata: &metav1.ObjectMeta{Labels: map[string]string{"app": "web", "tier": "front"}},
				Spec:     &corev1.PodSpec{Containers: []*corev1.Container{{Name: "c", Image: "nginx"}}},
			},
		},
	}
}

func names(pods []*corev1.Pod) []string {
	out := make([]string, len(pods))
	for i, p := range pods {
		out[i] = p.GetMetadata().GetName()
	}
	return out
}
