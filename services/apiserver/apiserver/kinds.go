package apiserver

import (
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"skiff.dev/internal/defaults"
	"skiff.dev/internal/field"
	"skiff.dev/internal/kinds"
	"skiff.dev/internal/object"
	"skiff.dev/internal/qos"
	"skiff.dev/internal/validation"
	appsv1 "skiff.dev/proto/apps/v1"
	batchv1 "skiff.dev/proto/batch/v1"
	certificatesv1 "skiff.dev/proto/certificates/v1"
	corev1 "skiff.dev/proto/core/v1"
	"skiff.dev/services/apiserver/registry"
	"skiff.dev/services/apiserver/scheme"
	"skiff.dev/services/apiserver/server"
)

// Every kind declared in internal/kinds/decl is installed by
// installKinds (kinds.gen.go, generated from the declarations), which
// calls install for a storage version, installConverted for another
// served version, and serve for the server registered for it. What a kind
// needs beyond defaults, validation and selectable fields is here, by its
// Go type: customize (its registry's strategy), converting (another
// version's conversions) and serverFor (its extra rpcs).

var standardVerbs = []string{"create", "get", "list", "update", "delete", "watch"}

// install registers every kind and its gRPC service on srv, their Lists
// sent as the endpoints encode them (server.EncodedLists), then what
// needs several kinds: the pod log proxy and the resource metrics API.
func (s *Server) install(srv grpc.ServiceRegistrar) {
	g := server.EncodedLists(srv)
	s.installKinds(g)
	s.logs = newLogProxy(registryOf[*corev1.Pod](s, kinds.MustGet("", "v1", "Pod")), registryOf[*corev1.Node](s, kinds.MustGet("", "v1", "Node")))
	s.pods.logs = s.logs
	s.installMetricsAPI(g)
}

// schemeKind is k as the scheme and discovery know it.
func schemeKind(k *kinds.Kind) *scheme.Kind {
	gv := func(k *kinds.Kind) scheme.GroupVersion {
		return scheme.GroupVersion{Group: k.Group, Version: k.Version}
	}
	return &scheme.Kind{
		GVK:            scheme.GroupVersionKind{GroupVersion: gv(k), Kind: k.Kind.Kind},
		Resource:       k.Resource,
		Singular:       k.Singular(),
		ShortNames:     k.ShortNames,
		Namespaced:     k.Namespaced,
		Storage:        gv(k.Stored),
		Service:        k.Service(),
		Verbs:          standardVerbs,
		Subresources:   k.Subresources,
		FieldSelectors: k.FieldSelectors(),
		New:            func() proto.Message { return k.New() },
	}
}

// install wires one kind at its storage version: storage, watch cache,
// registry (its strategy from the declaration, then customize), scheme
// entry and the endpoint that serves it.
func install[S object.Object, L proto.Message, W any](s *Server, k *kinds.Kind) *server.Endpoint[S, S, L, W] {
	sk := schemeKind(k)
	strategy := &registry.Strategy[S]{Kind: sk}
	if k.HasDefaults() {
		strategy.Default = func(obj S) { k.Default(obj) }
	}
	if rules := k.CreateRules(); rules != nil {
		strategy.Validate = func(obj S) field.ErrorList { return rules(obj) }
	}
	if rules := k.UpdateRules(); rules != nil {
		strategy.ValidateUpdate = func(obj, old S) field.ErrorList { return rules(obj, old) }
	}
	if len(k.Kind.FieldSelectors) > 0 {
		strategy.Fields = func(obj S) map[string]string { return k.Fields(obj) }
	}
	s.customize(any(strategy))
	s.scheme.AddKind(sk)
	s.routes.Add(sk.Service, sk.GVK.Group, sk.Resource, sk.Namespaced)
	reg := newRegistry(s, strategy, object.New[S])
	if s.registries == nil {
		s.registries = map[string]any{}
	}
	s.registries[k.GVK()] = reg
	return server.NewEndpoint[S, S, L, W](reg, server.StorageVersion[S](sk), object.New[S], object.New[L])
}

// installConverted serves k, a version other than its storage version,
// from the storage version's registry, converted through the scheme.
func installConverted[E, S object.Object, L proto.Message, W any](s *Server, k *kinds.Kind) *server.Endpoint[E, S, L, W] {
	sk := schemeKind(k)
	stored, _ := s.scheme.Kind(scheme.GroupVersionKind{GroupVersion: sk.Storage, Kind: k.Kind.Kind})
	s.scheme.AddKind(sk)
	s.routes.Add(sk.Service, sk.GVK.Group, sk.Resource, sk.Namespaced)
	converting(s, sk, stored)
	if s.slots == nil {
		s.slots = map[string]int{}
	}
	s.slots[k.Stored.GVK()]++ // the storage version's cached encodings are slot 0
	return server.NewEndpoint[E, S, L, W](registryOf[S](s, k.Stored), server.Converted[E, S](s.scheme, s.slots[k.Stored.GVK()], sk, stored),
		object.New[E], object.New[L])
}

// registryOf is the registry of k's storage version, installed before.
func registryOf[S object.Object](s *Server, k *kinds.Kind) *registry.Registry[S] {
	return s.registries[k.Stored.GVK()].(*registry.Registry[S])
}

// serve is the server of an endpoint: serverFor's, or the endpoint itself.
func serve[Srv any](s *Server, ep any) Srv {
	if srv := s.serverFor(ep); srv != nil {
		return srv.(Srv)
	}
	return ep.(Srv)
}

// customize adds to a kind's strategy what its declaration cannot say.
func (s *Server) customize(strategy any) {
	switch st := strategy.(type) {
	case *registry.Strategy[*corev1.Service]:
		s.services.strategy(st)
	case *registry.Strategy[*corev1.Namespace]:
		st.PrepareForDeletion = namespaceTerminating
		st.PendingFinalizers = namespaceSpecFinalizers
	case *registry.Strategy[*corev1.Pod]:
		st.GracefulDelete = podGracefulDelete
		// As Kubernetes' pod strategy: the QoS class is fixed at create.
		st.PrepareForCreate = func(p *corev1.Pod) {
			if p.Status == nil {
				p.Status = &corev1.PodStatus{}
			}
			p.Status.QosClass = qos.Compute(p)
			p.Spec.ServiceAccount = p.Spec.ServiceAccountName // the ServiceAccount admission plugin may have named it
			defaults.SchedulingGatedCondition(p)
			defaults.PodAffinityLabelKeys(p)
		}
		// Ephemeral containers come through their subresource only.
		st.ValidateCreate = validation.PodCreate
	case *registry.Strategy[*corev1.Node]:
		st.KeepStatusOnCreate = true
	case *registry.Strategy[*batchv1.Job]:
		// The selector and labels name the Job: after a generated name.
		st.PrepareForCreate = defaults.GenerateJobSelector
	}
}

// converting registers the conversions between a served version and its
// storage version.
func converting(s *Server, served, stored *scheme.Kind) {
	if served.GVK.Group == "apps" && served.GVK.Kind == "Deployment" {
		addDeploymentConversions(s.scheme, served.GVK, stored.GVK)
	}
}

// serverFor is the server of the kinds with rpcs beyond the standard
// verbs (nil for the others: the endpoint serves them).
func (s *Server) serverFor(ep any) any {
	switch ep := ep.(type) {
	case *server.Endpoint[*corev1.Pod, *corev1.Pod, *corev1.PodList, corev1.PodWatchResponse]:
		s.pods = &podsServer{Endpoint: ep, reg: ep.Registry(), now: s.now, server: s}
		return s.pods
	case *server.Endpoint[*appsv1.Deployment, *appsv1.Deployment, *appsv1.DeploymentList, appsv1.DeploymentWatchResponse]:
		return &deploymentsServer{Endpoint: ep, scaleSubresource: deploymentScale(ep.Registry())}
	case *server.Endpoint[*appsv1.ReplicaSet, *appsv1.ReplicaSet, *appsv1.ReplicaSetList, appsv1.ReplicaSetWatchResponse]:
		return &replicaSetsServer{Endpoint: ep, scaleSubresource: replicaSetScale(ep.Registry())}
	case *server.Endpoint[*appsv1.StatefulSet, *appsv1.StatefulSet, *appsv1.StatefulSetList, appsv1.StatefulSetWatchResponse]:
		return &statefulSetsServer{Endpoint: ep, scaleSubresource: statefulSetScale(ep.Registry())}
	case *server.Endpoint[*corev1.ServiceAccount, *corev1.ServiceAccount, *corev1.ServiceAccountList, corev1.ServiceAccountWatchResponse]:
		return &serviceAccountsServer{Endpoint: ep, tokens: s.newTokenIssuer()}
	case *server.Endpoint[*csrType, *csrType, *certificatesv1.CertificateSigningRequestList, certificatesv1.CertificateSigningRequestWatchResponse]:
		return &csrsServer{Endpoint: ep, reg: ep.Registry(), authorize: s.methods.Authorize, now: s.now}
	}
	return nil
}
