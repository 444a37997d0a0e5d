#!/usr/bin/env bash
# CTest entry point for the e2e tests written with node's test runner (label `e2e`): the openai
# npm client (openai-node/) and the Codex CLI (codex/).
#   npm_test.sh SOURCE_DIR WORK_DIR INSTALLED
# Copies the package (package.json, package-lock.json, *.test.mjs and any other *.json/*.yaml
# fixtures) and the shared llmux_procs.mjs into WORK_DIR (a build directory, so two build trees never share a node_modules),
# installs what the lockfile pins with `npm ci`, then runs `node --test`. INSTALLED is a path
# under WORK_DIR that exists once the package is installed (node_modules/openai,
# node_modules/.bin/codex). LLMUX_BINARY and LLMUX_SOURCE_DIR come from CTest.
#
# Offline: when the npm registry cannot be reached, an existing WORK_DIR/node_modules is used
# as is, or `npm ci --offline` tries the npm cache; only when neither works is the test
# skipped (exit 77, CTest's SKIP_RETURN_CODE) with a message saying why. Any other failure fails.
set -euo pipefail
src=$1
work=$2
installed=$3

if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  echo "FAIL: node and npm are needed for this test (scripts/setup installs nodejs and npm)" >&2
  exit 1
fi
mkdir -p "$work"
cp "$src"/*.json "$src"/*.test.mjs "$(dirname "$0")/llmux_procs.mjs" "$work/"
cp "$src"/*.yaml "$work/" 2>/dev/null || true
cd "$work"
echo "node $(node --version), npm $(npm --version)"

if timeout 30 npm ping >/dev/null 2>&1; then
  npm ci --no-audit --no-fund
elif [[ -e $installed ]]; then
  echo "npm registry unreachable: using the node_modules already installed in $work"
elif npm ci --offline --no-audit --no-fund >/dev/null 2>&1; then
  echo "npm registry unreachable: installed from the npm cache"
else
  echo "SKIP: the npm registry ($(npm config get registry)) is unreachable and $installed" \
       "is neither installed in $work nor in the npm cache" >&2
  exit 77
fi

exec node --test --test-reporter=spec ./*.test.mjs
