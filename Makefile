# Basin — see README.md. Every target works on a fresh Debian machine with Go.
SHELL     := /bin/bash
GO        ?= go
BIN       := bin/csi-driver
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS   := -X main.version=$(VERSION)
TOOLS_DIR ?= $(HOME)/.cache/basin-tools
export PATH := $(TOOLS_DIR)/bin:$(PATH)

.PHONY: build demo test lint vet sanity e2e chaos bench bench-quick image clean

build:
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/csi-driver

## demo: mount a generated local-directory bucket with a cache, read it twice (root, /dev/fuse, fuse3).
demo: build
	./hack/demo.sh $(BIN)

## test: vet, lint when golangci-lint is installed, then every test with the race detector.
test: vet lint
	$(GO) test -race -count=1 -timeout 30m ./...

vet:
	$(GO) vet ./...

lint:
	@if command -v golangci-lint >/dev/null 2>&1; then golangci-lint run ./...; \
	else echo "golangci-lint not installed; skipping lint (go vet ran)"; fi

## sanity: the csi-sanity suite, in-process and against the real binary (needs MinIO, csi-sanity).
sanity: build
	$(GO) test -race -count=1 -run Sanity ./pkg/driver/...
	./tests/sanity/run.sh $(BIN)

e2e:
	$(GO) test -race -count=1 -timeout 30m ./tests/e2e/...

## chaos: SIGKILL the FUSE process of a volume under 8 readers 20 times, then restart the node plugin
## (and once its descriptor holder) under readers (real FUSE, MinIO); the last line is the FUSE-kill summary.
chaos:
	@rm -f _output/chaos-summary.txt _output/chaos-node-summary.txt
	BASIN_CHAOS=20 BASIN_CHAOS_SUMMARY=$(CURDIR)/_output/chaos-summary.txt \
		BASIN_CHAOS_NODE_SUMMARY=$(CURDIR)/_output/chaos-node-summary.txt \
		$(GO) test -count=1 -timeout 15m -run 'TestChaos$$|TestChaosNodePlugin|TestTakeover|TestHung' -v ./tests/chaos/ 2>&1 | grep -v '^[IWE][0-9]' ; \
		status=$${PIPESTATUS[0]}; \
		cat _output/chaos-node-summary.txt 2>/dev/null || echo "node plugin restarts: errors=? (no summary: the test did not finish)"; \
		cat _output/chaos-summary.txt 2>/dev/null || echo "errors=? (no summary: the chaos test did not finish)"; exit $$status

bench: build
	./bench/run.sh

bench-quick: build
	./bench/run.sh --quick

image:
	@echo "image: no container engine on this machine; see deploy/kubernetes/README.md" && exit 1

clean:
	rm -rf bin _output
