// Package kubeclients is the harness of the tests that drive real
// Kubernetes clients against Skiff's apiserver over Kubernetes' HTTP API
// (issue 22): kubectl and Helm built from the Go module proxy at the
// versions hack/tools pins, run as processes against an in-process
// apiserver (apiservertest, with security on).
//
// A test gets the clients with Tools (built by `make tools` when missing
// or stale; skipped with the reason when they cannot be built, a failure
// under CI=true), a kubeconfig for the server with Kubeconfig, and runs
// them with Kubectl and Helm (a deadline each), or Command for a run that
// needs stdin, more environment or its output while it runs.
//
// A cold `make tools` takes minutes (hack/tools/README.md), longer than
// go test's default -timeout on a loaded machine: run it before the tests.
//
// The package owns the clients' runs and their environment; what the
// server answers is the tests' business.
package kubeclients
