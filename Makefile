# Basin — see README.md. Every target works on a fresh Debian machine with Go.
SHELL     := /bin/bash
GO        ?= go
BIN       := bin/csi-driver
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS   := -X main.version=$(VERSION)
TOOLS_DIR ?= $(or $(BASIN_TOOLS_DIR),$(HOME)/.cache/basin-tools)
export BASIN_TOOLS_DIR := $(TOOLS_DIR)
export PATH := $(TOOLS_DIR)/bin:$(PATH)

.PHONY: build demo test tools lint vet sanity e2e chaos soak bench bench-quick image generate k8s-e2e k8s-up k8s-down clean

build:
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/csi-driver

## demo: mount a generated local-directory bucket with a cache, read it twice (root, /dev/fuse, fuse3).
demo: build
	./hack/demo.sh $(BIN)

## test: install the pinned tools and servers if missing, vet, lint, then every test with the race detector.
test: tools vet lint
	$(GO) test -race -count=1 -timeout 30m ./...

## tools: the apt packages and pinned servers and tools the tests need (a no-op once installed).
tools:
	./hack/install-tools.sh

vet:
	$(GO) vet ./...

lint: tools
	$(TOOLS_DIR)/bin/golangci-lint run ./...

## sanity: the csi-sanity suite, in-process and against the real binary (needs MinIO, csi-sanity).
sanity: build tools
	$(GO) test -race -count=1 -run Sanity ./pkg/driver/...
	./tests/sanity/run.sh $(BIN)

e2e: tools
	$(GO) test -race -count=1 -timeout 30m ./tests/e2e/...

## chaos: SIGKILL the FUSE process of a volume under 8 readers 20 times, and under 3 checkpoint writers
## 20 times, then restart the node plugin (and once its descriptor holder) under readers (real FUSE,
## MinIO); once idle, once with every core saturated (BASIN_CHAOS_LOAD=nproc); the last line is the
## idle FUSE-kill summary.
chaos: tools
	GO=$(GO) ./hack/chaos.sh

## soak: readers, writers and listers on three volumes (real node plugin, MinIO, FUSE) for DURATION
## (default 5m) under overlapping seeded faults (SOAK_SEED, printed; replays a run); the last line is
## the verdict with its figures and the directory of its report (and, on failure, its evidence).
soak: tools
	GO=$(GO) DURATION=$(DURATION) SOAK_SEED=$(SOAK_SEED) ./hack/soak.sh

bench: build
	./bench/run.sh

bench-quick: build
	./bench/run.sh --quick

## generate: deep-copy functions and CustomResourceDefinitions from pkg/api (controller-gen); commit the result.
generate:
	./hack/generate.sh

## image: Basin's image as an image tarball, built without a container engine (static binary + CA bundle).
IMAGE      ?= ghcr.io/basin-csi/basin
IMAGE_TAR  ?= _output/basin-image.tar
image:
	@mkdir -p _output/image
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "-s -w $(LDFLAGS)" -o _output/image/csi-driver ./cmd/csi-driver
	$(GO) run ./hack/image --tag $(IMAGE):$(VERSION) --out $(IMAGE_TAR) \
		--file _output/image/csi-driver:/usr/local/bin/csi-driver:0755 \
		--file /etc/ssl/certs/ca-certificates.crt:/etc/ssl/certs/ca-certificates.crt:0644 \
		--label org.opencontainers.image.version=$(VERSION) \
		--env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
		--entrypoint /usr/local/bin/csi-driver

## k8s-up: a Kubernetes cluster of NODES nodes (default 3: one control plane and kubelets node1..nodeN,
## each with its own containerd, network and mount namespace, and kube-proxy) with Basin installed by
## `helm install` (deploy/helm/basin), left running; `. /var/lib/basin-k8s/env`, then `kubectl get nodes`.
## K8S_KUBELET_DIR moves kubelet's root directory (default /var/lib/kubelet; the chart's kubeletDir follows).
K8S_IMAGE_TAG ?= e2e-$(VERSION)
NODES ?= 3
K8S_KUBELET_DIR ?=
k8s-up:
	./hack/k8s/apt.sh
	$(MAKE) image VERSION=$(K8S_IMAGE_TAG)
	NODES=$(NODES) BASIN_K8S_KUBELET_DIR=$(K8S_KUBELET_DIR) BASIN_IMAGE=$(IMAGE):$(K8S_IMAGE_TAG) BASIN_IMAGE_TAR=$(CURDIR)/$(IMAGE_TAR) ./hack/k8s/cluster.sh up

k8s-down:
	./hack/k8s/cluster.sh down

## k8s-e2e: k8s-up with kubelet's root moved to K8S_E2E_KUBELET_DIR (so every scenario runs on the
## chart's non-default kubeletDir), every cluster scenario with real pods (the test binary runs in the
## control plane's network namespace), then k8s-down (also on failure or interrupt; the cluster's logs
## stay in _output/k8s-logs).
K8S_E2E_KUBELET_DIR ?= /var/lib/basin-e2e-kubelet
K8S_TEST := _output/k8s-e2e.test
k8s-e2e:
	@rm -f _output/k8s-e2e-summary.txt; mkdir -p _output; \
	trap '$(CURDIR)/hack/k8s/cluster.sh down' INT TERM; \
	$(GO) test -c -tags k8se2e -o $(K8S_TEST) ./tests/k8s/ & build=$$!; \
	status=1; \
	$(MAKE) k8s-up K8S_KUBELET_DIR=$(K8S_E2E_KUBELET_DIR); up=$$?; wait $$build; built=$$?; \
	if [ $$up -eq 0 ] && [ $$built -eq 0 ]; then \
		(cd tests/k8s && BASIN_K8S_SUMMARY=$(CURDIR)/_output/k8s-e2e-summary.txt \
			exec ../../hack/k8s/cluster.sh exec $(CURDIR)/$(K8S_TEST) -test.count=1 -test.timeout=40m -test.v) 2>&1 | grep --line-buffered -v '^[IWE][0-9]'; \
		status=$${PIPESTATUS[0]}; \
	fi; \
	BASIN_K8S_KEEP_LOGS=$(CURDIR)/_output/k8s-logs ./hack/k8s/cluster.sh down; \
	cat _output/k8s-e2e-summary.txt 2>/dev/null || echo "k8s-e2e: nodes=$(NODES) scenarios=? passed=? failed=? (no summary: the cluster or the tests did not start)"; \
	[ -f _output/k8s-e2e-summary.txt ] && [ $$status -eq 0 ]

clean:
	rm -rf bin _output
