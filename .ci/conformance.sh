#!/usr/bin/env bash
# Run the official MCP conformance suite (@modelcontextprotocol/conformance) against a server.
#
# The suite tests servers over Streamable HTTP only (there is no stdio mode): give it the MCP
# endpoint URL of a running server, or a command that starts one (the script waits until the
# URL accepts TCP connections, runs the scenarios, then stops the command's process group).
# The suite needs Node >= 22; the machine's node may be older, so Node 22 is installed from the
# npm registry (the `node` npm package) into a cache folder, next to the pinned suite. Nothing
# is installed globally and nothing is written inside the repository.
#
# Usage:
#   .ci/conformance.sh [options] [SCENARIO ...]
#
#   SCENARIO ...           server scenarios to run, one conformance run each (default: the
#                          three elicitation scenarios, see ELICITATION below)
#   --url URL              MCP endpoint (default: http://127.0.0.1:${PORT:-3917}/mcp)
#   --server-cmd CMD       start CMD (bash -c, own process group) before the run, stop it after;
#                          its output goes to <output-dir>/server.log
#   --startup-timeout S    seconds to wait for the URL's port to accept connections (default 30)
#   --suite NAME           run a whole suite (active | all | pending) in one conformance run
#                          instead of a scenario list
#   --requirements REV     run exactly the scenarios protocol revision REV requires (e.g.
#                          2026-07-28, 2025-11-25), frozen in the suite's requirements/REV.yaml,
#                          at that revision's wire version, in one conformance run; only the
#                          scored scenarios decide the exit status (0.2.0 pre-releases on)
#   --expected-failures F  YAML baseline (server: [scenario, ...]; from 0.2.0 on also
#                          scenario:check-id for one check); passed to every run
#   --runs N               do it all N times in a row against the same server (default 1):
#                          what one run leaves behind (idle sessions, suspended calls) is
#                          there for the next, as for a client that runs its tests again
#   --output-dir DIR       where checks.json files go (default: a fresh dir under the cache)
#   --verbose              conformance prints every check as JSON
#   --list                 install if needed, list server scenarios, exit
#   --install-only         install if needed, print the tool paths, exit
#   -h, --help             this text
#
# Environment:
#   ERLMCP_CONFORMANCE_CACHE  cache folder (default: ${XDG_CACHE_HOME:-$HOME/.cache}/erlmcp-py/conformance)
#   CONFORMANCE_VERSION       default 0.1.16 (the npm `latest` the project targets); .ci/run
#                             also runs a pinned pre-release for --requirements
#   NODE_MAJOR                default 22
#
# Exit status: 0 when every run passed (or, with --expected-failures, only baselined scenarios
# failed), 1 when a check failed, 2 on usage or setup errors (install, server never came up).
#
# Examples:
#   .ci/conformance.sh --url http://127.0.0.1:3917/mcp
#   .ci/conformance.sh --server-cmd '.venv/bin/erlmcp-py serve --transport http --port 3917' \
#       tools-call-elicitation elicitation-sep1034-defaults elicitation-sep1330-enums
#   .ci/conformance.sh --url http://127.0.0.1:3917/mcp --suite active \
#       --expected-failures .ci/conformance-expected-failures.yml
#   .ci/conformance.sh --server-cmd '.venv/bin/erlmcp-py serve --transport http --port 3917' \
#       --url http://127.0.0.1:3917/mcp --suite active --runs 2
#   CONFORMANCE_VERSION=0.2.0-alpha.12 .ci/conformance.sh --url http://127.0.0.1:3917/mcp \
#       --requirements 2026-07-28 --expected-failures .ci/conformance-2026-07-28-expected-failures.yml
set -euo pipefail

ELICITATION=(tools-call-elicitation elicitation-sep1034-defaults elicitation-sep1330-enums)

CONFORMANCE_VERSION=${CONFORMANCE_VERSION:-0.1.16}
NODE_MAJOR=${NODE_MAJOR:-22}
CACHE=${ERLMCP_CONFORMANCE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/erlmcp-py/conformance}
NODE_DIR="$CACHE/node$NODE_MAJOR"
SUITE_DIR="$CACHE/conformance-$CONFORMANCE_VERSION"

url="http://127.0.0.1:${PORT:-3917}/mcp"
server_cmd=""
startup_timeout=30
suite=""
requirements=""
expected_failures=""
output_dir=""
runs=1
verbose=""
mode="run"
scenarios=()

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }
die() { echo "conformance.sh: $*" >&2; exit 2; }

while (($#)); do
    case "$1" in
        --url) url=${2:?--url needs a value}; shift 2 ;;
        --server-cmd) server_cmd=${2:?--server-cmd needs a value}; shift 2 ;;
        --startup-timeout) startup_timeout=${2:?}; shift 2 ;;
        --suite) suite=${2:?--suite needs a value}; shift 2 ;;
        --requirements) requirements=${2:?--requirements needs a value}; shift 2 ;;
        --expected-failures) expected_failures=$(realpath "${2:?}"); shift 2 ;;
        --output-dir) output_dir=${2:?}; shift 2 ;;
        --runs) runs=${2:?--runs needs a value}; shift 2 ;;
        --verbose) verbose=--verbose; shift ;;
        --list) mode=list; shift ;;
        --install-only) mode=install; shift ;;
        -h|--help) usage; exit 0 ;;
        --) shift; scenarios+=("$@"); break ;;
        -*) die "unknown option $1 (see --help)" ;;
        *) scenarios+=("$1"); shift ;;
    esac
done

[[ "$runs" =~ ^[1-9][0-9]*$ ]] || die "--runs needs a positive whole number, got '$runs'"

# --- install (idempotent) -----------------------------------------------------------------------

node_ok() { [[ -x "$NODE_DIR/node_modules/.bin/node" ]] &&
    [[ "$("$NODE_DIR/node_modules/.bin/node" --version 2>/dev/null)" == "v$NODE_MAJOR."* ]]; }

install_node() {
    node_ok && return 0
    command -v npm >/dev/null || die "npm is needed to install Node $NODE_MAJOR"
    echo "installing node@$NODE_MAJOR into $NODE_DIR" >&2
    mkdir -p "$NODE_DIR"
    # The `node` package's preinstall script fetches the binary package node-<os>-<arch>.
    npm install --prefix "$NODE_DIR" --no-audit --no-fund --loglevel=error \
        "node@$NODE_MAJOR" >&2 || true
    if ! node_ok; then
        # npm set to skip install scripts: take the binary package alone (both packages
        # declare a `node` bin, so start from an empty folder).
        local arch
        case "$(uname -m)" in
            x86_64) arch=x64 ;; aarch64|arm64) arch=arm64 ;; *) arch=$(uname -m) ;;
        esac
        rm -rf "$NODE_DIR" && mkdir -p "$NODE_DIR"
        npm install --prefix "$NODE_DIR" --no-audit --no-fund --loglevel=error \
            "node-linux-$arch@$NODE_MAJOR" >&2
    fi
    node_ok || die "could not install Node $NODE_MAJOR into $NODE_DIR"
}

suite_ok() { [[ -f "$SUITE_DIR/node_modules/@modelcontextprotocol/conformance/package.json" ]] &&
    [[ "$("$NODE_DIR/node_modules/.bin/node" -p \
        "require('$SUITE_DIR/node_modules/@modelcontextprotocol/conformance/package.json').version" \
        2>/dev/null)" == "$CONFORMANCE_VERSION" ]]; }

install_suite() {
    suite_ok && return 0
    echo "installing @modelcontextprotocol/conformance@$CONFORMANCE_VERSION into $SUITE_DIR" >&2
    mkdir -p "$SUITE_DIR"
    # npm itself runs on Node 22 here (PATH), so engine checks see the right version.
    npm install --prefix "$SUITE_DIR" --save-exact --no-audit --no-fund --loglevel=error \
        "@modelcontextprotocol/conformance@$CONFORMANCE_VERSION" >&2
    suite_ok || die "could not install the conformance suite into $SUITE_DIR"
}

install_node
export PATH="$NODE_DIR/node_modules/.bin:$PATH"
install_suite
conformance=("$NODE_DIR/node_modules/.bin/node"
    "$SUITE_DIR/node_modules/@modelcontextprotocol/conformance/dist/index.js")

case "$mode" in
    install)
        echo "node:        $NODE_DIR/node_modules/.bin/node ($(node --version))"
        echo "conformance: ${conformance[*]} ($("${conformance[@]}" --version))"
        exit 0 ;;
    list)
        "${conformance[@]}" list --server
        exit 0 ;;
esac

# --- scenarios ---------------------------------------------------------------------------------

if [[ -n "$requirements" ]]; then
    [[ -z "$suite" && ${#scenarios[@]} == 0 ]] ||
        die "give one of --requirements, --suite or scenarios"
    # a set the pinned suite does not ship is an error, never an empty (passing) run
    [[ -f "$SUITE_DIR/node_modules/@modelcontextprotocol/conformance/requirements/$requirements.yaml" ]] ||
        die "conformance $CONFORMANCE_VERSION has no requirement set '$requirements'"
elif [[ -n "$suite" ]]; then
    ((${#scenarios[@]} == 0)) || die "give either --suite or scenarios, not both"
else
    ((${#scenarios[@]})) || scenarios=("${ELICITATION[@]}")
    known=$("${conformance[@]}" list --server | sed -n 's/^  - \([^ ]*\).*/\1/p')
    for s in "${scenarios[@]}"; do
        grep -qxF -- "$s" <<<"$known" || die "unknown scenario '$s' (see --list)"
    done
fi

# --- server ------------------------------------------------------------------------------------

if [[ -z "$output_dir" ]]; then
    output_dir="$CACHE/results/$(date +%Y%m%dT%H%M%S)-$$"
fi
mkdir -p "$output_dir"
output_dir=$(realpath "$output_dir")

# host and port of the URL, for the readiness probe
hostport=${url#*://}
hostport=${hostport%%/*}
host=${hostport%:*}
port=${hostport##*:}
if [[ "$host" == "$hostport" ]]; then
    [[ "$url" == https://* ]] && port=443 || port=80
fi
host=${host#[}
host=${host%]}

port_open() { (exec 3<>"/dev/tcp/$host/$port") 2>/dev/null; }

server_pid=""
stop_server() {
    [[ -n "$server_pid" ]] || return 0
    if kill -0 "$server_pid" 2>/dev/null; then
        kill -TERM -- "-$server_pid" 2>/dev/null || true
        for _ in $(seq 50); do kill -0 "$server_pid" 2>/dev/null || break; sleep 0.1; done
        kill -KILL -- "-$server_pid" 2>/dev/null || true
    fi
    wait "$server_pid" 2>/dev/null || true
    server_pid=""
}
trap stop_server EXIT
trap 'exit 130' INT TERM

if [[ -n "$server_cmd" ]]; then
    port_open && die "something already listens on $host:$port; not starting --server-cmd"
    echo "starting server: $server_cmd (log: $output_dir/server.log)" >&2
    set -m  # own process group, so the whole server tree can be stopped
    bash -c "$server_cmd" >"$output_dir/server.log" 2>&1 &
    server_pid=$!
    set +m
    deadline=$((SECONDS + startup_timeout))
    until port_open; do
        if ! kill -0 "$server_pid" 2>/dev/null; then
            tail -n 40 "$output_dir/server.log" >&2 || true
            die "server command exited before $host:$port accepted connections"
        fi
        ((SECONDS < deadline)) || { tail -n 40 "$output_dir/server.log" >&2 || true;
            die "server did not listen on $host:$port within ${startup_timeout}s"; }
        sleep 0.2
    done
elif ! port_open; then
    die "nothing listens on $host:$port (start the server, or pass --server-cmd)"
fi

# --- run ---------------------------------------------------------------------------------------

common=(--url "$url" -o "$output_dir")
[[ -n "$expected_failures" ]] && common+=(--expected-failures "$expected_failures")
[[ -n "$verbose" ]] && common+=("$verbose")

started=$SECONDS
status=0
summary=""
for ((run = 1; run <= runs; run++)); do
    label=""
    if ((runs > 1)); then
        label="run $run/$runs: "
        echo "=== run $run of $runs against $url ==="
    fi
    if [[ -n "$requirements" ]]; then
        rc=0
        "${conformance[@]}" server --requirements "$requirements" "${common[@]}" || rc=$?
        ((status != 0)) || status=$rc
        summary+=$'\n'"${label}requirements $requirements: exit $rc"
    elif [[ -n "$suite" ]]; then
        rc=0
        "${conformance[@]}" server --suite "$suite" "${common[@]}" || rc=$?
        ((status != 0)) || status=$rc
        summary+=$'\n'"${label}suite $suite: exit $rc"
    else
        for s in "${scenarios[@]}"; do
            echo "=== $s ==="
            rc=0
            "${conformance[@]}" server --scenario "$s" "${common[@]}" || rc=$?
            ((rc == 0)) || status=1
            # tally the checks this run saved: <output-dir>/server-<scenario>-<timestamp>/checks.json
            checks=$(ls -d "$output_dir/server-$s-"*/ 2>/dev/null | sort | tail -n 1)checks.json
            tally=$(node -e 'const c = require(process.argv[1]);
                const n = (s) => c.filter((x) => x.status === s).length;
                console.log(`${n("SUCCESS")} ${n("FAILURE")} ${n("WARNING")}`);' "$checks" \
                2>/dev/null || echo "? ? ?")
            read -r passed failed warned <<<"$tally"
            if [[ "$failed" == 0 && "$rc" == 0 ]]; then verdict=PASS
            elif ((rc == 0)); then verdict="FAIL (expected: baseline)"
            else verdict=FAIL; fi
            summary+=$'\n'"$label$verdict $s: $passed passed, $failed failed, $warned warnings"
        done
    fi
done

echo
echo "=== conformance $CONFORMANCE_VERSION against $url: $((SECONDS - started)) s ==="
echo "${summary#$'\n'}"
echo "checks: $output_dir"
exit "$status"
