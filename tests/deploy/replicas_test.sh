#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# deploy/ for replicas (issue 15): the template unit llmux@.service verifies as an instance
# (systemd-analyze; skipped, 77, where it is missing) and differs from llmux.service only in what
# makes instances (config, environment, log and runtime directories per instance); and
# deploy/replicas.yaml passes `llmux gateway --check` with its Redis shared state.
# Usage: replicas_test.sh DEPLOY_DIR LLMUX_BINARY
set -euo pipefail
deploy=$1 llmux=$(realpath "$2")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() {
  echo "FAIL: $*" >&2
  exit 1
}

# The example's LAN addresses rewritten to loopback and its port to any free one first: nothing
# here connects to them, and port 8080 may be taken on this machine.
sed -e 's/192\.168\.200\.[0-9]*/127.0.0.1/g' -e 's/^listen: ":8080"/listen: "127.0.0.1:0"/' \
  "$deploy/replicas.yaml" >"$tmp/replicas.yaml"
grep -q '^listen: "127.0.0.1:0"' "$tmp/replicas.yaml" || fail "replicas.yaml's listen line changed"
out=$("$llmux" gateway --check --config "$tmp/replicas.yaml" 2>&1) ||
  fail "replicas.yaml does not pass --check: $out"
grep -qi "redis" <<<"$out" || fail "--check does not mention the shared state: $out"

# The template and the single unit: the same hardening and commands.
diff <(grep -v '^#' "$deploy/llmux.service" | sed 's/%i//g') \
  <(grep -v '^#' "$deploy/llmux@.service" | sed 's|, replica %i||; s|/etc/llmux/%i.yaml|/etc/llmux/llmux.yaml|; /%i.env/d; s|llmux/%i$|llmux|') ||
  fail "llmux@.service drifted from llmux.service beyond its instance settings"

if ! command -v systemd-analyze >/dev/null 2>&1; then
  echo "systemd-analyze not found: the unit not verified"
  exit 77
fi
sed "s|/usr/local/bin/llmux|$llmux|g" "$deploy/llmux@.service" >"$tmp/llmux@.service"
out=$(cd "$tmp" && systemd-analyze verify --man=no "$tmp/llmux@.service" 2>&1 || true)
# A template is verified through an instance of it.
cp "$tmp/llmux@.service" "$tmp/llmux@a.service"
out=$(systemd-analyze verify --man=no "$tmp/llmux@a.service" 2>&1) ||
  fail "systemd-analyze verify failed: $out"
if grep -q "llmux@" <<<"$out"; then fail "systemd-analyze verify warns: $out"; fi
echo "ok"
