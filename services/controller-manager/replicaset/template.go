package replicaset

import (
	"google.golang.org/protobuf/proto"

	appsv1 "skiff.dev/proto/apps/v1"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
)

// maxGeneratedNameLength is how long a generateName prefix may be so that
// the generated name (prefix and 5 random characters) stays a DNS label, as
// Kubernetes' name generator truncates it.
const maxGeneratedNameLength = 63 - 5

// controllerRef is the ownerReference the ReplicaSet's pods carry.
func controllerRef(rs *appsv1.ReplicaSet) *metav1.OwnerReference {
	m := rs.GetMetadata()
	return &metav1.OwnerReference{
		ApiVersion:         "apps/v1",
		Kind:               "ReplicaSet",
		Name:               m.GetName(),
		Uid:                m.GetUid(),
		Controller:         proto.Bool(true),
		BlockOwnerDeletion: proto.Bool(true),
	}
}

// podPrefix is the generateName of the ReplicaSet's pods: "<name>-".
func podPrefix(rsName string) string {
	p := rsName + "-"
	if len(p) > maxGeneratedNameLength {
		p = p[:maxGeneratedNameLength]
	}
	return p
}

// podTemplate builds the pods one sync creates. Every pod it returns shares
// the template's spec, labels, annotations and the owner reference: they
// are read-only (the client only marshals them), which keeps a pod's
// creation at a few small allocations.
type podTemplate struct {
	namespace, prefix string
	labels            map[string]string
	annotations       map[string]string
	finalizers        []string
	ownerRefs         []*metav1.OwnerReference
	spec              *corev1.PodSpec
}

// newPodTemplate copies what the pods take from rs, once per sync.
func newPodTemplate(rs *appsv1.ReplicaSet) *podTemplate {
	t := rs.GetSpec().GetTemplate()
	tm := t.GetMetadata()
	spec := t.GetSpec()
	if spec != nil {
		spec = proto.Clone(spec).(*corev1.PodSpec)
	}
	return &podTemplate{
		namespace:   rs.GetMetadata().GetNamespace(),
		prefix:      podPrefix(rs.GetMetadata().GetName()),
		labels:      cloneMap(tm.GetLabels()),
		annotations: cloneMap(tm.GetAnnotations()),
		finalizers:  append([]string(nil), tm.GetFinalizers()...),
		ownerRefs:   []*metav1.OwnerReference{controllerRef(rs)},
		spec:        spec,
	}
}

// pod returns a new pod to create.
func (t *podTemplate) pod() *corev1.Pod {
	return &corev1.Pod{
		Metadata: &metav1.ObjectMeta{
			GenerateName:    t.prefix,
			Namespace:       t.namespace,
			Labels:          t.labels,
			Annotations:     t.annotations,
			Finalizers:      t.finalizers,
			OwnerReferences: t.ownerRefs,
		},
		Spec: t.spec,
	}
}

func cloneMap(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
