# moe: Go plugins for Envoy's golang filter, one libgolang.so, tested through moe-host.
#   make run    build, then serve the demo on 127.0.0.1:10000
#   make example NAME=<plugin>   serve that plugin's example (envoy/examples/<plugin>.yaml)
#   make dynamic                 serve envoy/dynamic/ (listeners, routes, clusters from files)
#   make test   every test: unit (-race), moe-host conformance, end-to-end, sanitizer run
#   make bench  end-to-end benchmark through moe-host (out/bench/report.md), then the Go benchmarks
#               (BENCH_QUICK=1: a quick pass; BENCH_ARGS: more cmd/moebench flags)
#   make soak   the soak test for SOAK_DURATION (default 10m): out/soak/soak.csv and soak.png
#   make fuzz   every fuzz target (Go and libFuzzer) for FUZZTIME each (default 30s; FUZZ=regex
#               picks targets), CPU time and findings per target (build/fuzz.sh)
SHELL := /bin/bash
GO ?= go
OUT := out
export CGO_ENABLED := 1
include build/cshared.mk

# What the Go binaries are built from (tests are not: editing one rebuilds nothing). Test
# harnesses run `make -s out/<binary>` before using one (shared/testing/hosttest), so these
# rules decide when a test rebuilds.
GO_SOURCES := $(shell find . -name '*.go' -not -name '*_test.go' -not -path './out/*') go.mod go.sum
# A deleted or renamed source file changes no timestamp make can see, so the list itself is kept
# in out/go-sources.list, rewritten only when it changed (its recipe runs every time; make then
# looks at the file's own time). go build decides the rest from its cache.
GO_DEPS := $(GO_SOURCES) $(OUT)/go-sources.list

.PHONY: all deps build run example dynamic test test-asan test-istiod test-fuzz fuzz bench bench-e2e bench-go bench-htnn soak image clean FORCE

all: build

deps:
	@bash build/install-deps.sh

build: deps $(OUT)/libgolang.so $(OUT)/moe-host $(OUT)/moectl $(OUT)/echo-upstream

$(OUT)/go-sources.list: FORCE
	@mkdir -p $(@D); t=$@.$$$$; printf '%s\n' $(GO_SOURCES) >$$t; if cmp -s $$t $@; then rm -f $$t; else mv -f $$t $@; fi

FORCE:

$(OUT)/libgolang.so: $(GO_DEPS) build/cshared.mk
	$(GO) build -buildmode=c-shared -ldflags='$(CSHARED_LDFLAGS)' -o $@ ./cgo/libgolang

# moe-host's own Makefile decides what to rebuild: it tracks headers (-MMD) and its list of
# sources, which a timestamp here cannot (a deleted .cc).
$(OUT)/moe-host: FORCE
	$(MAKE) -C cgo/host -j2

$(OUT)/moe-host-asan: FORCE
	$(MAKE) -C cgo/host -j2 asan

# The network side alone behind a stub connection manager (cgo/host/nettest drives it).
$(OUT)/moe-host-netonly: FORCE
	$(MAKE) -C cgo/host -j2 netonly

$(OUT)/moectl: $(GO_DEPS)
	$(GO) build -o $@ ./cmd/moectl

$(OUT)/echo-upstream: $(GO_DEPS)
	$(GO) build -o $@ ./cmd/echo-upstream

$(OUT)/moebench: $(GO_DEPS)
	$(GO) build -o $@ ./cmd/moebench

# Test-only libraries: the conformance plugins for moe-host, and the framework's e2e plugins next
# to every shipped plugin (the chaos suite runs the demo chain with plugins that misbehave).
$(OUT)/libconformance.so: $(GO_DEPS) build/cshared.mk
	$(GO) build -buildmode=c-shared -ldflags='$(CSHARED_LDFLAGS)' -o $@ ./cgo/host/conformance/so

$(OUT)/libmoe-e2e.so: $(GO_DEPS) build/cshared.mk
	$(GO) build -buildmode=c-shared -ldflags='$(CSHARED_LDFLAGS)' -o $@ ./shared/e2e/so

TEST_BINS := $(OUT)/libconformance.so $(OUT)/libmoe-e2e.so $(OUT)/moe-host-netonly $(OUT)/moe-host-asan

# On a terminal the server runs in a process group of its own that gets the terminal (perl's
# POSIX, from Debian's essential perl-base), so Ctrl-C reaches it and not make: it stops
# everything and make exits 0.
SERVE = perl -MPOSIX -e 'if (-t STDIN) { $$SIG{TTOU} = "IGNORE"; setpgid(0, 0); tcsetpgrp(0, getpgrp()); } exec @ARGV or die "exec: $$!"' bash envoy/serve.sh

run: build
	@$(SERVE) envoy/envoy.yaml

# make example NAME=key-auth: serve envoy/examples/<NAME>.yaml with what it needs (Redis, ...).
example: build
	@test -n "$(NAME)" || { echo "usage: make example NAME=<plugin> (one of: $(basename $(notdir $(wildcard envoy/examples/*.yaml))))" >&2; exit 2; }
	@$(SERVE) envoy/examples/$(NAME).yaml

# make dynamic: listeners, clusters and routes from files (envoy/dynamic/); the files are copied
# to out/dynamic/ so that moving a new one into place does not touch the repository.
dynamic: build
	@mkdir -p $(OUT)/dynamic
	@cp envoy/dynamic/lds.yaml envoy/dynamic/cds.yaml envoy/dynamic/rds.yaml $(OUT)/dynamic/
	@$(SERVE) envoy/dynamic/envoy.yaml

# MOE_REQUIRE_HOST=1 turns "binary missing" into a failure instead of a skip.
# MOE_HOST_LOOPBACK_ONLY=1: every moe-host a test starts refuses non-loopback upstreams (the
# harnesses set it themselves; exported here too for any that does not).
test: build $(TEST_BINS)
	$(MAKE) -C cgo/host unit
	MOE_REQUIRE_HOST=1 MOE_HOST_LOOPBACK_ONLY=1 $(GO) test -race -count=1 -timeout 20m ./...
	$(MAKE) test-istiod
	$(MAKE) test-asan
	$(MAKE) test-fuzz

# istiod itself applies the Istio files (istio/istiodcheck, a module of its own so that
# istio.io/istio's dependencies do not move the main module's); its output goes through
# out/moectl validate. The first run downloads istio.io/istio's modules.
test-istiod: $(OUT)/moectl
	cd istio/istiodcheck && MOECTL=$(abspath $(OUT)/moectl) MOE_REQUIRE_HOST=1 $(GO) test -count=1 -timeout 10m ./...

# The moe-host conformance suite again, against the ASan/LSan/UBSan build (moe-host-asan), then the
# chaos suite (half its requests; a sanitizer report in the host's output fails the test).
test-asan: $(OUT)/moe-host-asan $(OUT)/moectl $(OUT)/libconformance.so $(OUT)/libmoe-e2e.so
	MOE_REQUIRE_HOST=1 MOE_HOST_LOOPBACK_ONLY=1 MOE_HOST_BIN=$(abspath $(OUT)/moe-host-asan) \
	  $(GO) test -count=1 -timeout 10m ./cgo/host/conformance/
	MOE_REQUIRE_HOST=1 MOE_HOST_LOOPBACK_ONLY=1 MOE_HOST_BIN=$(abspath $(OUT)/moe-host-asan) MOE_CHAOS_REQUESTS=1500 \
	  $(GO) test -count=1 -timeout 10m -run '^TestChaosUnderLoad$$' ./plugins/all/

# The seed corpora of the libFuzzer targets (cgo/host/fuzz/corpus: seeds and fixed findings),
# each input run once, no fuzzing: seconds. The Go fuzz targets' seeds (f.Add and
# testdata/fuzz/<Target>/) already run as ordinary tests in `go test ./...`.
test-fuzz: deps
	$(MAKE) -s -C cgo/host/fuzz -j2 regress

# Fuzzing itself, bounded: FUZZTIME per target (Go -fuzztime syntax), FUZZ=regex to choose
# targets, FUZZWORKERS processes per target, FUZZLIST=1 to list them. Working corpora and
# caches go to out/fuzz/, never into the repository.
FUZZTIME ?= 30s
fuzz: deps
	FUZZTIME=$(FUZZTIME) bash build/fuzz.sh

# The end-to-end benchmark (cmd/moebench/README.md): B0..B6 through moe-host, instructions per
# request under callgrind, wrk load, crossings; writes out/bench/report.md, results.json,
# chart.png (about 12 minutes on 2 cores; BENCH_QUICK=1 about 1). Then the Go benchmarks, whose output
# (also in out/bench/go-bench.txt) benchstat reads.
bench: bench-e2e bench-go

bench-e2e: build $(OUT)/libconformance.so $(OUT)/moebench
	$(OUT)/moebench $(BENCH_ARGS)

BENCH_GO_TIME := $(if $(filter 1,$(BENCH_QUICK)),50ms,500ms)
# moe's filter manager beside HTNN's, equal work, in one run (needs a checkout of mosn/htnn):
#   make bench-htnn HTNN=/path/to/htnn
bench-htnn:
	@test -n "$(HTNN)" || { echo "usage: make bench-htnn HTNN=/path/to/htnn (a checkout of github.com/mosn/htnn)" >&2; exit 2; }
	cmd/moebench/vs-htnn.sh $(HTNN)

bench-go: build
	@mkdir -p $(OUT)/bench
	set -o pipefail; $(GO) test -run '^$$' -bench . -benchmem -benchtime=$(BENCH_GO_TIME) ./shared/... ./plugins/... | tee $(OUT)/bench/go-bench.txt

# The soak test of plugins/all (soak_e2e_test.go; 10 s of it runs in `make test`) for
# SOAK_DURATION: the demo chain under the chaos suite's mix, what moe-host uses sampled every
# round into out/soak/soak.csv and plotted in out/soak/soak.png; RSS must stay flat and the host return to its idle baseline.
SOAK_DURATION ?= 10m
soak: build $(OUT)/libmoe-e2e.so
	MOE_REQUIRE_HOST=1 MOE_HOST_LOOPBACK_ONLY=1 MOE_SOAK_DURATION=$(SOAK_DURATION) MOE_SOAK_OUT=$(abspath $(OUT)/soak) \
	  $(GO) test -count=1 -timeout 3h -run '^TestSoak$$' -v ./plugins/all/

# Needs a Docker engine (not available on this project's CI machines; see build/README.md).
# Versions and tags come from build/versions.env.
image:
	bash build/images.sh

clean:
	rm -rf $(OUT)
