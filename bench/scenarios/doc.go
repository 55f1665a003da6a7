// Package scenarios holds skiff-bench's measurements of the control plane:
// one file per family of figures (etcd.go: the raw etcd limit; api.go:
// create, get and list through the gRPC API; watch.go: fan-out of events to
// many watchers; leader.go: how long the controllers stand still when the
// controller-manager's leader dies; ha.go: control-plane members of one
// etcd cluster against one apiserver, and a write's gap when the etcd
// leader's member is killed), the registry that selects them by
// figure-name prefix (registry.go), the closed-loop load that drives them
// (load.go), the latency histogram (histogram.go) and the report
// (report.go).
//
// A run is: Select the scenarios for a prefix, build an Env around one
// running apiserver and the etcd it stores in, Run them in order (a scenario
// that derives a figure from others, such as api.create_vs_etcd_ratio, runs
// after what it Needs), then WriteReport. Every scenario works in its own
// namespace or key prefix, so they share one server and one etcd, and each
// measures the process CPU it spent: the apiserver, etcd and the benchmark's
// clients run in the same process.
//
// It owns no server: the caller starts and stops the apiserver (the command
// in cmd/skiff-bench uses apiservertest with real fsync); only fairness.go
// starts one of its own, with TLS, authentication and flow control, and
// memory.go a skiff-apiserver process. Programs run as processes of their
// own (memory.go's apiserver, leader.go's controller-managers, ha.go's
// members) are built
// and run by bench/proc (as the chaos suite's are).
package scenarios
