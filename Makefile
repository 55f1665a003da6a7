# Skiff: every target works from a fresh clone with Go and (for up/e2e) Docker.
# `make help` lists them.

SHELL := /bin/bash
GO ?= go
BIN := $(CURDIR)/bin
TOOLS := $(CURDIR)/.tools
STATICCHECK_VERSION := v0.8.2
# promtool of Prometheus 3.16.0 (its Go module is v0.316.0), for the compose
# Prometheus' rules: installed from the Go module proxy into a directory of
# its version (its --version is empty when built by go install).
PROMTOOL_VERSION := v0.316.0
PROMTOOL := $(TOOLS)/promtool-$(PROMTOOL_VERSION)/promtool
PROM_DIR := deploy/compose/prometheus
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo v0.1.0-dev)
COMMIT ?= $(shell git rev-parse --short HEAD 2>/dev/null)
# The version every binary reports (skiffctl version, the apiserver's
# discovery and --version): see internal/version.
LDFLAGS := -s -w -X skiff.dev/internal/version.gitVersion=$(VERSION) -X skiff.dev/internal/version.gitCommit=$(COMMIT)
# Every package of every module in go.work.
PKGS := skiff.dev/...
SCENARIO ?=
TEST_FLAGS ?=
CHAOS_FLAGS ?=

.PHONY: help build test test-rules test-short proto kfields tools lint bench chaos up down e2e e2e-ha dist e2e-install clean check-go

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-10s %s\n", $$1, $$2}'

check-go:
	@command -v $(GO) >/dev/null || { echo "Go is missing: install Go 1.26 or newer (https://go.dev/dl/)"; exit 1; }
	@$(GO) version | awk '{split($$3,v,"."); if (v[1]=="go1" && v[2]+0 < 26) {print "Go " $$3 " is too old: Skiff needs Go 1.26 or newer"; exit 1}}'

build: check-go ## build every binary into bin/
	@mkdir -p $(BIN)
	@for d in services/*/cmd/* bench/cmd/*; do \
	  [ -f "$$d/main.go" ] || continue; \
	  echo "go build $$d -> bin/$$(basename $$d)"; \
	  CGO_ENABLED=0 $(GO) build -trimpath -ldflags "$(LDFLAGS)" -o $(BIN)/$$(basename $$d) ./$$d || exit 1; \
	done

test: check-go test-rules tools ## run every test of every module, with the race detector, and the rules' tests (test-rules); kubectl and helm (tools) first, for the HTTP API's tests
	$(GO) test -race -count=1 $(TEST_FLAGS) $(PKGS)

test-rules: check-go $(PROMTOOL) ## check the compose Prometheus' recording and alerting rules, run their unit tests (promtool) and the e2e module's tests that need no cluster
	$(PROMTOOL) check rules $(PROM_DIR)/rules/*.yml
	$(PROMTOOL) test rules $(PROM_DIR)/tests/*.yml
	GOWORK=off $(GO) -C deploy/compose/e2e test -count=1 -run '^(TestPromQLMetricNames|TestRuleFileAlerts|TestDashboardsDatasourceVariable)$$' .

$(PROMTOOL): | check-go
	GOBIN=$(dir $@) $(GO) install github.com/prometheus/prometheus/cmd/promtool@$(PROMTOOL_VERSION)

test-short: check-go ## run the tests without the race detector, skipping the slow ones
	$(GO) test -short -count=1 $(PKGS)

proto: ## regenerate the Go code of proto/ (pinned protoc-gen-go and protoc-gen-go-grpc)
	./scripts/gen-proto.sh

kfields: check-go ## regenerate internal/kfields/kubernetes.gen.go (Kubernetes v1.36's fields, from k8s.io/api v0.36.6 in hack/kfields, outside go.work) and docs/fields.md
	GOWORK=off $(GO) -C hack/kfields run . -out ../../internal/kfields/kubernetes.gen.go
	$(GO) test -count=1 ./internal/kfields -run TestFieldsDoc -update

tools: check-go ## build kubectl and helm (pinned in hack/tools, outside go.work) into .tools/bin for the HTTP API's tests; a no-op when they are built from the same pins
	GO=$(GO) ./hack/tools/build.sh $(TOOLS)/bin

lint: check-go ## go vet and staticcheck over every module
	$(GO) vet $(PKGS)
	@[ -x $(TOOLS)/staticcheck ] && $(TOOLS)/staticcheck -version | grep -q $(STATICCHECK_VERSION:v%=%) || \
	  GOBIN=$(TOOLS) $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)
	$(TOOLS)/staticcheck $(PKGS)
	@bad=$$(gofmt -l $$(git ls-files '*.go')); [ -z "$$bad" ] || { echo "gofmt needed: $$bad"; exit 1; }

bench: check-go ## run the benchmarks (SCENARIO=<prefix> to choose: api, etcd, watch)
	$(GO) run ./bench/cmd/skiff-bench -scenario "$(SCENARIO)"

chaos: check-go ## the chaos suite: the real binaries on simulated nodes, SIGKILLs, a paused and a lost node, compaction, invariants every 100 ms (CHAOS_FLAGS=-short: CI's short form; -runs 3)
	$(GO) run ./bench/cmd/skiff-chaos $(CHAOS_FLAGS)

up: check-go ## start the whole cluster with docker compose (deploy/compose), wait until it is healthy, write the skiffctl config (HA=1: three control-plane members)
	SKIFF_HA=$(if $(filter 1 yes true,$(HA)),1,0) ./scripts/compose.sh up

down: ## stop the compose cluster (V=1 also removes its volumes: all its state)
	./scripts/compose.sh down $(if $(filter 1 yes true,$(V)),-v)

e2e: check-go ## end-to-end test of the compose cluster (starts it, and removes it with its volumes at the end)
	SKIFF_HA=$(if $(filter 1 yes true,$(HA)),1,0) ./scripts/compose.sh e2e

e2e-ha: check-go ## end-to-end test of the HA compose cluster: the etcd leader's member SIGKILLed under writes and a rollout, then every member restarted in turn
	./scripts/compose.sh e2e-ha

dist: check-go ## the release tarball dist/skiff-<version>-linux-amd64.tar.gz: static binaries, systemd units, default settings, install.sh (docs/install.md)
	VERSION=$(VERSION) LDFLAGS="$(LDFLAGS)" GO=$(GO) ./scripts/dist.sh

e2e-install: dist ## docs/install.md followed command by command on six simulated machines (containers running systemd): three control-plane members, two nodes, a third node on another network (VXLAN)
	./deploy/install-test/run.sh

clean: ## remove built binaries and tools
	rm -rf $(BIN) $(TOOLS)
