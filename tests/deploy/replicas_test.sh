#!/usr/bin/env bash
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

out=$("$llmux" gateway --check --config "$deploy/replicas.yaml" 2>&1) ||
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
