# pastenode build and test entry points. `make test` is what CI runs.
GO        ?= go
BIN       := bin
# The build's identity (internal/buildinfo): the release as the newest tag
# names it (empty without tags: the binaries then say "devel"), the commit,
# and whether the tree has uncommitted changes. The go command stamps the
# last two itself, except in a git worktree or with -buildvcs=false.
VERSION   ?= $(shell git describe --tags 2>/dev/null)
REVISION  ?= $(shell git rev-parse HEAD 2>/dev/null)
MODIFIED  ?= $(shell test -n "$$(git status --porcelain 2>/dev/null)" && echo true)
BUILDINFO := github.com/pastenode/pastenode/internal/buildinfo
LDFLAGS   := -s -w -X $(BUILDINFO).release=$(VERSION) -X $(BUILDINFO).revision=$(REVISION) -X $(BUILDINFO).modified=$(MODIFIED)
IMAGE     ?= pastenode:local
PROMTOOL  ?= promtool
SYSTEMD_ANALYZE ?= systemd-analyze

.PHONY: all build static test test-unit check-deploy check-prometheus check-systemd check-kubernetes audit jepsen-short jepsen bench bench-go vet fmt docker-image cluster-up cluster-down clean

all: build

build:
	$(GO) build -ldflags '$(LDFLAGS)' -o $(BIN)/ ./cmd/pastenode ./cmd/pastectl

# Static binaries for the FROM scratch image.
static:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN)/static/ ./cmd/pastenode ./cmd/pastectl

vet:
	$(GO) vet ./...

fmt:
	gofmt -l -w .

# Every test: the deploy checks, unit, in-process cluster, real binaries and
# browser, then the docker-compose suite and the 35 s consistency checker,
# each on its own so that they do not compete for the CPU with the
# timing-sensitive cluster tests.
test: vet check-deploy
	$(GO) test -count=1 -timeout 15m $$($(GO) list ./... | grep -v /test/e2e/compose)
	$(GO) test -count=1 -timeout 15m -v ./test/e2e/compose
	$(MAKE) jepsen-short

# What deploy/ ships is valid: the Prometheus rules, the systemd unit and
# the Kubernetes manifests.
check-deploy: check-prometheus check-systemd check-kubernetes

# The Prometheus config and alert rules are valid and the main alerts fire
# when they should (promtool comes with Debian's prometheus package). The
# lint of a live node's /metrics and the dashboard's metric names are
# checked by TestMetricsLive in cmd/pastenode, part of the Go tests.
# Without promtool this fails in CI (CI=true) and is skipped elsewhere.
check-prometheus:
	@if ! command -v $(PROMTOOL) >/dev/null; then \
		if [ "$$CI" = true ]; then echo "check-deploy: promtool not found (apt-get install prometheus)" >&2; exit 1; fi; \
		echo "check-deploy: promtool not found, skipping (apt-get install prometheus)"; \
	else \
		set -e; \
		$(PROMTOOL) check config deploy/prometheus/prometheus.yml; \
		$(PROMTOOL) check rules deploy/prometheus/alerts.yml; \
		$(PROMTOOL) test rules deploy/prometheus/alerts_test.yml; \
	fi

# Every object of the Kubernetes manifests decodes strictly into the
# Kubernetes API types, and the objects fit together: ports, probes,
# selectors, the join list, the Secret (deploy/kubernetes/check). The
# check is a Go module of its own, so that the Kubernetes API packages
# stay out of pastenode's; it fetches them from the module proxy once.
check-kubernetes:
	cd deploy/kubernetes/check && $(GO) test -count=1 ./...

# The systemd unit is one systemd accepts without a warning. verify insists
# that ExecStart names a program that exists here, so it checks a copy that
# runs /bin/true; every other line is as shipped. systemd-analyze comes with
# Debian's systemd package; without it this fails in CI (CI=true) and is
# skipped elsewhere.
check-systemd:
	@if ! command -v $(SYSTEMD_ANALYZE) >/dev/null; then \
		if [ "$$CI" = true ]; then echo "check-deploy: systemd-analyze not found (apt-get install systemd)" >&2; exit 1; fi; \
		echo "check-deploy: systemd-analyze not found, skipping (apt-get install systemd)"; \
	else \
		set -e; dir=$$(mktemp -d); trap 'rm -rf "$$dir"' EXIT; \
		sed 's|^ExecStart=/usr/local/bin/pastenode|ExecStart=/bin/true|' deploy/systemd/pastenode.service > "$$dir/pastenode.service"; \
		grep -q '^ExecStart=/bin/true$$' "$$dir/pastenode.service"; \
		out=$$($(SYSTEMD_ANALYZE) verify "$$dir/pastenode.service" 2>&1 | grep pastenode || true); \
		if [ -n "$$out" ]; then echo "$$out" >&2; echo "check-deploy: deploy/systemd/pastenode.service is not clean" >&2; exit 1; fi; \
		echo "check-deploy: deploy/systemd/pastenode.service verified"; \
	fi

# Replay the security audit's hostile requests against the real binary
# (issue 10): forged internal calls, a poison entry, a keyless node, admin
# through a localhost proxy, a highlighting bomb, a write flood, a truncated
# raft.db (test/e2e/audit and the TestAudit* tests of test/e2e). `make test`
# runs the same tests with everything else.
audit:
	$(GO) test -count=1 -v ./test/e2e/audit
	$(GO) test -count=1 -v -run '^TestAudit' ./test/e2e/

test-unit:
	$(GO) test -count=1 -short ./...

# The Jepsen-style checker (test/e2e/jepsen/README.md): three real nodes in
# network namespaces, eight clients, kills, pauses, clean stops and
# partitions, every history checked with porcupine. Needs root: without it
# the run is skipped with the reason, and fails under CI=true.
JEPSEN_RUN = PASTE_JEPSEN=1 $(GO) test -count=1 -v -run '^TestJepsen$$' -artifacts -outputdir $(CURDIR)/$(BIN)/jepsen

jepsen-short:
	@mkdir -p $(BIN)/jepsen
	PASTE_JEPSEN_DURATION=35s $(JEPSEN_RUN) -timeout 10m ./test/e2e/jepsen

# A few minutes of traffic with a fault every 1-2 s.
jepsen:
	@mkdir -p $(BIN)/jepsen
	PASTE_JEPSEN_DURATION=$${PASTE_JEPSEN_DURATION:-180s} PASTE_JEPSEN_FAULT_GAP=$${PASTE_JEPSEN_FAULT_GAP:-1s} $(JEPSEN_RUN) -timeout 30m ./test/e2e/jepsen

# The comparison of BENCHMARKS.md: pastenode against a bare net/http
# handler, nginx, etcd, kawipiko-server and its last in-memory build, one
# table in bench/results/latest.txt (needs wrk, nginx-light and
# etcd-server, the git history to build the in-memory version from, and
# docker for the capacity row, which runs the image of docker-image;
# about 7 minutes). BENCH_FLAGS passes flags, e.g. BENCH_FLAGS='-rounds 1
# -duration 1s -pastes 5000' for a quick look.
BENCH_FLAGS ?=
bench:
	$(GO) build -o $(BIN)/ ./cmd/pastenode ./cmd/pastectl ./bench/bare ./bench/compare
	@if command -v docker >/dev/null; then $(MAKE) docker-image; else echo "bench: no docker: the capacity row is not measured"; fi
	$(BIN)/compare -bin $(BIN) -image $(IMAGE) $(BENCH_FLAGS)

# The Go micro-benchmarks of the packages.
bench-go:
	$(GO) test -run '^$$' -bench . -benchmem ./...

docker-image: static
	docker build --build-arg VERSION="$(VERSION)" --build-arg REVISION="$(REVISION)" -t $(IMAGE) .

# Bring up the three-node cluster of docker-compose.cluster.yml, with the
# cluster key and admin token of .env.
cluster-up: static .env
	docker-compose -f docker-compose.cluster.yml up -d --build

# .env (git-ignored) holds the compose cluster's secrets: fresh random
# values, written once and kept, so that the nodes keep their key across
# restarts. Delete it (and `make cluster-down` with -v) to start afresh.
.env:
	@umask 077; { \
		printf 'PASTE_CLUSTER_KEY=%s\n' "$$(head -c 32 /dev/urandom | base64)"; \
		printf 'PASTE_ADMIN_TOKEN=%s\n' "$$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')"; \
	} > $@
	@echo "wrote $@: a fresh cluster key and admin token for docker-compose"

cluster-down:
	docker-compose -f docker-compose.cluster.yml down

clean:
	rm -rf $(BIN)
