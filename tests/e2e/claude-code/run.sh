#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# CTest entry point for the Claude Code e2e test (label `e2e`).
#   run.sh SOURCE_DIR WORK_DIR
# Copies the package (package.json, package-lock.json pinning @anthropic-ai/claude-code and its
# linux-x64 binary, claude-code.test.mjs, script.yaml) and the shared llmux_procs.mjs into
# WORK_DIR, installs what the lockfile pins (npm_install.sh), then runs `node --test` inside a
# network namespace of its own whose only interface is loopback (`unshare -n`, `ip link set lo
# up`): the simulators, the gateway and Claude Code all start in there, so anything Claude Code
# tries to reach beyond them fails at once instead of leaving the machine. LLMUX_BINARY and
# LLMUX_SOURCE_DIR come from CTest.
#
# Needs root (CI runs as root) or CAP_SYS_ADMIN for the namespace, and `ip` (iproute2); without
# either the test fails saying so. Offline: as npm_install.sh says (an installed claude or the
# npm cache, else exit 77, CTest's SKIP_RETURN_CODE).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=$1
work=$2
: "${LLMUX_BINARY:?LLMUX_BINARY must name the llmux binary under test}"
: "${LLMUX_SOURCE_DIR:?LLMUX_SOURCE_DIR must name the source tree}"

if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  echo "FAIL: node and npm are needed for this test (scripts/setup installs nodejs and npm)" >&2
  exit 1
fi
if ! command -v ip >/dev/null; then
  echo "FAIL: ip (iproute2) is needed to bring up loopback in the test's network namespace" \
       "(scripts/setup installs it)" >&2
  exit 1
fi
if ! unshare -n true 2>/dev/null; then
  echo "FAIL: this test runs Claude Code in a network namespace with only loopback" \
       "(unshare -n), which this user may not create: run it as root (CI does) or with" \
       "CAP_SYS_ADMIN" >&2
  exit 1
fi
mkdir -p "$work"
cp "$src/package.json" "$src/package-lock.json" "$src/claude-code.test.mjs" "$src/script.yaml" \
   "$here/../llmux_procs.mjs" "$work/"
cd "$work"
echo "node $(node --version), npm $(npm --version)"

. "$here/../npm_install.sh"
npm_install node_modules/.bin/claude

# From here on, only loopback: even `claude --version` runs inside.
exec unshare -n -- bash -c 'ip link set lo up && node_modules/.bin/claude --version &&
  exec node --test --test-reporter=spec ./*.test.mjs'
