package plugins

import (
	"context"

	"google.golang.org/grpc"
	"google.golang.org/grpc/encoding"
	protocodec "google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"

	"skiff.dev/internal/apierrors"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/scheduler/config"
	"skiff.dev/services/scheduler/framework"
)

// DefaultBinderPlugin is DefaultBinder: it writes the decision with
// Pods.Bind, with the pod's uid and resourceVersion as preconditions, so
// the apiserver refuses the bind of a pod that was replaced, changed, or
// bound meanwhile (a Conflict).
type DefaultBinderPlugin struct {
	h framework.Handle
}

var _ framework.BindPlugin = (*DefaultBinderPlugin)(nil)

// NewDefaultBinder builds DefaultBinder (it takes no args).
func NewDefaultBinder(_ any, h framework.Handle) (framework.Plugin, error) {
	return &DefaultBinderPlugin{h: h}, nil
}

// Name implements framework.Plugin.
func (b *DefaultBinderPlugin) Name() string { return config.DefaultBinder }

// Binding is the Binding that puts pod on node.
func Binding(pod *framework.PodInfo, node string) *corev1.Binding {
	m := pod.Pod.GetMetadata()
	return &corev1.Binding{
		Metadata: &metav1.ObjectMeta{
			Namespace: m.GetNamespace(), Name: m.GetName(),
			Uid: m.GetUid(), ResourceVersion: m.GetResourceVersion(),
		},
		Target: &corev1.ObjectReference{Kind: "Node", Name: node},
	}
}

// Bind implements framework.BindPlugin. The bound pod the apiserver
// answers with is not decoded: the watch brings it to the cache anyway,
// and decoding a whole pod costs more than encoding the Binding.
func (b *DefaultBinderPlugin) Bind(ctx context.Context, _ *framework.CycleState, pod *framework.PodInfo, node string) *framework.Status {
	err := b.h.Conn().Invoke(ctx, corev1.Pods_Bind_FullMethodName, Binding(pod, node), &discarded{}, grpc.ForceCodecV2(discardReplies{}))
	if err != nil {
		return framework.AsStatus(apierrors.FromError(err))
	}
	return nil
}

// discarded receives a reply that is not decoded.
type discarded struct{}

// discardReplies is the protobuf codec, except that replies into a
// *discarded are dropped undecoded.
type discardReplies struct{}

func (discardReplies) Marshal(v any) (mem.BufferSlice, error) {
	return encoding.GetCodecV2(protocodec.Name).Marshal(v)
}

func (discardReplies) Unmarshal(data mem.BufferSlice, v any) error {
	if _, ok := v.(*discarded); ok {
		return nil
	}
	return encoding.GetCodecV2(protocodec.Name).Unmarshal(data, v)
}

func (discardReplies) Name() string { return protocodec.Name }
