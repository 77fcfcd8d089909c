#!/usr/bin/env bash
# The one test command (README and .ci/run call exactly this). It installs what the tests need on a fresh
# machine, builds everything, and runs every test with plain `swift test` (whose closing lines CI reads).
set -euo pipefail
cd "$(dirname "$0")/.."

# System packages the build and the integration tests use: OpenSSL headers for the COpenSSL module, the
# openssl CLI (tests generate their own CA and run s_server), nginx (the real-server integration tests),
# curl (the test-server tests compare nginx against it), squid, stunnel4 and microsocks (the proxy tests).
needed=()
dpkg -s libssl-dev >/dev/null 2>&1 || needed+=(libssl-dev)
command -v openssl >/dev/null 2>&1 || needed+=(openssl)
command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] || needed+=(nginx)
command -v pkg-config >/dev/null 2>&1 || needed+=(pkg-config)
command -v curl >/dev/null 2>&1 || needed+=(curl)   # the test-server tests check nginx with curl
# The proxy tests start their own Squid (HTTP proxy, CONNECT, Basic auth), stunnel (an https:// proxy in front of
# Squid) and microsocks (SOCKS5 with a password) on loopback ports; they never use the system services.
[ -x /usr/sbin/squid ] || needed+=(squid)
[ -x /usr/bin/stunnel4 ] || needed+=(stunnel4)
[ -x /usr/bin/microsocks ] || needed+=(microsocks)
if [ ${#needed[@]} -gt 0 ]; then
    echo "installing: ${needed[*]}"
    SUDO=""
    [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${needed[@]}" >/dev/null
fi

swift build --build-tests
# An app that embeds Haul (Tests/EmbeddingPackage): a package of its own, in Swift 6 mode, that uses the type
# names of SwiftNIO, AsyncHTTPClient and swift-http-types unqualified next to Haul's API. It compiles only while
# `import Haul` exports none of those names. Built, not run (it has nothing to run), only its one target, in a
# scratch directory of its own under .build/ (the first build compiles Haul's modules again: about a minute).
# SwiftPM keeps the build plan of a path dependency while the app's manifest is unchanged, so a source file
# added to Haul since the last run was left out (HaulIO failed with "no member" for the new file's functions).
# Dropping the cached plan makes it plan again; the compiled objects stay, so this costs a second or two.
rm -f .build/embedding/debug.yaml .build/embedding/*/debug/description.json
swift build --package-path Tests/EmbeddingPackage --scratch-path .build/embedding --target EmbeddingApp
# One test at a time: the integration tests time real downloads and pause them mid-way, and with suites in
# parallel on two cores, heavy fixtures (hashing 256 MiB in a debug build) starve the shared cooperative
# pool for seconds. Serial, the suite takes about a minute and its results do not depend on the machine's load.
# The tests get a temporary directory of their own (every fixture honours TMPDIR), so that what a run leaves
# behind is seen: anything of ours (haul-*) still there afterwards fails the run, and so does a server the tests
# started that is still running. (SwiftPM's and the compiler's own entries, e.g. TemporaryDirectory.*, are not
# ours.)
run_tmp=$(mktemp -d "${TMPDIR:-/tmp}/haul-test-run.XXXXXX")
# Searchable by other users, as /tmp is: squid drops to its own user, and a daemon test connects as nobody.
chmod 0755 "$run_tmp"
set +e
TMPDIR="$run_tmp" swift test --no-parallel
status=$?
set -e

# The servers the tests start (nginx, squid, stunnel, microsocks, openssl s_server, haul daemons) inherit the run's
# TMPDIR or name a path inside it; the fixtures stop them, and their watchdogs stop them moments after the test
# process is gone. One still running ten seconds later is a leak: it is named, stopped, and fails the run.
run_processes() {
    local pid
    for pid in $(ls /proc | grep -E '^[0-9]+$'); do
        [ "$pid" = "$$" ] && continue
        if tr '\0' '\n' 2>/dev/null < "/proc/$pid/environ" | grep -qxF "TMPDIR=$run_tmp" \
            || tr '\0' ' ' 2>/dev/null < "/proc/$pid/cmdline" | grep -qF "$run_tmp/"; then
            echo "$pid"
        fi
    done
}
running=$(run_processes)
for _ in $(seq 50); do
    [ -z "$running" ] && break
    sleep 0.2   # polls for the watchdogs to finish stopping what the tests started
    running=$(run_processes)
done
if [ -n "$running" ]; then
    echo "the tests left these processes running:" >&2
    for pid in $running; do
        echo "  $pid $(tr '\0' ' ' < "/proc/$pid/cmdline" 2>/dev/null)" >&2
        kill -KILL "$pid" 2>/dev/null || true
    done
fi

left=$(find "$run_tmp" -mindepth 1 -maxdepth 1 -name 'haul-*' -printf '%f\n' | sort)
rm -rf "$run_tmp"
if [ -n "$left" ]; then
    echo "the tests left these behind in the temporary directory:" >&2
    echo "$left" >&2
    exit 1
fi
[ -z "$running" ] || exit 1
exit $status
