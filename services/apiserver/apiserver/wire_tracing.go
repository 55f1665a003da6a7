package apiserver

// ServiceName is the apiserver's service.name in traces.
const ServiceName = "skiff-apiserver"

// The spans (internal/tracing, with cfg.Tracing): the gRPC server's
// stats handler makes one of each call served, the child of the caller's
// when the call carries a W3C traceparent; the connections to etcd
// (connectEtcd) and to node agents (logProxy) one of each call made.
// Run sends the last ones when it ends.
