package plugins

import (
	"context"
	"fmt"

	"google.golang.org/protobuf/types/known/timestamppb"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/scheduler/framework"
)

var ctx = context.Background()

// node builds a node with allocatable cpu, memory and pods ("" leaves one out).
func node(name, cpu, mem, pods string) *corev1.Node {
	alloc := map[string]string{}
	for k, v := range map[string]string{"cpu": cpu, "memory": mem, "pods": pods} {
		if v != "" {
			alloc[k] = v
		}
	}
	return &corev1.Node{
		Metadata: &metav1.ObjectMeta{Name: name, Labels: map[string]string{"kubernetes.io/hostname": name}},
		Spec:     &corev1.NodeSpec{},
		Status:   &corev1.NodeStatus{Allocatable: alloc},
	}
}

func withLabels(n *corev1.Node, kv ...string) *corev1.Node {
	for i := 0; i+1 < len(kv); i += 2 {
		n.Metadata.Labels[kv[i]] = kv[i+1]
	}
	return n
}

func withTaints(n *corev1.Node, ts ...*corev1.Taint) *corev1.Node {
	n.Spec.Taints = append(n.Spec.Taints, ts...)
	return n
}

var podCounter int

// pod builds a pod in namespace "default" requesting cpu and memory ("" for none).
func pod(name, cpu, mem string) *corev1.Pod {
	podCounter++
	req := map[string]string{}
	if cpu != "" {
		req["cpu"] = cpu
	}
	if mem != "" {
		req["memory"] = mem
	}
	return &corev1.Pod{
		Metadata: &metav1.ObjectMeta{Namespace: "default", Name: name, Uid: fmt.Sprintf("uid-%s-%d", name, podCounter), Labels: map[string]string{}},
		Spec: &corev1.PodSpec{Containers: []*corev1.Container{{
			Name: "c", Image: "i", Resources: &corev1.ResourceRequirements{Requests: req},
		}}},
	}
}

func podLabels(p *corev1.Pod, kv ...string) *corev1.Pod {
	for i := 0; i+1 < len(kv); i += 2 {
		p.Metadata.Labels[kv[i]] = kv[i+1]
	}
	return p
}

// nodeInfo is a NodeInfo of n holding pods.
func nodeInfo(n *corev1.Node, pods ...*corev1.Pod) *framework.NodeInfo {
	ni := framework.NewNodeInfo(n)
	for _, p := range pods {
		ni.AddPod(framework.NewPodInfo(p))
	}
	return ni
}

// fakeHandle serves a snapshot to plugins.
type fakeHandle struct {
	framework.Handle
	snap *framework.Snapshot
}

func (h fakeHandle) Snapshot() *framework.Snapshot { return h.snap }

func statusString(s *framework.Status) string {
	if s.IsSuccess() {
		return ""
	}
	return s.Code().String() + ": " + s.Message()
}

var timestamp = timestamppb.Now()
