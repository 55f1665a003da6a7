package apiserver

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"skiff.dev/internal/apierrors"
	"skiff.dev/internal/field"
	"skiff.dev/internal/labels"
	"skiff.dev/internal/object"
	appsv1 "skiff.dev/proto/apps/v1"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/apiserver/admission"
	"skiff.dev/services/apiserver/registry"
	"skiff.dev/services/apiserver/server"
)

// ------------------------------------------------------------------ pods

type podsServer struct {
	*server.Endpoint[*corev1.Pod, *corev1.Pod, *corev1.PodList, corev1.PodWatchResponse]
	// unimplementedRPCs answers Unimplemented for the rpcs podsServer does
	// not define itself (one level deeper, so that the Endpoint's verbs and
	// podsServer's own methods win).
	unimplementedPods
	reg  *registry.Registry[*corev1.Pod]
	now  func() time.Time
	logs *logProxy
	// server finds the PodDisruptionBudgets' registry for Evict (eviction.go).
	server *Server
}

// Bind sets spec.nodeName of an unbound pod and marks it PodScheduled.
func (p *podsServer) Bind(ctx context.Context, b *corev1.Binding) (*corev1.Pod, error) {
	meta := b.GetMetadata()
	node := b.GetTarget().GetName()
	var errs field.ErrorList
	if meta.GetName() == "" {
		errs = append(errs, field.Required(field.NewPath("metadata", "name"), "the pod to bind"))
	}
	if node == "" {
		errs = append(errs, field.Required(field.NewPath("target", "name"), "the node to bind to"))
	}
	if k := b.GetTarget().GetKind(); k != "" && k != "Node" {
		errs = append(errs, field.NotSupported(field.NewPath("target", "kind"), k, []string{"Node"}))
	}
	if len(errs) > 0 {
		return nil, apierrors.NewInvalid("Binding", meta.GetName(), errs)
	}
	pre := &metav1.Preconditions{Uid: meta.GetUid(), ResourceVersion: meta.GetResourceVersion()}
	return p.reg.GuaranteedUpdate(ctx, registry.Subresource{Name: "binding", Operation: admission.Create}, meta.GetNamespace(), meta.GetName(), pre, func(cur *corev1.Pod) (*corev1.Pod, error) {
		cm := cur.GetMetadata()
		name := cm.GetName()
		if cm.GetDeletionTimestamp() != nil {
			return nil, apierrors.NewConflict("pods", name, "pod is being deleted, cannot be assigned to a host")
		}
		if n := cur.GetSpec().GetNodeName(); n != "" {
			return nil, apierrors.NewConflict("pods", name, fmt.Sprintf("pod %s is already assigned to node %q", name, n))
		}
		next := proto.Clone(cur).(*corev1.Pod)
		if next.Spec == nil {
			next.Spec = &corev1.PodSpec{}
		}
		next.Spec.NodeName = node
		if next.Status == nil {
			next.Status = &corev1.PodStatus{}
		}
		setPodCondition(next.Status, &corev1.PodCondition{Type: "PodScheduled", Status: "True", LastTransitionTime: timestamppb.New(p.now())})
		return next, nil
	})
}

func setPodCondition(st *corev1.PodStatus, c *corev1.PodCondition) {
	for i, old := range st.Conditions {
		if old.GetType() == c.GetType() {
			if old.GetStatus() == c.GetStatus() {
				c.LastTransitionTime = old.GetLastTransitionTime()
			}
			st.Conditions[i] = c
			return
		}
	}
	st.Conditions = append(st.Conditions, c)
}

// podGracefulDelete: a pod bound to a node is only marked, with its grace
// period, so the node agent can stop its containers and then delete it with
// grace period 0. Unbound and finished pods go at once.
func podGracefulDelete(p *corev1.Pod, requested *int64) (int64, bool) {
	if p.GetSpec().GetNodeName() == "" {
		return 0, false
	}
	switch p.GetStatus().GetPhase() {
	case "Succeeded", "Failed":
		return 0, false
	}
	grace := int64(30)
	if g := p.GetSpec().TerminationGracePeriodSeconds; g != nil {
		grace = *g
	}
	if requested != nil {
		grace = *requested
	}
	return grace, grace > 0
}

// ------------------------------------------------------------------ scale

// scaleSubresource serves GetScale and UpdateScale for a kind with replicas.
type scaleSubresource[T object.Object] struct {
	reg         *registry.Registry[T]
	replicas    func(T) int32
	setReplicas func(T, int32)
	status      func(T) int32
	selector    func(T) *metav1.LabelSelector
}

func (s *scaleSubresource[T]) scaleOf(obj T) (*appsv1.Scale, error) {
	sel, err := labels.FromProto(s.selector(obj))
	if err != nil {
		return nil, apierrors.NewInternal(err)
	}
	meta := obj.GetMetadata()
	return &appsv1.Scale{
		ApiVersion: "autoscaling/v1",
		Kind:       "Scale",
		Metadata: &metav1.ObjectMeta{
			Name: meta.GetName(), Namespace: meta.GetNamespace(), Uid: meta.GetUid(),
			ResourceVersion: meta.GetResourceVersion(), CreationTimestamp: meta.GetCreationTimestamp(),
		},
		Spec:   &appsv1.ScaleSpec{Replicas: s.replicas(obj)},
		Status: &appsv1.ScaleStatus{Replicas: s.status(obj), Selector: sel.String()},
	}, nil
}

func (s *scaleSubresource[T]) GetScale(ctx context.Context, req *metav1.GetRequest) (*appsv1.Scale, error) {
	obj, err := s.reg.Get(ctx, req.GetNamespace(), req.GetName())
	if err != nil {
		return nil, err
	}
	return s.scaleOf(obj)
}

// UpdateScale sets spec.replicas; metadata.resourceVersion, when set, must match.
func (s *scaleSubresource[T]) UpdateScale(ctx context.Context, sc *appsv1.Scale) (*appsv1.Scale, error) {
	meta := sc.GetMetadata()
	want := sc.GetSpec().GetReplicas()
	if want < 0 {
		return nil, apierrors.NewInvalid("Scale", meta.GetName(), field.ErrorList{
			field.Invalid(field.NewPath("spec", "replicas"), want, "must be greater than or equal to 0")})
	}
	pre := &metav1.Preconditions{ResourceVersion: meta.GetResourceVersion()}
	obj, err := s.reg.GuaranteedUpdate(ctx, registry.Subresource{Name: "scale", Operation: admission.Update}, meta.GetNamespace(), meta.GetName(), pre, func(cur T) (T, error) {
		if s.replicas(cur) == want {
			return cur, nil
		}
		next := proto.Clone(cur).(T)
		s.setReplicas(next, want)
		object.Meta(next).Generation++
		return next, nil
	})
	if err != nil {
		return nil, err
	}
	return s.scaleOf(obj)
}

type deploymentsServer struct {
	*server.Endpoint[*appsv1.Deployment, *appsv1.Deployment, *appsv1.DeploymentList, appsv1.DeploymentWatchResponse]
	*scaleSubresource[*appsv1.Deployment]
}

func deploymentScale(reg *registry.Registry[*appsv1.Deployment]) *scaleSubresource[*appsv1.Deployment] {
	return &scaleSubresource[*appsv1.Deployment]{
		reg:      reg,
		replicas: func(d *appsv1.Deployment) int32 { return d.GetSpec().GetReplicas() },
		setReplicas: func(d *appsv1.Deployment, n int32) {
			if d.Spec == nil {
				d.Spec = &appsv1.DeploymentSpec{}
			}
			d.Spec.Replicas = proto.Int32(n)
		},
		status:   func(d *appsv1.Deployment) int32 { return d.GetStatus().GetReplicas() },
		selector: func(d *appsv1.Deployment) *metav1.LabelSelector { return d.GetSpec().GetSelector() },
	}
}

type replicaSetsServer struct {
	*server.Endpoint[*appsv1.ReplicaSet, *appsv1.ReplicaSet, *appsv1.ReplicaSetList, appsv1.ReplicaSetWatchResponse]
	*scaleSubresource[*appsv1.ReplicaSet]
}

func replicaSetScale(reg *registry.Registry[*appsv1.ReplicaSet]) *scaleSubresource[*appsv1.ReplicaSet] {
	return &scaleSubresource[*appsv1.ReplicaSet]{
		reg:      reg,
		replicas: func(r *appsv1.ReplicaSet) int32 { return r.GetSpec().GetReplicas() },
		setReplicas: func(r *appsv1.ReplicaSet, n int32) {
			if r.Spec == nil {
				r.Spec = &appsv1.ReplicaSetSpec{}
			}
			r.Spec.Replicas = proto.Int32(n)
		},
		status:   func(r *appsv1.ReplicaSet) int32 { return r.GetStatus().GetReplicas() },
		selector: func(r *appsv1.ReplicaSet) *metav1.LabelSelector { return r.GetSpec().GetSelector() },
	}
}

type statefulSetsServer struct {
	*server.Endpoint[*appsv1.StatefulSet, *appsv1.StatefulSet, *appsv1.StatefulSetList, appsv1.StatefulSetWatchResponse]
	*scaleSubresource[*appsv1.StatefulSet]
}

func statefulSetScale(reg *registry.Registry[*appsv1.StatefulSet]) *scaleSubresource[*appsv1.StatefulSet] {
	return &scaleSubresource[*appsv1.StatefulSet]{
		reg:      reg,
		replicas: func(s *appsv1.StatefulSet) int32 { return s.GetSpec().GetReplicas() },
		setReplicas: func(s *appsv1.StatefulSet, n int32) {
			if s.Spec == nil {
				s.Spec = &appsv1.StatefulSetSpec{}
			}
			s.Spec.Replicas = proto.Int32(n)
		},
		status:   func(s *appsv1.StatefulSet) int32 { return s.GetStatus().GetReplicas() },
		selector: func(s *appsv1.StatefulSet) *metav1.LabelSelector { return s.GetSpec().GetSelector() },
	}
}

// unimplementedPods and unimplementedServiceAccounts embed a generated
// Unimplemented server one level down: a server that does not (yet)
// define an rpc of its service answers codes.Unimplemented for it instead
// of failing to register.
type unimplementedPods struct{ corev1.UnimplementedPodsServer }

type unimplementedServiceAccounts struct {
	corev1.UnimplementedServiceAccountsServer
}

// serviceAccountsServer serves ServiceAccounts: the standard verbs, and
// CreateToken.
type serviceAccountsServer struct {
	*server.Endpoint[*corev1.ServiceAccount, *corev1.ServiceAccount, *corev1.ServiceAccountList, corev1.ServiceAccountWatchResponse]
	unimplementedServiceAccounts
	tokens *tokenIssuer // CreateToken (tokens.go)
}
