#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# deploy/llmux.service: `systemd-analyze verify` accepts it (no error, no warning about it), it
# keeps its hardening, and its commands work as systemd would run them with deploy/llmux.env:
# ExecStart serves, ExecReload (SIGHUP) reloads, SIGTERM (systemctl stop) drains and exits 0.
# Exit 77 (skipped) where systemd-analyze is missing.
# Usage: systemd_unit_test.sh UNIT ENV_FILE LLMUX_BINARY
set -euo pipefail
unit=$1 envfile=$2 llmux=$(realpath "$3")
if ! command -v systemd-analyze >/dev/null 2>&1; then
  echo "systemd-analyze not found: skipped"
  exit 77
fi
tmp=$(mktemp -d)
pid=""
trap '[[ -n $pid ]] && kill -9 "$pid" 2>/dev/null; rm -rf "$tmp"' EXIT
fail() {
  echo "FAIL: $*" >&2
  exit 1
}

# verify: the unit's binary replaced by the one under test (verify checks it is executable).
sed "s|/usr/local/bin/llmux|$llmux|g" "$unit" >"$tmp/llmux.service"
out=$(systemd-analyze verify --man=no "$tmp/llmux.service" 2>&1) ||
  fail "systemd-analyze verify failed: $out"
if grep -q "llmux.service" <<<"$out"; then fail "systemd-analyze verify warns: $out"; fi

# shellcheck disable=SC2016  # the unit's own text: systemd expands $MAINPID
for line in Restart=on-failure LimitNOFILE=65536 NoNewPrivileges=yes ProtectSystem=strict \
  DynamicUser=yes 'ExecReload=/bin/kill -HUP $MAINPID' KillSignal=SIGTERM \
  EnvironmentFile=-/etc/llmux/llmux.env; do
  grep -qxF -- "$line" "$unit" || fail "the unit lacks '$line'"
done

# The environment file as systemd reads it (KEY=value; comments and blank lines skipped), the
# unit's own defaults first.
declare -A env
while IFS= read -r l; do
  [[ $l =~ ^Environment=([A-Z_]+)=(.*)$ ]] && env[${BASH_REMATCH[1]}]=${BASH_REMATCH[2]}
done <"$unit"
while IFS= read -r l; do
  [[ $l =~ ^[[:space:]]*(#|$) ]] && continue
  [[ $l =~ ^([A-Za-z_][A-Za-z0-9_]*)=(.*)$ ]] || fail "not KEY=value in $envfile: $l"
  env[${BASH_REMATCH[1]}]=${BASH_REMATCH[2]}
done <"$envfile"
[[ ${env[LLMUX_CONFIG]:-} == /etc/llmux/llmux.yaml ]] ||
  fail "LLMUX_CONFIG: '${env[LLMUX_CONFIG]:-}'"

# ExecStart with a config of the test's own (loopback, a free port).
cat >"$tmp/llmux.yaml" <<YAML
listen: "127.0.0.1:0"
threads: 1
health_checks: {enabled: false}
backends:
  - {name: a, url: "http://127.0.0.1:9"}
routes:
  - {name: all, backends: [a]}
YAML
LLMUX_CONFIG=$tmp/llmux.yaml
LLMUX_FLAGS=${env[LLMUX_FLAGS]:-}
start=$(sed -n 's/^ExecStart=//p' "$unit")
[[ -n $start ]] || fail "no ExecStart"
start=${start//\/usr\/local\/bin\/llmux/$llmux}
# shellcheck disable=SC2086
eval "set -- $start"
"$@" >"$tmp/out" 2>"$tmp/err" </dev/null &
pid=$!
for _ in $(seq 100); do grep -q '"ready"' "$tmp/out" 2>/dev/null && break; sleep 0.05; done
grep -q '"ready"' "$tmp/out" || fail "ExecStart did not start the gateway: $(cat "$tmp/err")"

# shellcheck disable=SC2034  # used by the eval below, as systemd sets it for ExecReload
MAINPID=$pid
reload=$(sed -n 's/^ExecReload=//p' "$unit")
eval "$reload"
reloaded='reload: configuration generation 2'
for _ in $(seq 100); do grep -q "$reloaded" "$tmp/err" && break; sleep 0.05; done
grep -q "$reloaded" "$tmp/err" || fail "ExecReload did not reload: $(cat "$tmp/err")"

kill -TERM "$pid"
status=0
for _ in $(seq 200); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
kill -0 "$pid" 2>/dev/null && fail "the gateway did not exit within 10 s of SIGTERM"
wait "$pid" || status=$?
pid=""
[[ $status -eq 0 ]] || fail "the gateway exited $status on SIGTERM: $(cat "$tmp/err")"
echo "llmux.service: verified; start, reload and stop work"
