// Package cri is the node agent's client of a container runtime: the CRI's
// RuntimeService and ImageService (k8s.io/cri-api runtime/v1), one typed
// method per operation, each timed and counted in Kubernetes' metrics
// (kubelet_runtime_operations_total, kubelet_runtime_operations_duration_seconds
// and kubelet_runtime_operations_errors_total, by operation_type) with the
// request timeout applied.
//
//	conn, err := cri.Dial("unix:///run/containerd/containerd.sock")
//	rt := cri.New(conn, cri.Options{Metrics: cri.NewMetrics(reg)})
//	v, err := rt.Version(ctx)
//
// It owns no state and no decision: what to run is the agent's business.
package cri
