# SPDX-License-Identifier: Apache-2.0
# Top-level entry points. Every target installs missing Debian packages first (scripts/setup).
BUILD ?= build
ASAN_BUILD ?= build-asan
TSAN_BUILD ?= build-tsan
FUZZ_BUILD ?= build-fuzz
RELEASE_BUILD ?= build-release
# make install: where to (DESTDIR=... stages it under another root, as packagers do).
PREFIX ?= /usr/local
# make fuzz: seconds per target, and which targets (default: every one in tests/fuzz).
FUZZ_SECONDS ?= 60
FUZZ_TARGETS ?=
FUZZ_CLANG ?= $(shell scripts/setup --clang-version)
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?= -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo
# ccache: hash paths relative to the checkout, so a fresh clone elsewhere (CI) hits the cache.
export CCACHE_BASEDIR := $(CURDIR)
export CCACHE_NOHASHDIR := 1

.PHONY: all setup configure build test demo install asan-test tsan-test fuzz fuzz-build fuzz-one \
	format format-check clean platforms lint-names

all: build

setup:
	@scripts/setup

$(BUILD)/build.ninja: | setup
	cmake -S . -B $(BUILD) $(CMAKE_FLAGS)

configure: setup $(BUILD)/build.ninja

build: configure
	cmake --build $(BUILD) -j $(JOBS)

test: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS) --timeout 300

# The main job: the seed's whole experiment on one machine (two simulated DGX Sparks, the
# gateway, both seed benchmarks, one report). DEMO_FLAGS=--quick runs it in seconds.
demo: build
	$(BUILD)/llmux demo $(DEMO_FLAGS)

# A stripped Release build of llmux in its own directory, installed by CMake: $(PREFIX)/bin/llmux,
# and the systemd unit, environment file, Grafana dashboard and example configs under
# $(PREFIX)/share/llmux (deploy/README.md). As root, or with PREFIX=~/.local.
install: setup
	cmake -S . -B $(RELEASE_BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=OFF
	cmake --build $(RELEASE_BUILD) -j $(JOBS) --target llmux
	DESTDIR="$(DESTDIR)" cmake --install $(RELEASE_BUILD) --strip --prefix "$(PREFIX)"

# ASan + UBSan build of the unit tests and a small integration subset (CI runs this).
asan-test: setup
	cmake -S . -B $(ASAN_BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Debug -DLLMUX_SANITIZE=ON
	cmake --build $(ASAN_BUILD) -j $(JOBS)
	cd $(ASAN_BUILD) && ctest --output-on-failure -j $(JOBS) --timeout 600 -L sanitize

# ThreadSanitizer build (g++) of the llmux binary and the gateway integration tests, which run
# against it (ctest label `gateway`: every llmux_integration_test named gateway_*), and the unit
# tests that run threads (label `tsan`, target tsan_tests). CI runs this.
# A report fails the test: halt_on_error makes the process exit 66, and the tests' support code
# fails on any sanitizer report in the gateway's stderr. tests/tsan.supp: known false positives.
# GatewayTls.* is left out: Debian's OpenSSL is not built for TSan (its own atomics look like
# races to it); ASan runs those tests.
TSAN_SUPP := $(wildcard $(CURDIR)/tests/tsan.supp)
TSAN_OPTIONS_CI := halt_on_error=1 second_deadlock_stack=1 $(if $(TSAN_SUPP),suppressions=$(TSAN_SUPP))
tsan-test: setup
	cmake -S . -B $(TSAN_BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Debug -DLLMUX_TSAN=ON
	cmake --build $(TSAN_BUILD) -j $(JOBS) --target llmux gateway_tests tsan_tests
	cd $(TSAN_BUILD) && TSAN_OPTIONS="$(TSAN_OPTIONS_CI) $(TSAN_OPTIONS)" \
	  ctest --output-on-failure -j $(JOBS) --timeout 600 -L 'gateway|tsan' -E '^GatewayTls\.'

# libFuzzer targets (tests/fuzz), built with the distribution's clang that scripts/setup --fuzz
# installs (clang-16 on Debian 12; FUZZ_CLANG=N picks another installed clang-N). Each
# runs FUZZ_SECONDS on a copy of its committed corpus; a finding fails the job and its input is
# kept under $(FUZZ_BUILD)/fuzz/artifacts/ (docs/testing.md: reproducing a finding).
#   make fuzz FUZZ_SECONDS=600 FUZZ_TARGETS="sse config"      make fuzz-one T=sse
fuzz-build:
	@scripts/setup --fuzz
	CC=clang-$(FUZZ_CLANG) CXX=clang++-$(FUZZ_CLANG) cmake -S . -B $(FUZZ_BUILD) -G Ninja \
	  -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_COMPILER=clang++-$(FUZZ_CLANG) -DLLMUX_FUZZ=ON
	cmake --build $(FUZZ_BUILD) -j $(JOBS)

fuzz: fuzz-build
	tests/fuzz/run.sh $(FUZZ_BUILD) $(FUZZ_SECONDS) $(FUZZ_TARGETS)

fuzz-one:
	@test -n "$(T)" || { echo "usage: make fuzz-one T=<target> [FUZZ_SECONDS=N]" >&2; exit 2; }
	$(MAKE) fuzz FUZZ_TARGETS="$(T)"

# Builds and tests on the other platforms llmux's users run (scripts/platforms, as root): Debian 13
# amd64 (the full `make test` in a root made with mmdebstrap) and arm64 (a cross build against an
# arm64 sysroot, the unit tests under qemu-user). By hand, not in CI; results in
# tests/platforms/results. PLATFORMS_FLAGS="--fresh" remakes the cached roots first.
platforms:
	scripts/platforms $(PLATFORMS_FLAGS)

# Names that explain themselves: clang-tidy's readability-identifier-length over src/ (scripts/
# lint-names; by hand, not in CI: about 15 s per source on one core).
lint-names:
	scripts/lint-names

format:
	git ls-files '*.cpp' '*.hpp' | xargs clang-format -i

format-check:
	git ls-files '*.cpp' '*.hpp' | xargs clang-format --dry-run --Werror

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(TSAN_BUILD) $(FUZZ_BUILD) $(RELEASE_BUILD) build-lint
