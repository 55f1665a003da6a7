package persistentvolume

import (
	"skiff.dev/internal/nodeaffinity"
	corev1 "skiff.dev/proto/core/v1"
)

// VolumeReachableFrom says whether node satisfies v's required node
// affinity (a volume without one is reachable from every node): any term,
// each of whose expressions (over the node's labels) and fields
// (metadata.name) hold.
func VolumeReachableFrom(v *corev1.PersistentVolume, node *corev1.Node) bool {
	return nodeaffinity.Match(node, v.GetSpec().GetNodeAffinity().GetRequired())
}
