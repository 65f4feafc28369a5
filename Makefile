# otelcol-gym: the two commands a user needs are `make run` and `make test`.
GO      ?= go
BIN     := $(CURDIR)/bin
OCB     := go.opentelemetry.io/collector/cmd/builder@v0.161.0

.PHONY: run build collector gymsim wheel dist test test-go test-realgym fuzz generate vet lint check-darwin

# The release build (design §3): static (CGO_ENABLED=0: no libc to match, so one Linux binary runs
# on every distribution) and without the build machine's paths (-trimpath), so that the same
# commit gives the same bytes wherever it is built. bin/otelcol-gym is built this way too: the
# e2e tests run the binary users get, and `make wheel` packages it as it is, with no second build.
# The version is dist.version of builder-config.yaml; the commit (git's HEAD, "-modified" when
# the tree has changes) is stamped here with -X, since go build's own stamp (vcs.revision) is
# missing in a git worktree and with GOFLAGS=-buildvcs=false; `otelcol-gym --version` prints both.
COMMIT    = $(shell git rev-parse HEAD 2>/dev/null)$(shell git status --porcelain 2>/dev/null | grep -q . && echo -modified)
GOBUILD   = CGO_ENABLED=0 $(GO) build -trimpath -ldflags='-X github.com/otelcol-gym/otelcol-gym.commit=$(COMMIT)'
# Every file of a wheel or archive carries the commit's time.
SOURCE_DATE_EPOCH ?= $(shell git log -1 --format=%ct 2>/dev/null)
HOST      = $(shell $(GO) env GOOS)/$(shell $(GO) env GOARCH)
DIST     := $(CURDIR)/dist
PLATFORMS := linux/amd64 linux/arm64 darwin/amd64 darwin/arm64

# Build bin/otelcol-gym and run it in the foreground on the embedded default
# (config/standalone.yaml); ARGS are passed on, e.g.
# `make run ARGS='--config config/jaeger.yaml'`. The recipe execs
# internal/foreground, so the collector is make's own child and gets make's
# SIGTERM (`go run` would not pass it on). On a terminal, foreground gives the
# collector a process group of its own that owns the terminal, so Ctrl-C
# reaches the collector alone and make exits with its status (0 after a clean
# stop) instead of 130. After a SIGTERM to make itself, make exits 143 however
# cleanly the collector stopped: GNU make re-raises it (docs/development.md).
run: collector $(BIN)/foreground
	exec $(BIN)/foreground $(BIN)/otelcol-gym $(ARGS)

$(BIN)/foreground: $(wildcard internal/foreground/*.go)
	$(GO) build -o $@ ./internal/foreground

collector:
	$(GOBUILD) -o $(BIN)/otelcol-gym ./cmd/otelcol-gym

gymsim:
	$(GO) build -o $(BIN)/gymsim ./cmd/gymsim

build: collector gymsim

# dist/otelcol_gym-<version>-py3-none-<platform>.whl for this machine, from bin/otelcol-gym:
# `pip install dist/otelcol_gym-*.whl` puts otelcol-gym on the venv's PATH. internal/release
# writes it (a zip, with archive/zip: no Python build backend needed) and checks the binary first.
wheel: collector
	SOURCE_DATE_EPOCH=$(SOURCE_DATE_EPOCH) $(GO) run ./internal/release -out $(DIST) $(BIN)/otelcol-gym=$(HOST)

# Every platform's binary (dist/bin/<os>_<arch>/), wheel and otelcol-gym_<version>_<os>_<arch>.tar.gz
# (binary, LICENSE, README.md), and dist/SHA256SUMS; then internal/release's TestDist checks them
# (formats and architectures, hashes, the same bytes when packaged again, and this machine's
# binary byte-identical to bin/otelcol-gym). A cold cross-build takes minutes per platform.
dist: collector
	rm -rf $(DIST)
	for p in $(PLATFORMS); do \
	  GOOS=$${p%/*} GOARCH=$${p#*/} $(GOBUILD) -o $(DIST)/bin/$${p%/*}_$${p#*/}/otelcol-gym ./cmd/otelcol-gym || exit 1; \
	done
	SOURCE_DATE_EPOCH=$(SOURCE_DATE_EPOCH) $(GO) run ./internal/release -out $(DIST) -archives -sums $(foreach p,$(PLATFORMS),$(DIST)/bin/$(subst /,_,$(p))/otelcol-gym=$(p))
	OTELCOL_GYM_DIST=$(DIST) OTELCOL_GYM_BIN=$(BIN)/otelcol-gym $(GO) test -count=1 -v -run '^TestDist$$' ./internal/release

vet:
	$(GO) vet ./...

# Every package, tests included, type-checked and vetted as macOS builds them (the wheels and
# archives of make dist include darwin/amd64 and darwin/arm64): a Linux-only call (syncfs,
# pidfd, a Stat_t field's width) fails here on Linux. arm64 alone: the darwin files are the same
# for amd64. Not in make lint or make test: on a cold cache it compiles every dependency again
# for darwin, about as long as the cold Linux build (docs/development.md#macos).
check-darwin:
	GOOS=darwin GOARCH=arm64 $(GO) vet ./...

# golangci-lint, pinned in internal/tools/go.mod, with .golangci.yml.
lint:
	$(GO) -C $(CURDIR)/internal/tools build -o $(BIN)/golangci-lint github.com/golangci/golangci-lint/v2/cmd/golangci-lint
	$(BIN)/golangci-lint run ./...

# All tests, with the race detector, after golangci-lint (whose govet runs every analyzer
# `go vet` runs, and more: make vet is there to run alone). The binaries are built once and
# shared by every end-to-end test. The fuzz targets' seed corpora run here as tests; the
# fuzzing itself is make fuzz (docs/development.md#cis-time-budget). cmd/otelcol-gym has no tests of its own (the
# binary is tested as a subprocess in e2e/, its sources in
# internal/distribution), and is left out only so that `go test -race` does
# not rebuild the whole distribution with the race detector for nothing. internal/release
# (the host's wheel from bin/otelcol-gym, installed with pip into a fresh venv) runs without it:
# it is one goroutine compressing a large binary, which the race detector slows many times over.
# test-go is make test's go test alone (.ci/run runs it as a phase of its own, with
# make test-realgym beside it: issue #52); GOTESTFLAGS adds flags (.ci/run: -v, for each
# test's time in its summary).
PKGS = $(shell $(GO) list ./... | grep -v -e '/cmd/otelcol-gym$$' -e '/internal/release$$')
GOTESTFLAGS ?=
GOTEST = OTELCOL_GYM_BIN=$(BIN)/otelcol-gym GYMSIM_BIN=$(BIN)/gymsim $(GO) test -race -timeout 20m $(GOTESTFLAGS)
test: build lint test-go
test-go: build
	$(GOTEST) $(PKGS)
	OTELCOL_GYM_BIN=$(BIN)/otelcol-gym $(GO) test -timeout 10m $(GOTESTFLAGS) ./internal/release

# The real NeMo Gym end to end (issue #17; e2e/README.md): the pinned Python venv,
# made once and cached outside the repo by e2e/realgym/setup-venv.sh, and the user-install venv
# (issue #34: made by docs/trace-your-gym-run.sh's own step 1, cached the same way by
# e2e/realgym/setup-userinstall-venv.sh), then the e2e tests that need them (TestRealGym*,
# TestConsole*Python*, TestInstrumentReal*), which skip in `make test`. They run in a network
# namespace of their own with only loopback up: Ray binds the machine's address otherwise, and
# there nothing can reach the network. GOPROXY=off: the build above fetched every module.
# Arize Phoenix (issue #36) runs beside each live run from its own cached venv
# (e2e/phoenix/setup-venv.sh), MLflow (issue #57) from its own (e2e/mlflow/setup-venv.sh).
REALGYM_RUN ?= ^(TestStubModel|TestRealGym.*|TestConsolePython.*|TestInstrumentReal.*)$$
# REALGYM_SKIP names tests to leave out (go test -skip); none by default.
REALGYM_SKIP ?=
test-realgym: build
	venv="$$(e2e/realgym/setup-venv.sh)" && uvenv="$$(e2e/realgym/setup-userinstall-venv.sh)" && phoenix="$$(e2e/phoenix/setup-venv.sh)" && mlflow="$$(e2e/mlflow/setup-venv.sh)" && \
	OTELCOL_GYM_REALGYM_VENV="$$venv" OTELCOL_GYM_USERINSTALL_VENV="$$uvenv" OTELCOL_GYM_PHOENIX_VENV="$$phoenix" OTELCOL_GYM_MLFLOW_VENV="$$mlflow" OTELCOL_GYM_BIN=$(BIN)/otelcol-gym GYMSIM_BIN=$(BIN)/gymsim GOPROXY=off \
	unshare --net sh -c 'ip link set lo up && exec $(GO) test -count=1 -v -timeout 25m -run "$(REALGYM_RUN)" -skip "$(REALGYM_SKIP)" ./e2e/'

# Short runs of every fuzz target, not part of make test or CI (their seed corpora run in
# `go test`; the fuzzing builds every dependency again with coverage instrumentation, minutes
# on a cold cache: docs/development.md#cis-time-budget). Each
# line names the package its target is in (internal/distribution's TestMakeFuzzRunsEveryTarget).
# -fuzzminimizetime keeps a worker from spending the run minimizing one input.
# The budget is a count of executions, not a duration: with a duration, Go 1.26's fuzz
# coordinator can report "context deadline exceeded" as a failure when -fuzztime ends while a
# worker is mid-execution on a loaded machine (golang/go#75804, fixed in Go 1.27), with no
# failing input. 20,000 executions take 1 to 30 s a target here.
FUZZTIME ?= 20000x
fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzEvidenceFromURL$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 50x ./processor/gymprocessor/internal/evidence
	$(GO) test -run '^$$' -fuzz '^FuzzProcessOTLP$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 50x ./processor/gymprocessor
	$(GO) test -run '^$$' -fuzz '^FuzzExportOTLP$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 50x ./exporter/gymspansexporter
	$(GO) test -run '^$$' -fuzz '^FuzzExportRolloutID$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 50x ./exporter/gymspansexporter
	$(GO) test -run '^$$' -fuzz '^FuzzRolloutPath$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 50x ./exporter/gymspansexporter
	$(GO) test -run '^$$' -fuzz '^FuzzAppendJSONString$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 50x ./exporter/gymspansexporter/internal/spanjson
	$(GO) test -run '^$$' -fuzz '^FuzzDecodeBlob$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 50x ./exporter/gymspansexporter/internal/journal
	$(GO) test -run '^$$' -fuzz '^FuzzKeySet$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 50x ./exporter/gymspansexporter/internal/dedup
	$(GO) test -run '^$$' -fuzz '^FuzzServiceNames$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 50x ./internal/servicemap
	$(GO) test -run '^$$' -fuzz '^FuzzRolloutLine$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 50x ./internal/gymview
	$(GO) test -run '^$$' -fuzz '^FuzzRolloutFile$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 50x ./internal/gymview
	$(GO) test -run '^$$' -fuzz '^FuzzRowReader$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 50x ./internal/gymview
	$(GO) test -run '^$$' -fuzz '^FuzzScanLine$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 50x ./internal/modelcall
	$(GO) test -run '^$$' -fuzz '^FuzzMayHoldRoute$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 50x ./internal/modelcall
	$(GO) test -run '^$$' -fuzz '^FuzzPlainPath$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 50x ./internal/modelcall
	$(GO) test -run '^$$' -fuzz '^FuzzOf$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 50x ./internal/timesplit
	$(GO) test -run '^$$' -fuzz '^FuzzValidRolloutID$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 50x ./internal/gymconv
	$(GO) test -run '^$$' -fuzz '^FuzzConsole$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 50x ./internal/replay
	$(GO) test -run '^$$' -fuzz '^FuzzMatch$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 50x ./internal/credentials

# Regenerate every generated file: cmd/otelcol-gym from builder-config.yaml with the pinned
# ocb, and each component's internal/metadata, generated_*_test.go, documentation.md and
# README status block from its metadata.yaml with mdatagen, pinned in internal/tools/go.mod.
# internal/distribution's tests check that both reproduce what is committed.
MDATAGEN  := $(GO) -C $(CURDIR)/internal/tools tool mdatagen
METADATA  := $(wildcard $(CURDIR)/processor/*/metadata.yaml $(CURDIR)/exporter/*/metadata.yaml $(CURDIR)/extension/*/metadata.yaml $(CURDIR)/connector/*/metadata.yaml)
generate:
	$(GO) run $(OCB) --config builder-config.yaml --skip-compilation --skip-get-modules
	for m in $(METADATA); do $(MDATAGEN) $$m || exit 1; done
