#!/usr/bin/env bash
# Install axe-core (the accessibility rules engine the hosted page's browser tests inject into
# the page) from the npm registry into a cache folder, and print the path of its axe.min.js.
#
# Nothing is installed globally and nothing is written inside the repository (the way
# .ci/conformance.sh installs the conformance suite). The tests find the file by running this
# script with --check (tests/components.py); .ci/run installs it before the tests.
#
# Usage:
#   .ci/axe-core.sh            install if needed, print the path of axe.min.js
#   .ci/axe-core.sh --check    print the path if installed, else exit 1 (installs nothing)
#
# Environment:
#   ERLMCP_AXE_CACHE     cache folder (default: ${XDG_CACHE_HOME:-$HOME/.cache}/erlmcp-py/axe-core)
#   AXE_CORE_VERSION     default 4.14.1
#
# Exit status: 0 with the path on stdout; 1 when --check finds it missing; 2 when it cannot
# be installed.
set -euo pipefail

AXE_CORE_VERSION=${AXE_CORE_VERSION:-4.14.1}
CACHE=${ERLMCP_AXE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/erlmcp-py/axe-core}
DIR="$CACHE/axe-core-$AXE_CORE_VERSION"
PACKAGE="$DIR/node_modules/axe-core"

installed() {
    [[ -f "$PACKAGE/axe.min.js" && -f "$PACKAGE/package.json" ]] &&
        grep -q "\"version\": \"$AXE_CORE_VERSION\"" "$PACKAGE/package.json"
}

case "${1:-}" in
    --check)
        installed || exit 1
        echo "$PACKAGE/axe.min.js"
        exit 0 ;;
    "") ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "axe-core.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
esac

if ! installed; then
    command -v npm >/dev/null || { echo "axe-core.sh: npm is needed to install axe-core" >&2; exit 2; }
    echo "installing axe-core@$AXE_CORE_VERSION into $DIR" >&2
    mkdir -p "$DIR"
    npm install --prefix "$DIR" --save-exact --no-audit --no-fund --loglevel=error \
        "axe-core@$AXE_CORE_VERSION" >&2
    installed || { echo "axe-core.sh: could not install axe-core into $DIR" >&2; exit 2; }
fi
echo "$PACKAGE/axe.min.js"
