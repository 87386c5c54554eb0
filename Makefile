# LIFT & FIT Private Space. `make up` runs the whole platform locally; `make test` runs every test.
SHELL := /bin/bash
PY := .venv/bin/python
# The interpreter under .venv: the one the images carry, Debian's python3.11 (make images builds
# the base from it when the public image cannot be had; the public image's is built the same
# way, with profile-guided and link-time optimisation). A Python built without them, as pyenv
# builds by default, runs the services' code about a quarter slower, and the benchmarks would
# measure an interpreter the platform never runs (docs/performance.md). Elsewhere, the first
# python3.11 on PATH. The stamp names it, so a venv made on another interpreter is made again.
BASE_PYTHON ?= $(firstword $(wildcard /usr/bin/python3.11) $(shell command -v python3.11 || command -v python3))
VENV_STAMP := .venv/.installed-$(subst /,_,$(BASE_PYTHON))

# Jaeger v2, built once from the Go module proxy (deploy/local/jaeger pins the version in its
# go.mod and go.sum) into .local/bin; built again only when those change.
JAEGER := .local/bin/jaeger

.PHONY: images images-built node-packages k8s-tools k8s-check deploy-local deploy-local-down install web-tools chromium protos lint contracts release-contracts test test-only up down status infra-up prometheus bench bench-relay bench-booking bench-floor bench-gateway bench-saga chaos lock

install: $(VENV_STAMP) build/gen/liftfit web-tools

$(VENV_STAMP): requirements.lock
	@test -n "$(BASE_PYTHON)" || { echo "no python3.11 found" >&2; exit 1; }
	@real='import os, sys; print(os.path.realpath(getattr(sys, "_base_executable", sys.executable)))'; \
	  if [ -x .venv/bin/python ] && [ "$$(.venv/bin/python -c "$$real")" != "$$($(BASE_PYTHON) -c "$$real")" ]; then \
	  echo "[install] .venv was made on another interpreter: making it again on $(BASE_PYTHON)"; rm -rf .venv; fi
	@test -x .venv/bin/python || $(BASE_PYTHON) -m venv .venv
	.venv/bin/pip install -q --upgrade pip
	.venv/bin/pip install -q -r requirements.lock
	@site=$$(.venv/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])'); \
	  printf '%s\n%s\n' "$(CURDIR)" "$(CURDIR)/build/gen" > "$$site/liftfit-repo.pth"
	@touch $(VENV_STAMP)

build/gen/liftfit: $(VENV_STAMP) $(shell find protos -name '*.proto')
	scripts/gen_protos.sh

protos: $(VENV_STAMP)
	scripts/gen_protos.sh

# Re-resolves requirements.in into the pinned requirements.lock.
lock:
	rm -rf /tmp/liftfit-lock && $(BASE_PYTHON) -m venv /tmp/liftfit-lock
	/tmp/liftfit-lock/bin/pip install -q -r requirements.in
	/tmp/liftfit-lock/bin/pip freeze | sort -f > requirements.lock

# The broker's readiness check asks it for its brokers with the venv's Kafka client, so a
# fresh clone's `make infra-up` makes the venv first.
infra-up: $(VENV_STAMP)
	bash deploy/local/infra.sh up

# Prometheus and promtool (Debian's prometheus package): `make up` runs Prometheus, and
# tests/observability/test_alert_rules.py checks the alerting rules and runs their unit tests.
prometheus:
	@command -v prometheus >/dev/null || apt-get install -y -q --no-install-recommends prometheus

# The browser tests (tests/web): Debian's Chromium, driven by Playwright for Python (in the venv;
# never Playwright's own browser download), and axe-core, pinned by tests/web/tools' lock and
# installed into .local/web-tools again only when that lock changes.
AXE := .local/web-tools/node_modules/axe-core/axe.min.js

web-tools: chromium $(AXE)

chromium:
	@command -v chromium >/dev/null || apt-get install -y -q --no-install-recommends chromium

$(AXE): tests/web/tools/package.json tests/web/tools/package-lock.json
	mkdir -p .local/web-tools
	cp tests/web/tools/package.json tests/web/tools/package-lock.json .local/web-tools/
	npm ci --prefix .local/web-tools --ignore-scripts --no-audit --no-fund
	@touch $(AXE)

lint: install
	.venv/bin/ruff check .
	.venv/bin/ruff format --check .
	.venv/bin/mypy servicekit services gateway_bff sandboxes tests benchmarks chaos

# The contracts first: Buf's lint and breaking check on protos/, then the contract tests,
# listed one by one so the output says what they checked.
contracts: install infra-up
	cd protos && ../.venv/bin/buf lint
	cd protos && ../.venv/bin/buf breaking --against released.binpb
	.venv/bin/pytest -v tests/contract

# A deliberate new release of the contracts: the new image is in the diff a reviewer reads.
release-contracts: install
	cd protos && ../.venv/bin/buf build -o released.binpb

test: install infra-up prometheus lint contracts $(JAEGER) k8s-tools images-built
	.venv/bin/pytest -q --durations=15 --ignore=tests/contract

test-only:
	.venv/bin/pytest -q

up: install infra-up prometheus $(JAEGER)
	bash scripts/platform.sh up

down:
	bash deploy/local/infra.sh down

status:
	bash deploy/local/infra.sh status
	bash scripts/platform.sh status

bench: bench-relay bench-booking bench-floor bench-gateway bench-saga

bench-relay: install infra-up $(JAEGER)
	$(PY) -m benchmarks.relay

$(JAEGER): deploy/local/jaeger/go.mod deploy/local/jaeger/go.sum
	mkdir -p .local/bin
	cd deploy/local/jaeger && go build -o $(CURDIR)/$(JAEGER) github.com/jaegertracing/jaeger/cmd/jaeger

# ghz, the gRPC load generator, built once from the Go module proxy into .local/bin.
GHZ := .local/bin/ghz
$(GHZ):
	mkdir -p .local/bin
	GOBIN=$(CURDIR)/.local/bin go install github.com/bojand/ghz/cmd/ghz@v0.93.0

bench-booking: install infra-up $(GHZ) $(JAEGER)
	$(PY) -m benchmarks.booking

# The least a checkout can cost under bench-booking's load (ghz, Kafka), for comparison.
bench-floor: install infra-up $(GHZ)
	$(PY) -m benchmarks.checkout_floor

# The gateway against the booking service straight: wrk (Debian's package) drives the HTTP
# side, ghz the gRPC side.
bench-gateway: install infra-up $(GHZ) $(JAEGER)
	@command -v wrk >/dev/null || apt-get install -y wrk
	$(PY) -m benchmarks.gateway

# The whole card saga over the public HTTP API (checkout, the hosted payment page, the PIN at
# the lock sandbox, the confirmation mail) on the platform as `make up` runs it; N customers
# (default 16) in a closed loop, then at half its rate in an open loop; pgbench after, and the
# saga floor (the same work by the smallest programs on the same libraries).
bench-saga: install infra-up prometheus $(JAEGER)
	$(PY) -m benchmarks.saga

# The chaos soak (chaos/__main__.py): the platform as `make up` runs it, CUSTOMERS customers
# over the public HTTP API and SEED's fault schedule for MINUTES (10 at least), every fault
# healed, quiescence, the audit; the last line is one JSON object, the exit status 1 on any
# violation. CHAOS_FAULTS=off runs the customers alone, for any length.
SEED ?= 7
MINUTES ?= 10
CUSTOMERS ?= 24
chaos: install infra-up prometheus $(JAEGER)
	SEED=$(SEED) MINUTES=$(MINUTES) CUSTOMERS=$(CUSTOMERS) $(PY) -m chaos

# Kubernetes for k8s-check (and deploy-local): etcd, kube-apiserver and kubectl, built once from
# the Go module proxy by the wrapper modules in deploy/k8s/tools (which pin the versions) into
# .local/k8s by version; built again only when those modules change. The version flags make
# the server report its release (kubectl refuses `v0.0.0-master`).
K8S_VERSION := v1.33.13
ETCD_VERSION := v3.5.21
K8S_BIN := .local/k8s/$(K8S_VERSION)
K8S_ETCD := .local/k8s/etcd-$(ETCD_VERSION)/etcd
K8S_LDFLAGS := -s -w -X k8s.io/component-base/version.gitVersion=$(K8S_VERSION) \
  -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=33 \
  -X k8s.io/client-go/pkg/version.gitVersion=$(K8S_VERSION)
# checkov, the policy check, in a virtual environment of its own (its pins are not the services').
CHECKOV := .local/checkov/bin/checkov

k8s-tools: $(K8S_ETCD) $(K8S_BIN)/kube-apiserver $(K8S_BIN)/kubectl $(CHECKOV)

$(K8S_ETCD): deploy/k8s/tools/etcd/go.mod deploy/k8s/tools/etcd/go.sum
	mkdir -p $(@D)
	cd deploy/k8s/tools/etcd && nice -n 10 go build -trimpath -ldflags '-s -w' \
	  -o $(CURDIR)/$@ go.etcd.io/etcd/server/v3

$(K8S_BIN)/%: deploy/k8s/tools/kube/go.mod deploy/k8s/tools/kube/go.sum
	mkdir -p $(@D)
	cd deploy/k8s/tools/kube && nice -n 10 go build -trimpath -ldflags '$(K8S_LDFLAGS)' \
	  -o $(CURDIR)/$@ k8s.io/kubernetes/cmd/$*

$(CHECKOV): deploy/k8s/tools/checkov.lock
	@test -x .local/checkov/bin/python || python3 -m venv .local/checkov
	.local/checkov/bin/pip install -q -r deploy/k8s/tools/checkov.lock
	@touch $(CHECKOV)

# Every overlay of deploy/k8s on a real API server, with the operators' CRDs (LIFTFIT_K8S_CRDS),
# strict validation and Pod Security `restricted`; the policy check; the manifests' own tests.
k8s-check: install k8s-tools
	.venv/bin/pytest -q tests/k8s --ignore=tests/k8s/test_images.py

# The platform's images as pods on a single-node Kubernetes on this machine (the API server,
# controller manager, scheduler and a kubelet on a containerd of its own, host-network pods),
# from the `local` overlay; a card journey, a pod replaced, a second journey
# (scripts/deploy_local.sh, docs/deploy.md). deploy-local-down removes what it started.
K8S_NODE := $(K8S_BIN)/kube-controller-manager $(K8S_BIN)/kube-scheduler $(K8S_BIN)/kubelet

deploy-local: install k8s-tools $(K8S_NODE) $(JAEGER) images-built node-packages
	bash scripts/deploy_local.sh up

# The node's container runtime and its loopback CNI plugin, Debian's packages.
node-packages:
	@command -v containerd >/dev/null && test -x /usr/lib/cni/loopback || \
	  { apt-get update -q && apt-get install -y -q --no-install-recommends \
	    containerd containernetworking-plugins runc; }

deploy-local-down:
	bash scripts/deploy_local.sh down

# One image per process from the Containerfile, with podman (Debian's; settings in
# deploy/images), on a base built from Debian's packages when no registry is reachable; then
# each runs with a read-only root as uid 10001 and answers its health check.
images: install infra-up images-built
	.venv/bin/pytest -q tests/k8s/test_images.py

images-built: install
	@command -v podman >/dev/null && command -v mmdebstrap >/dev/null || \
	  { apt-get update -q && apt-get install -y -q --no-install-recommends \
	    podman buildah mmdebstrap runc uidmap; }
	bash deploy/images/build.sh
