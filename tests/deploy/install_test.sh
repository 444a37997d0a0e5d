#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# What `make install` runs on its Release build, here on the test build: `cmake --install BUILD
# --strip --prefix P` installs an executable, stripped P/bin/llmux that runs, and the deployment
# files and example configs under P/share/llmux; DESTDIR stages the same under another root.
# Usage: install_test.sh BUILD_DIR
set -euo pipefail
build=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() {
  echo "FAIL: $*" >&2
  cat "$tmp/install.log" >&2 2>/dev/null || true
  exit 1
}

cmake --install "$build" --strip --prefix "$tmp/prefix" >"$tmp/install.log" 2>&1 ||
  fail "cmake --install failed"
bin=$tmp/prefix/bin/llmux
[[ -f $bin && -x $bin ]] || fail "no executable bin/llmux"
version=$("$bin" --version) || fail "bin/llmux --version failed"
[[ $version == "llmux "* ]] || fail "bin/llmux --version printed '$version'"
"$bin" gateway --help | grep -q -- "--log-format" || fail "bin/llmux gateway --help"
if readelf -S "$bin" | grep -qE '\.debug_info|\.symtab'; then
  fail "bin/llmux is not stripped (--strip): $(readelf -S "$bin" | grep -E 'debug|symtab')"
fi
for f in deploy/llmux.service deploy/llmux.env deploy/README.md \
  deploy/grafana/llmux-dashboard.json examples/seed.yaml; do
  [[ -f $tmp/prefix/share/llmux/$f ]] || fail "share/llmux/$f not installed"
done

DESTDIR=$tmp/stage cmake --install "$build" --strip --prefix /opt/llmux >"$tmp/install.log" 2>&1 ||
  fail "cmake --install with DESTDIR failed"
[[ -x $tmp/stage/opt/llmux/bin/llmux ]] || fail "DESTDIR: no \$DESTDIR/opt/llmux/bin/llmux"
echo "install: bin/llmux ($(du -h "$bin" | cut -f1), stripped) and share/llmux installed"
