#!/usr/bin/env bash
# Install the MCP servers nobody here wrote that the gateway's tests put behind it: fastmcp
# (in a virtualenv of its own: its `mcp` pin need not match the project's) and the TypeScript
# SDK @modelcontextprotocol/sdk (from the npm registry, run on the Node 22 that
# .ci/conformance.sh installs). Into a cache folder; nothing is written inside the repository.
#
# The tests find them by running this script with --check (tests/components.py); .ci/run
# installs them before the tests.
#
# Usage:
#   .ci/upstreams.sh            install what is missing, then print the paths (as --check)
#   .ci/upstreams.sh --check    print "python=PATH", "node=PATH" and "sdk=PATH" (the fastmcp
#                               virtualenv's python, Node 22, the TypeScript SDK's
#                               node_modules) when all are installed, else exit 1
#
# Environment:
#   ERLMCP_UPSTREAMS_CACHE  cache folder (default: ${XDG_CACHE_HOME:-$HOME/.cache}/erlmcp-py/upstreams)
#   FASTMCP_VERSION         default 4.2.3
#   TS_SDK_VERSION          default 1.32.2
#
# Exit status: 0 with the paths on stdout; 1 when --check finds something missing; 2 when it
# cannot be installed.
set -euo pipefail
cd "$(dirname "$0")/.."

FASTMCP_VERSION=${FASTMCP_VERSION:-4.2.3}
TS_SDK_VERSION=${TS_SDK_VERSION:-1.32.2}
CACHE=${ERLMCP_UPSTREAMS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/erlmcp-py/upstreams}
FASTMCP_DIR="$CACHE/fastmcp-$FASTMCP_VERSION"
TS_DIR="$CACHE/ts-sdk-$TS_SDK_VERSION"
NODE="${ERLMCP_CONFORMANCE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/erlmcp-py/conformance}/node22/node_modules/.bin/node"

die() { echo "upstreams.sh: $*" >&2; exit 2; }

fastmcp_ok() { [[ -x "$FASTMCP_DIR/bin/python" ]] &&
    [[ "$("$FASTMCP_DIR/bin/python" -c 'import fastmcp; print(fastmcp.__version__)' 2>/dev/null)" == "$FASTMCP_VERSION" ]]; }
node_ok() { [[ -x "$NODE" ]] && [[ "$("$NODE" --version 2>/dev/null)" == v22.* ]]; }
sdk_ok() { [[ -f "$TS_DIR/node_modules/@modelcontextprotocol/sdk/package.json" ]] &&
    grep -q "\"version\": \"$TS_SDK_VERSION\"" "$TS_DIR/node_modules/@modelcontextprotocol/sdk/package.json"; }

report() {
    fastmcp_ok && node_ok && sdk_ok || return 1
    echo "python=$FASTMCP_DIR/bin/python"
    echo "node=$NODE"
    echo "sdk=$TS_DIR/node_modules"
}

case "${1:-}" in
    --check) report || exit 1; exit 0 ;;
    "") ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "upstreams.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
esac

if ! fastmcp_ok; then
    echo "installing fastmcp==$FASTMCP_VERSION into $FASTMCP_DIR" >&2
    rm -rf "$FASTMCP_DIR"
    python3 -m venv "$FASTMCP_DIR" || die "could not create a virtualenv in $FASTMCP_DIR"
    "$FASTMCP_DIR/bin/python" -m pip install -q --disable-pip-version-check \
        "fastmcp==$FASTMCP_VERSION" >&2 || die "could not install fastmcp==$FASTMCP_VERSION"
    fastmcp_ok || die "fastmcp $FASTMCP_VERSION is not importable from $FASTMCP_DIR"
fi
if ! node_ok; then
    .ci/conformance.sh --install-only >/dev/null || die "could not install Node 22"
    node_ok || die "Node 22 is not at $NODE"
fi
if ! sdk_ok; then
    echo "installing @modelcontextprotocol/sdk@$TS_SDK_VERSION into $TS_DIR" >&2
    mkdir -p "$TS_DIR"
    PATH="$(dirname "$NODE"):$PATH" npm install --prefix "$TS_DIR" --save-exact --no-audit \
        --no-fund --loglevel=error "@modelcontextprotocol/sdk@$TS_SDK_VERSION" >&2 ||
        die "could not install @modelcontextprotocol/sdk@$TS_SDK_VERSION"
    sdk_ok || die "@modelcontextprotocol/sdk $TS_SDK_VERSION is not in $TS_DIR"
fi
report
