#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# CTest entry point for the e2e tests written with node's test runner (label `e2e`): the openai
# npm client (openai-node/) and the Codex CLI (codex/).
#   npm_test.sh SOURCE_DIR WORK_DIR INSTALLED
# Copies the package (package.json, package-lock.json, *.test.mjs and any other *.json/*.yaml
# fixtures) and the shared llmux_procs.mjs into WORK_DIR (a build directory, so two build
# trees never share a node_modules), installs what the lockfile pins (npm_install.sh), then runs
# `node --test`. INSTALLED is a path
# under WORK_DIR that exists once the package is installed (node_modules/openai,
# node_modules/.bin/codex). LLMUX_BINARY and LLMUX_SOURCE_DIR come from CTest.
#
# Offline: as npm_install.sh says (an installed INSTALLED or the npm cache, else exit 77).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=$1
work=$2
installed=$3

if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  echo "FAIL: node and npm are needed for this test (scripts/setup installs nodejs and npm)" >&2
  exit 1
fi
mkdir -p "$work"
cp "$src"/*.json "$src"/*.test.mjs "$here/llmux_procs.mjs" "$work/"
cp "$src"/*.yaml "$work/" 2>/dev/null || true
cd "$work"
echo "node $(node --version), npm $(npm --version)"

. "$here/npm_install.sh"
npm_install "$installed"

exec node --test --test-reporter=spec ./*.test.mjs
