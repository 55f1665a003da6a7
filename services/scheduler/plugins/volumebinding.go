package plugins

import (
	"context"
	"fmt"
	"slices"

	"google.golang.org/protobuf/proto"

	"skiff.dev/internal/client"
	"skiff.dev/internal/nodeaffinity"
	"skiff.dev/internal/storageclass"
	corev1 "skiff.dev/proto/core/v1"
	storagev1 "skiff.dev/proto/storage/v1"
	"skiff.dev/services/scheduler/config"
	"skiff.dev/services/scheduler/framework"
)

// VolumeBinding's reasons, as Kubernetes words them.
const (
	// ReasonUnboundImmediate rejects a pod (at PreFilter, on every node)
	// whose claim of an Immediate class is not bound yet: the binder binds
	// it first, whatever node the pod goes to.
	ReasonUnboundImmediate = "pod has unbound immediate PersistentVolumeClaims"
	// ReasonVolumeNodeConflict: a bound volume's nodeAffinity (or the node
	// an unbound claim was already promised to) excludes the node.
	ReasonVolumeNodeConflict = "node(s) had volume node affinity conflict"
	// ReasonVolumeNotExist: a claim is bound to a volume that does not exist.
	ReasonVolumeNotExist = "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)"
	// ReasonBindConflict: the class of an unbound claim cannot provision
	// on the node (its allowedTopologies exclude it).
	ReasonBindConflict = "node(s) didn't find available persistent volumes to bind"
)

// Names Kubernetes gives what volume binding reads and writes.
const (
	// AnnSelectedNode is set by the scheduler on an unbound claim of a
	// WaitForFirstConsumer class: the node its first consumer goes to,
	// where the provisioner makes its volume.
	AnnSelectedNode = "volume.kubernetes.io/selected-node"
	// AnnBindCompleted is set by Kubernetes' binder on a claim it bound.
	AnnBindCompleted = "pv.kubernetes.io/bind-completed"

	bindingModeWaitForFirstConsumer = "WaitForFirstConsumer"
	claimBound                      = "Bound"
	claimLost                       = "Lost"
)

// VolumeBindingPlugin is VolumeBinding. PreFilter reads the pod's
// persistentVolumeClaim volumes: a claim missing, being deleted, lost, or
// unbound with an Immediate class rejects the pod everywhere. Filter then
// checks, per node, that every bound claim's volume exists and that its
// nodeAffinity admits the node; an unbound claim of a WaitForFirstConsumer
// class admits any node its class may provision on (or only the node it
// was already promised to). PreBind promises each such claim to the chosen
// node with the annotation volume.kubernetes.io/selected-node, which the
// provisioner acts on. Unlike Kubernetes' plugin, PreBind does not wait
// for the claims to be bound: the node agent waits for that before it
// mounts.
type VolumeBindingPlugin struct {
	h framework.Handle
}

var (
	_ framework.PreFilterPlugin = (*VolumeBindingPlugin)(nil)
	_ framework.FilterPlugin    = (*VolumeBindingPlugin)(nil)
	_ framework.PreBindPlugin   = (*VolumeBindingPlugin)(nil)
)

// NewVolumeBinding builds VolumeBinding (it takes no args).
func NewVolumeBinding(_ any, h framework.Handle) (framework.Plugin, error) {
	return &VolumeBindingPlugin{h: h}, nil
}

// Name implements framework.Plugin.
func (*VolumeBindingPlugin) Name() string { return config.VolumeBinding }

const volumeBindingKey framework.StateKey = config.VolumeBinding

// podVolumes is what PreFilter found of a pod's claims.
type podVolumes struct {
	// bound are the volumes of bound claims; a nil volume is a missing
	// one (its name in missing).
	bound   []*corev1.PersistentVolume
	missing []string
	// delayed are the unbound claims of WaitForFirstConsumer classes,
	// with their classes (nil when unknown).
	delayed []delayedClaim
}

type delayedClaim struct {
	claim *corev1.PersistentVolumeClaim
	class *storagev1.StorageClass
}

// ClaimClass is the class a claim asks for (storageclass.ClaimClass).
func ClaimClass(c *corev1.PersistentVolumeClaim) string { return storageclass.ClaimClass(c) }

// ClaimBound reports a claim its binder has bound: spec.volumeName set
// and either phase Bound or Kubernetes' bind-completed annotation. A claim
// naming a volume but not bound yet (pre-bound) is unbound.
func ClaimBound(c *corev1.PersistentVolumeClaim) bool {
	if c.GetSpec().GetVolumeName() == "" {
		return false
	}
	if c.GetStatus().GetPhase() == claimBound {
		return true
	}
	_, ok := c.GetMetadata().GetAnnotations()[AnnBindCompleted]
	return ok
}

// readPodVolumes sorts pod's claims, or rejects the pod.
func readPodVolumes(vl framework.VolumeLister, pod *corev1.Pod) (*podVolumes, *framework.Status) {
	pv := &podVolumes{}
	ns := pod.GetMetadata().GetNamespace()
	immediate := false
	for _, v := range pod.GetSpec().GetVolumes() {
		src := v.GetPersistentVolumeClaim()
		if src == nil {
			continue
		}
		name := src.GetClaimName()
		var claim *corev1.PersistentVolumeClaim
		ok := false
		if vl != nil {
			claim, ok = vl.Claim(ns, name)
		}
		switch {
		case !ok:
			return nil, framework.NewStatus(framework.UnschedulableAndUnresolvable, fmt.Sprintf("persistentvolumeclaim %q not found", name))
		case claim.GetStatus().GetPhase() == claimLost:
			return nil, framework.NewStatus(framework.UnschedulableAndUnresolvable,
				fmt.Sprintf("persistentvolumeclaim %q bound to non-existent persistentvolume %q", name, claim.GetSpec().GetVolumeName()))
		case claim.GetMetadata().GetDeletionTimestamp() != nil:
			return nil, framework.NewStatus(framework.UnschedulableAndUnresolvable, fmt.Sprintf("persistentvolumeclaim %q is being deleted", name))
		}
		if ClaimBound(claim) {
			vol, ok := vl.Volume(claim.GetSpec().GetVolumeName())
			if !ok {
				pv.missing = append(pv.missing, claim.GetSpec().GetVolumeName())
				continue
			}
			pv.bound = append(pv.bound, vol)
			continue
		}
		var class *storagev1.StorageClass
		if cn := ClaimClass(claim); cn != "" {
			class, _ = vl.StorageClass(cn)
		}
		// A pre-bound claim (volumeName set) waits for the binder whatever
		// its class, as an Immediate one does.
		if class.GetVolumeBindingMode() != bindingModeWaitForFirstConsumer || claim.GetSpec().GetVolumeName() != "" {
			immediate = true
			continue
		}
		pv.delayed = append(pv.delayed, delayedClaim{claim: claim, class: class})
	}
	if immediate {
		return nil, framework.NewStatus(framework.UnschedulableAndUnresolvable, ReasonUnboundImmediate)
	}
	return pv, nil
}

func hasClaims(pod *corev1.Pod) bool {
	for _, v := range pod.GetSpec().GetVolumes() {
		if v.GetPersistentVolumeClaim() != nil {
			return true
		}
	}
	return false
}

func (pl *VolumeBindingPlugin) volumes() framework.VolumeLister {
	if pl.h == nil {
		return nil
	}
	return pl.h.Volumes()
}

// PreFilterExtensions implements framework.PreFilterPlugin: none (its
// PreFilter does not look at the other pods).
func (*VolumeBindingPlugin) PreFilterExtensions() framework.PreFilterExtensions { return nil }

// PreFilter implements framework.PreFilterPlugin: Skip for a pod without
// claims; reject a pod whose claims cannot be used on any node.
func (pl *VolumeBindingPlugin) PreFilter(_ context.Context, state *framework.CycleState, pod *framework.PodInfo) (*framework.PreFilterResult, *framework.Status) {
	if !hasClaims(pod.Pod) {
		return nil, framework.NewStatus(framework.Skip)
	}
	pv, st := readPodVolumes(pl.volumes(), pod.Pod)
	if st != nil {
		return nil, st
	}
	state.Write(volumeBindingKey, pv)
	return nil, nil
}

// Filter implements framework.FilterPlugin.
func (pl *VolumeBindingPlugin) Filter(_ context.Context, state *framework.CycleState, pod *framework.PodInfo, node *framework.NodeInfo) *framework.Status {
	pv, ok := framework.ReadAs[*podVolumes](state, volumeBindingKey)
	if !ok {
		if !hasClaims(pod.Pod) {
			return nil
		}
		var st *framework.Status
		if pv, st = readPodVolumes(pl.volumes(), pod.Pod); st != nil {
			return st
		}
	}
	return pv.fits(node.Node())
}

// fits is Filter's decision for one node.
func (pv *podVolumes) fits(node *corev1.Node) *framework.Status {
	var reasons []string
	if len(pv.missing) > 0 {
		reasons = append(reasons, ReasonVolumeNotExist)
	}
	conflict := false
	for _, vol := range pv.bound {
		if !VolumeNodeAffinityMatches(vol, node) {
			conflict = true
			break
		}
	}
	provisionable := true
	for _, d := range pv.delayed {
		if sel, ok := d.claim.GetMetadata().GetAnnotations()[AnnSelectedNode]; ok && sel != node.GetMetadata().GetName() {
			conflict = true
		}
		if !allowedTopologiesMatch(d.class, node) {
			provisionable = false
		}
	}
	if conflict {
		reasons = append(reasons, ReasonVolumeNodeConflict)
	}
	if !provisionable {
		reasons = append(reasons, ReasonBindConflict)
	}
	if len(reasons) == 0 {
		return nil
	}
	return framework.NewStatus(framework.UnschedulableAndUnresolvable, reasons...)
}

// VolumeNodeAffinityMatches reports whether vol may be used on node: it
// has no required nodeAffinity, or node matches one of its terms.
func VolumeNodeAffinityMatches(vol *corev1.PersistentVolume, node *corev1.Node) bool {
	return nodeaffinity.Match(node, vol.GetSpec().GetNodeAffinity().GetRequired())
}

// allowedTopologiesMatch reports whether class may provision on node: no
// allowedTopologies, or node's labels satisfy every expression of a term.
func allowedTopologiesMatch(class *storagev1.StorageClass, node *corev1.Node) bool {
	terms := class.GetAllowedTopologies()
	if len(terms) == 0 {
		return true
	}
	labels := node.GetMetadata().GetLabels()
	for _, t := range terms {
		all := true
		for _, e := range t.GetMatchLabelExpressions() {
			v, ok := labels[e.GetKey()]
			if !ok || !slices.Contains(e.GetValues(), v) {
				all = false
				break
			}
		}
		if all {
			return true
		}
	}
	return false
}

// PreBind implements framework.PreBindPlugin: each unbound claim of a
// WaitForFirstConsumer class gets the annotation
// volume.kubernetes.io/selected-node: <node>, read fresh from the API and
// written with its resourceVersion. A claim bound meanwhile is left alone;
// one promised meanwhile to another node fails the bind (the pod is
// retried, and then Filter sends it to that node).
func (pl *VolumeBindingPlugin) PreBind(ctx context.Context, state *framework.CycleState, pod *framework.PodInfo, node string) *framework.Status {
	pv, ok := framework.ReadAs[*podVolumes](state, volumeBindingKey)
	if !ok || len(pv.delayed) == 0 {
		return nil
	}
	claims := client.PersistentVolumeClaims(pl.h.Conn())
	for _, d := range pv.delayed {
		m := d.claim.GetMetadata()
		err := client.RetryOnConflict(ctx, client.DefaultRetry, func() error {
			cur, err := claims.Get(ctx, m.GetNamespace(), m.GetName())
			if err != nil {
				return err
			}
			if cur.GetMetadata().GetUid() != m.GetUid() {
				return fmt.Errorf("persistentvolumeclaim %q was replaced", m.GetName())
			}
			if cur.GetSpec().GetVolumeName() != "" {
				return nil
			}
			switch sel, ok := cur.GetMetadata().GetAnnotations()[AnnSelectedNode]; {
			case ok && sel == node:
				return nil
			case ok:
				return fmt.Errorf("persistentvolumeclaim %q is already promised to node %q", m.GetName(), sel)
			}
			upd := proto.Clone(cur).(*corev1.PersistentVolumeClaim)
			if upd.Metadata.Annotations == nil {
				upd.Metadata.Annotations = map[string]string{}
			}
			upd.Metadata.Annotations[AnnSelectedNode] = node
			_, err = claims.Update(ctx, upd)
			return err
		})
		if err != nil {
			return framework.AsStatus(fmt.Errorf("selecting node %s for persistentvolumeclaim %q: %w", node, m.GetName(), err))
		}
	}
	return nil
}
