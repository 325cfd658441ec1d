# unprune — see README.md. Every target installs or builds what it needs; the lab's binaries are
# cached outside the work tree (UNPRUNE_LAB_CACHE, default ~/.cache/unprune/lab).

SHELL := /bin/bash
GO ?= go

# Everything this module compiles — vet, the tests, the binaries — builds with the release's flags
# (.goreleaser.yaml: CGO off, -trimpath), so that a cold build cache compiles each package once:
# hack/dist's test builds the release binaries, which took 166 s more after a default build of the
# module and 3 s after one with these flags (2026-12-05). lab/build.sh's recipes set cgo themselves
# (off, as etcd's, Kubernetes' and Argo CD's releases build), whatever this says.
export CGO_ENABLED := 0
export GOFLAGS := $(strip $(filter-out -trimpath,$(GOFLAGS)) -trimpath)

# Lab configuration, passed to `lab up` through the environment.
ARGOCD_VERSION ?= v3.6.1
TRACKING ?=
INSTANCE_LABEL_KEY ?=
INSTALLATION_ID ?=
APP_NAMESPACES ?=
KCM ?= on
REMOTE ?=
SERVER ?=
UI ?=
APPSET_POLICY ?=
APPSET_POLICY_OVERRIDE ?=
NOTIFICATIONS ?=
HYDRATOR ?=
REPO_SERVER_TOOLS ?=
LAB_DIR ?= $(CURDIR)/.lab
export ARGOCD_VERSION TRACKING INSTANCE_LABEL_KEY INSTALLATION_ID APP_NAMESPACES KCM REMOTE SERVER UI UI_REMOTE_CLUSTERS APPSET_POLICY APPSET_POLICY_OVERRIDE NOTIFICATIONS HYDRATOR REPO_SERVER_TOOLS LAB_DIR

# Components `make test` needs: the control plane and CI's Argo CD lines, each with the helm and
# kustomize its repo-server runs (lab/modules/argocd-VERSION/repo-server-tools).
LAB_ARGOCD_VERSIONS := v3.6.1 v3.5.1 v2.14.11
repo_server_tools = $(strip $(shell sed 's/\#.*//' lab/modules/argocd-$(1)/repo-server-tools 2>/dev/null))
# And the releases whose own UI the browser tests drive, built from their sources with that UI
# embedded and the argo-ui commit they pin (lab/build.sh: argocd-ui-VERSION; lab.ExactUIVersions).
# v3.6.1's, built with a stand-in argo-ui commit, is built when `make lab-up SERVER=1 UI=1` asks.
LAB_OWN_UI_VERSIONS := v3.5.1 v2.14.11
LAB_COMPONENTS = etcd kubernetes $(foreach v,$(LAB_ARGOCD_VERSIONS),argocd-$(v) $(call repo_server_tools,$(v))) \
	$(foreach v,$(LAB_OWN_UI_VERSIONS),argocd-ui-$(v))
# Every release line the lab builds, which `make test-matrix` (only) builds and runs. v3.3–v3.5 take
# their in-tree gitops-engine from ../shared/third_party beside the repository root (lab/build.sh).
LAB_ARGOCD_MATRIX := v3.6.1 v3.5.1 v3.4.7 v3.3.14 v3.2.11 v3.1.16 v3.0.23 v2.14.11
MATRIX_COMPONENTS = etcd kubernetes $(foreach v,$(LAB_ARGOCD_MATRIX),argocd-$(v) $(call repo_server_tools,$(v)))
# What `make demo` needs: the control plane and the one Argo CD version it runs. Its app is plain
# manifests, so its repo-server runs without helm and kustomize (REPO_SERVER_TOOLS=0), and they are not built.
DEMO_COMPONENTS = etcd kubernetes argocd-$(ARGOCD_VERSION)

.PHONY: help deps deps-lab build dist docs extension lab-build lab-up lab-down lab-status test vet-unit test-unit test-lab test-matrix test-mutants demo bench fuzz vet

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-12s %s\n", $$1, $$2}'

deps: ## install the OS packages the lab and the tests need (redis-server, git, chromium, prometheus for promtool)
	@bash hack/deps.sh

# What the lab alone runs: make demo installs no browser and no Prometheus.
deps-lab:
	@bash hack/deps.sh lab

# `make build` stamps the binaries as releases do (.goreleaser.yaml): the version from git describe,
# the commit and its date. Explicit ldflags, because a machine may set GOFLAGS=-buildvcs=false.
GIT_VERSION := $(shell git describe --tags --always --dirty 2>/dev/null)
GIT_COMMIT := $(shell git rev-parse HEAD 2>/dev/null)
GIT_DATE := $(shell git log -1 --format=%cI 2>/dev/null)
VERSION_PKG := github.com/unprune/unprune/internal/version
BUILD_LDFLAGS := -X $(VERSION_PKG).version=$(GIT_VERSION) -X $(VERSION_PKG).commit=$(GIT_COMMIT) -X $(VERSION_PKG).buildDate=$(GIT_DATE)

BIN_DIR ?= bin

# GOGC=400: the compiler collects garbage less often, and a cold build takes about a tenth less CPU
# (lab/build.sh), the binaries the same to the byte.
build: ## build bin/unprune, bin/kubectl-unprune (and its kubectl_complete-unprune), bin/argocd-unprune
	@mkdir -p $(BIN_DIR)
	GOGC=400 $(GO) build -ldflags '$(BUILD_LDFLAGS)' -o $(BIN_DIR)/ ./cmd/unprune ./cmd/kubectl-unprune ./cmd/argocd-unprune
	install -m 0755 plugins/kubectl_complete-unprune $(BIN_DIR)/kubectl_complete-unprune

# The release archives of .goreleaser.yaml built with the go command alone: every platform, the
# same ldflags, sha256 checksums and the krew manifest; and the UI extension's bundle, built with
# node as the release builds it, copied beside them and listed in checksums.txt. VERSION defaults to
# `git describe`.
VERSION ?=
dist: ## cross-compile the release archives into dist/ with checksums, the krew manifest and the UI extension's bundle (VERSION=v1.2.3)
	rm -rf dist
	$(MAKE) extension VERSION=$$($(GO) run ./hack/dist -print-version $(if $(VERSION),-version $(VERSION)))
	$(GO) run ./hack/dist -out dist -extra-files $(if $(VERSION),-version $(VERSION))

extension: ## build the Argo CD UI extension into extension/dist (bundle, installer tarball, host page; VERSION=v1.2.3 stamps it)
	cd extension && npm ci --no-audit --no-fund && $(if $(VERSION),UNPRUNE_VERSION=$(VERSION) )node build.mjs

docs: ## regenerate the command reference, docs/commands/*.md, from the command tree
	$(GO) run ./hack/gendocs -dir docs/commands

lab-build: deps-lab ## build the lab's binaries (or find them in the cache)
	@bash lab/build.sh $(LAB_COMPONENTS) >/dev/null

lab-up: deps-lab ## start the lab (ARGOCD_VERSION, TRACKING, REMOTE=1, SERVER=1, UI=1, APPSET_POLICY=sync, NOTIFICATIONS=1, HYDRATOR=1, DELETION_BUDGET=N, REPO_SERVER_TOOLS=0, …); last line: KUBECONFIG=<path>
	@$(GO) run ./lab/cmd/lab up

lab-down: ## stop exactly what lab-up started
	@$(GO) run ./lab/cmd/lab down

lab-status: ## show the lab's processes
	@$(GO) run ./lab/cmd/lab status

vet: ## go vet, with and without the lab build tag
	$(GO) vet ./...
	$(GO) vet -tags lab ./...
	cd test/krew && $(GO) vet ./...
	cd test/prometheus && $(GO) vet ./...
	cd test/podsecurity && $(GO) vet ./...

# test/krew, test/prometheus and test/podsecurity are modules of their own (krew's and Prometheus's
# requirements would replace the tool's client-go; pod-security-admission's stay out of its go.mod).
# -timeout 30m: on a cold build cache hack/dist's test compiles the release binaries with -trimpath,
# which took over go test's default 10 minutes on a busy 2-core machine.
test-unit: deps ## pure and command tests (no lab), the UI extension's (node, headless Chromium), the krew manifest checked by krew, the alerts by Prometheus, the pods by Pod Security
	$(GO) test -count=1 -timeout 30m ./...
	cd extension && npm ci --no-audit --no-fund && npm test
	cd test/krew && $(GO) test -count=1 ./...
	cd test/prometheus && $(GO) test -count=1 ./...
	cd test/podsecurity && $(GO) test -count=1 ./...

# TestWatch keeps what the watch served in the lab, TestDeletionBudget what its deletion budget
# served; test/prometheus then evaluates the alerts and the dashboard on those very scrapes (and
# checks the committed fixtures it uses without the lab still have their shape).
WATCH_SCRAPE := $(LAB_DIR)/watch-lab.prom
BUDGET_SCRAPE := $(LAB_DIR)/budget-lab.prom

# -parallel 6: the lab tests mostly wait on Argo CD's controllers. With go test's default, one test
# per core, the e2e package kept two running: 1,464 s, the CPU 60 % idle. With every test that
# shares nothing parallel and six at a time: 757 s, the CPU 29 % idle (2026-12-06,
# docs/development.md).
LAB_TEST_PARALLEL ?= 6

test-lab: deps lab-build ## tests against the real API server and real Argo CD, then the alerts on the lab's metrics
	@mkdir -p $(LAB_DIR) && rm -f $(WATCH_SCRAPE) $(BUDGET_SCRAPE)
	UNPRUNE_WATCH_SCRAPE=$(WATCH_SCRAPE) UNPRUNE_BUDGET_SCRAPE=$(BUDGET_SCRAPE) $(GO) test -count=1 -tags lab -timeout 45m -parallel $(LAB_TEST_PARALLEL) \
		./lab/... ./test/apiserver/ ./test/e2e/ ./test/readme/
	cd test/prometheus && UNPRUNE_WATCH_SCRAPE=$(WATCH_SCRAPE) UNPRUNE_BUDGET_SCRAPE=$(BUDGET_SCRAPE) $(GO) test -count=1 ./...

# The lab's builds are most of a cold run: they run beside vet and the unit tests, which took a cold
# run on two cores from 87 to 72 minutes, the lab tests six at a time to 50, and builds with cgo off
# and GOGC=400 to 42 (2026-12-06; docs/development.md). deps first, alone: apt takes one lock.
# Their lines interleave in the log; lab/build.sh's say "lab/build:".
test: deps ## the whole suite, as CI runs it
	@$(MAKE) --no-print-directory -j2 lab-build vet-unit
	@$(MAKE) --no-print-directory test-lab

vet-unit: vet test-unit

# The lab tests whose outcome depends on Argo CD's release, on every line the lab builds (hack/matrix
# names them and the capability each proves), then the matrix: line × capability, pass / fail / n/a.
# Not part of `make test`: CI keeps its three lines. The go test -json stream is kept in LAB_DIR.
MATRIX_JSON := $(LAB_DIR)/matrix.json
test-matrix: deps ## every release line × the capabilities that differ by release, as a matrix (builds v3.1, v3.2 too)
	@bash lab/build.sh $(MATRIX_COMPONENTS) >/dev/null
	@mkdir -p $(LAB_DIR)
	set -o pipefail; UNPRUNE_LAB_MATRIX="$(LAB_ARGOCD_MATRIX)" $(GO) test -count=1 -p 1 -tags lab -timeout 90m -json \
		-run "$$($(GO) run ./hack/matrix -run-pattern)" ./lab/labtest/ ./test/e2e/ | tee $(MATRIX_JSON) | \
		$(GO) run ./hack/matrix -lines "$(LAB_ARGOCD_MATRIX)"

# Each rule of internal/argocd/rules.go moved to the wrong side of a line's boundary must fail that
# line's matrix row (hack/mutants): one lab run per release, with a go build overlay of rules.go.
test-mutants: deps ## every release rule on the wrong line fails its matrix row (builds the lines it needs)
	@bash lab/build.sh $(MATRIX_COMPONENTS) >/dev/null
	$(GO) run ./hack/mutants

# On a cold machine the lab's modules download while unprune's binaries build (the download is
# network, the build CPU), and the lab's builds then start at once.
demo: deps-lab ## reproduce the incident in the lab and resolve it with unprune (builds only the lab parts it runs)
	@bash lab/build.sh --download $(DEMO_COMPONENTS) & downloads=$$!; \
	$(MAKE) --no-print-directory build && bash lab/build.sh $(DEMO_COMPONENTS) >/dev/null; status=$$?; \
	wait $$downloads; exit $$status
	@bash hack/demo.sh

# Each benchmark runs its cases 3 or 5 times itself, alternating which contestant goes first, and
# prints min / median / max of the ratios, so one invocation of each (-benchtime 1x) is the whole
# measurement. Processes are timed through test/bench/rusage (their own peak RSS, CPU times).
# BENCH selects benchmarks; the scan at scale seeds 250,000 ConfigMaps for its 5,000-app case.
BENCH ?= .
bench: lab-build ## benchmarks against the lab (ratios against a baseline in the same run; BENCH=regexp)
	$(GO) test -tags lab -run '^$$' -bench '$(BENCH)' -benchtime 1x -timeout 90m ./test/bench/

fuzz: ## fuzz the tracking-id parser for a while
	$(GO) test -run '^$$' -fuzz FuzzParseTrackingID -fuzztime 60s ./internal/argocd/
