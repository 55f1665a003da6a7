package framework

import (
	"fmt"
	"maps"
	"sync/atomic"

	"skiff.dev/internal/podresources"
	"skiff.dev/internal/quantity"
	corev1 "skiff.dev/proto/core/v1"
)

// Resource names the scheduler knows by name; any other name in a request
// or in allocatable is a scalar (extended) resource such as nvidia.com/gpu.
const (
	ResourceCPU              = "cpu"
	ResourceMemory           = "memory"
	ResourceEphemeralStorage = "ephemeral-storage"
	ResourcePods             = "pods"
)

// Defaults used for scoring pods that request nothing, as in Kubernetes, so
// that many such pods do not all pile on one node.
const (
	DefaultMilliCPURequest int64 = 100               // 0.1 core
	DefaultMemoryRequest   int64 = 200 * 1024 * 1024 // 200 MiB
)

// Resource is an amount of each resource: cpu in milli-cores, memory and
// ephemeral storage in bytes, pods as a count, scalar resources in
// milli-units.
type Resource struct {
	MilliCPU         int64
	Memory           int64
	EphemeralStorage int64
	AllowedPodNumber int64
	Scalar           map[string]int64
}

// Add adds o to r.
func (r *Resource) Add(o *Resource) {
	r.MilliCPU += o.MilliCPU
	r.Memory += o.Memory
	r.EphemeralStorage += o.EphemeralStorage
	r.AllowedPodNumber += o.AllowedPodNumber
	for k, v := range o.Scalar {
		if r.Scalar == nil {
			r.Scalar = make(map[string]int64, len(o.Scalar))
		}
		r.Scalar[k] += v
	}
}

// Sub subtracts o from r.
func (r *Resource) Sub(o *Resource) {
	r.MilliCPU -= o.MilliCPU
	r.Memory -= o.Memory
	r.EphemeralStorage -= o.EphemeralStorage
	r.AllowedPodNumber -= o.AllowedPodNumber
	for k, v := range o.Scalar {
		if r.Scalar == nil {
			r.Scalar = map[string]int64{}
		}
		r.Scalar[k] -= v
	}
}

// Equal reports whether r and o hold the same amounts.
func (r *Resource) Equal(o *Resource) bool {
	return r.MilliCPU == o.MilliCPU && r.Memory == o.Memory && r.EphemeralStorage == o.EphemeralStorage &&
		r.AllowedPodNumber == o.AllowedPodNumber && maps.Equal(r.Scalar, o.Scalar)
}

// Clone returns a copy of r that shares nothing with it.
func (r Resource) Clone() Resource {
	if r.Scalar != nil {
		r.Scalar = maps.Clone(r.Scalar)
	}
	return r
}

// Get returns the amount of the named resource in r's units.
func (r *Resource) Get(name string) int64 {
	switch name {
	case ResourceCPU:
		return r.MilliCPU
	case ResourceMemory:
		return r.Memory
	case ResourceEphemeralStorage:
		return r.EphemeralStorage
	case ResourcePods:
		return r.AllowedPodNumber
	default:
		return r.Scalar[name]
	}
}

// ParseResourceList turns a map of quantity strings (a node's allocatable,
// a container's requests) into a Resource. An unparsable quantity is an
// error naming the resource; the others are still counted.
func ParseResourceList(list map[string]string) (Resource, error) {
	var r Resource
	var firstErr error
	for name, s := range list {
		q, err := quantity.Parse(s)
		if err != nil {
			if firstErr == nil {
				firstErr = fmt.Errorf("resource %q: %w", name, err)
			}
			continue
		}
		r.set(name, q)
	}
	return r, firstErr
}

// resourceOf is a Resource holding parsed quantities (a pod's requests).
func resourceOf(list map[string]quantity.Quantity) Resource {
	var r Resource
	for name, q := range list {
		r.set(name, q)
	}
	return r
}

// set records one resource's quantity: cpu in millicores, memory,
// ephemeral storage and pods as whole values, others in thousandths.
func (r *Resource) set(name string, q quantity.Quantity) {
	switch name {
	case ResourceCPU:
		r.MilliCPU = q.MilliValue()
	case ResourceMemory:
		r.Memory = q.Value()
	case ResourceEphemeralStorage:
		r.EphemeralStorage = q.Value()
	case ResourcePods:
		r.AllowedPodNumber = q.Value()
	default:
		if r.Scalar == nil {
			r.Scalar = map[string]int64{}
		}
		r.Scalar[name] = q.MilliValue()
	}
}

// PodInfo is a pod with what the scheduler derives from it once: its
// effective requests and priority. The pod is shared with the informer's
// cache and must not be changed.
type PodInfo struct {
	Pod *corev1.Pod
	// Requests is the pod's effective request (podresources.Requests: the
	// containers and sidecars summed, raised to any init container's
	// request with the sidecars started before it), with AllowedPodNumber
	// 1 (the pod itself).
	Requests Resource
	// NonZeroCPU and NonZeroMemory are the cpu and memory requests with the
	// scoring defaults in place of zeros.
	NonZeroCPU    int64
	NonZeroMemory int64
	// ParseError is set when a request could not be parsed (it counts as 0).
	ParseError error
	// The pod's (anti-)affinity terms, parsed once (affinity.go);
	// AffinityError is set when one did not parse.
	RequiredAffinityTerms      []AffinityTerm
	RequiredAntiAffinityTerms  []AffinityTerm
	PreferredAffinityTerms     []WeightedAffinityTerm
	PreferredAntiAffinityTerms []WeightedAffinityTerm
	AffinityError              error
}

// NewPodInfo parses p's requests.
func NewPodInfo(p *corev1.Pod) *PodInfo {
	pi := &PodInfo{Pod: p}
	var firstErr error
	note := func(err error) {
		if err != nil && firstErr == nil {
			firstErr = err
		}
	}
	reqs, err := podresources.Requests(p.GetSpec())
	note(err)
	sum := resourceOf(reqs)
	sum.AllowedPodNumber = 1
	pi.Requests = sum
	pi.NonZeroCPU, pi.NonZeroMemory = sum.MilliCPU, sum.Memory
	if pi.NonZeroCPU == 0 {
		pi.NonZeroCPU = DefaultMilliCPURequest
	}
	if pi.NonZeroMemory == 0 {
		pi.NonZeroMemory = DefaultMemoryRequest
	}
	pi.ParseError = firstErr
	pi.AffinityError = pi.parseAffinity()
	return pi
}

// UID is the pod's uid.
func (pi *PodInfo) UID() string { return pi.Pod.GetMetadata().GetUid() }

// Key is the pod's "namespace/name".
func (pi *PodInfo) Key() string {
	m := pi.Pod.GetMetadata()
	return m.GetNamespace() + "/" + m.GetName()
}

// Priority is spec.priority, 0 when unset.
func (pi *PodInfo) Priority() int32 { return pi.Pod.GetSpec().GetPriority() }

// generation orders every change of every NodeInfo, so a snapshot can copy
// only the nodes changed since it was last updated.
var generation atomic.Int64

func nextGeneration() int64 { return generation.Add(1) }

// NodeInfo is a node and the pods the scheduler counts on it: bound pods
// that are not finished, and pods assumed there but not yet bound. The pod
// list may hold pods of a node not (or no longer) known, whose Node is nil.
type NodeInfo struct {
	node *corev1.Node
	// Pods on the node. Order is not meaningful.
	Pods []*PodInfo
	// PodsWithAffinity are the pods with any pod (anti-)affinity term;
	// PodsWithRequiredAntiAffinity those with a required anti-affinity
	// term (InterPodAffinity reads only these of the other nodes' pods).
	PodsWithAffinity             []*PodInfo
	PodsWithRequiredAntiAffinity []*PodInfo
	// Requested is the sum of the pods' requests (AllowedPodNumber is the
	// number of pods); NonZeroRequested the same with the scoring defaults.
	Requested        Resource
	NonZeroRequested Resource
	// Allocatable is the node's status.allocatable.
	Allocatable Resource
	// Generation is bumped on every change.
	Generation int64
	// AllocatableError is set when the node's allocatable did not parse.
	AllocatableError error
}

// NewNodeInfo returns a NodeInfo for node (which may be nil) with pods.
func NewNodeInfo(node *corev1.Node, pods ...*PodInfo) *NodeInfo {
	ni := &NodeInfo{Generation: nextGeneration()}
	if node != nil {
		ni.SetNode(node)
	}
	for _, p := range pods {
		ni.AddPod(p)
	}
	return ni
}

// Node is the node, nil when only its pods are known.
func (n *NodeInfo) Node() *corev1.Node { return n.node }

// Name is the node's name ("" when the node is not known).
func (n *NodeInfo) Name() string { return n.node.GetMetadata().GetName() }

// SetNode sets the node and parses its allocatable.
func (n *NodeInfo) SetNode(node *corev1.Node) {
	n.node = node
	n.Allocatable, n.AllocatableError = ParseResourceList(node.GetStatus().GetAllocatable())
	n.Generation = nextGeneration()
}

// RemoveNode forgets the node but keeps its pods' accounting.
func (n *NodeInfo) RemoveNode() {
	n.node = nil
	n.Generation = nextGeneration()
}

// AddPod counts pi on the node.
func (n *NodeInfo) AddPod(pi *PodInfo) {
	n.Pods = append(n.Pods, pi)
	if pi.HasAffinity() {
		n.PodsWithAffinity = append(n.PodsWithAffinity, pi)
	}
	if pi.HasRequiredAntiAffinity() {
		n.PodsWithRequiredAntiAffinity = append(n.PodsWithRequiredAntiAffinity, pi)
	}
	n.Requested.Add(&pi.Requests)
	n.NonZeroRequested.MilliCPU += pi.NonZeroCPU
	n.NonZeroRequested.Memory += pi.NonZeroMemory
	n.NonZeroRequested.AllowedPodNumber++
	n.Generation = nextGeneration()
}

// RemovePod stops counting the pod with pi's uid; it reports whether the
// pod was there.
func (n *NodeInfo) RemovePod(pi *PodInfo) bool {
	uid := pi.UID()
	for i, p := range n.Pods {
		if p.UID() != uid {
			continue
		}
		last := len(n.Pods) - 1
		n.Pods[i] = n.Pods[last]
		n.Pods[last] = nil
		n.Pods = n.Pods[:last]
		if p.HasAffinity() {
			n.PodsWithAffinity = removeByUID(n.PodsWithAffinity, uid)
		}
		if p.HasRequiredAntiAffinity() {
			n.PodsWithRequiredAntiAffinity = removeByUID(n.PodsWithRequiredAntiAffinity, uid)
		}
		n.Requested.Sub(&p.Requests)
		n.NonZeroRequested.MilliCPU -= p.NonZeroCPU
		n.NonZeroRequested.Memory -= p.NonZeroMemory
		n.NonZeroRequested.AllowedPodNumber--
		n.Generation = nextGeneration()
		return true
	}
	return false
}

// Clone returns a copy of n that later changes to n do not affect (the
// pods themselves are shared: they are read-only).
func (n *NodeInfo) Clone() *NodeInfo {
	c := &NodeInfo{}
	n.CopyTo(c)
	return c
}

// CopyTo makes dst a copy of n that later changes to n do not affect,
// reusing dst's pod slice. (Allocatable is shared: it is replaced, never
// changed in place.)
func (n *NodeInfo) CopyTo(dst *NodeInfo) {
	if len(dst.Pods) > len(n.Pods) {
		clear(dst.Pods[len(n.Pods):])
	}
	pods := append(dst.Pods[:0], n.Pods...)
	withAffinity := copyPods(dst.PodsWithAffinity, n.PodsWithAffinity)
	withAnti := copyPods(dst.PodsWithRequiredAntiAffinity, n.PodsWithRequiredAntiAffinity)
	*dst = *n
	dst.Pods = pods
	dst.PodsWithAffinity, dst.PodsWithRequiredAntiAffinity = withAffinity, withAnti
	dst.Requested = n.Requested.Clone()
	dst.NonZeroRequested = n.NonZeroRequested.Clone()
}

// replacePod swaps the pod with pi's uid for pi, without changing the
// accounting, when both request the same; it reports whether it did.
func (n *NodeInfo) replacePod(pi *PodInfo) bool {
	uid := pi.UID()
	for i, p := range n.Pods {
		if p.UID() == uid {
			if !p.Requests.Equal(&pi.Requests) || p.NonZeroCPU != pi.NonZeroCPU || p.NonZeroMemory != pi.NonZeroMemory ||
				!sameForAffinity(p, pi) {
				return false
			}
			n.Pods[i] = pi
			replaceByUID(n.PodsWithAffinity, pi)
			replaceByUID(n.PodsWithRequiredAntiAffinity, pi)
			return true
		}
	}
	return false
}

// ConfirmPod replaces an assumed pod by its bound version. When they
// request the same, the accounting and generation do not change (a
// snapshot may keep the assumed version, which is equivalent for every
// plugin); otherwise the pod is removed and added again.
func (n *NodeInfo) ConfirmPod(pi *PodInfo) {
	if n.replacePod(pi) {
		return
	}
	n.RemovePod(pi)
	n.AddPod(pi)
}

// String describes the node's accounting, for logs and test failures.
func (n *NodeInfo) String() string {
	return fmt.Sprintf("node %q: %d pods, requested cpu=%dm memory=%d of allocatable cpu=%dm memory=%d pods=%d",
		n.Name(), len(n.Pods), n.Requested.MilliCPU, n.Requested.Memory,
		n.Allocatable.MilliCPU, n.Allocatable.Memory, n.Allocatable.AllowedPodNumber)
}
