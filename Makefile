# pastenode build and test entry points. `make test` is what CI runs.
GO        ?= go
BIN       := bin
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS   := -s -w -X main.version=$(VERSION)
IMAGE     ?= pastenode:local

.PHONY: all build static test test-unit bench bench-http vet fmt docker-image cluster-up cluster-down clean

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

# Every test: unit, in-process cluster, real binaries and browser, then the
# docker-compose suite on its own so that its containers do not compete for
# the CPU with the timing-sensitive cluster tests.
test: vet
	$(GO) test -count=1 -timeout 15m $$($(GO) list ./... | grep -v /test/e2e/compose)
	$(GO) test -count=1 -timeout 15m -v ./test/e2e/compose

test-unit:
	$(GO) test -count=1 -short ./...

# Go benchmarks, then HTTP load figures with wrk against a live node, the
# mirror and nginx (bench/http.sh; loopback only, 10s per run).
bench: build
	$(GO) test -run '^$$' -bench . -benchmem ./...
	./bench/http.sh

bench-http: build
	./bench/http.sh

docker-image: static
	docker build -t $(IMAGE) .

# Bring up the three-node cluster of docker-compose.cluster.yml.
cluster-up: static
	docker-compose -f docker-compose.cluster.yml up -d --build

cluster-down:
	docker-compose -f docker-compose.cluster.yml down

clean:
	rm -rf $(BIN)
