# SPDX-License-Identifier: Apache-2.0
# Sourced by the e2e runners (npm_test.sh, dashboard/run.sh), in the package's work directory:
#   npm_install INSTALLED
# installs what package-lock.json pins with `npm ci`. Offline: an existing INSTALLED (a path
# under the work directory, e.g. node_modules/openai) is used as is, or `npm ci --offline` tries
# the npm cache; only when neither works does the test exit 77 (CTest's SKIP_RETURN_CODE) with a
# message saying why. Any other failure fails.
npm_install() {
  local installed=$1
  if timeout 30 npm ping >/dev/null 2>&1; then
    npm ci --no-audit --no-fund
  elif [[ -e $installed ]]; then
    echo "npm registry unreachable: using the $installed already installed in $PWD"
  elif npm ci --offline --no-audit --no-fund >/dev/null 2>&1; then
    echo "npm registry unreachable: installed from the npm cache"
  else
    echo "SKIP: the npm registry ($(npm config get registry)) is unreachable and $installed" \
         "is neither installed in $PWD nor in the npm cache" >&2
    exit 77
  fi
}
