#!/usr/bin/env bash
# Benchmarks Haul side by side with curl, wget, aria2c and axel on this machine, in one run.
# Installs what is missing, builds Haul in release mode, starts its own nginx on 127.0.0.1 (HTTP and HTTPS
# with a CA it generates), creates the test data, runs every scenario with tools interleaved, verifies each
# output's SHA-256 and prints a markdown table. It stops only the processes it started.
#
# Usage: Benchmarks/run.sh [--rounds N] [--scenarios a,b,c,d,e] [--size-mib N] [--small-files N] [--resume-signal KILL|INT]
# (see Benchmarks/bench.py and docs/benchmarks.md; HAUL_SCRATCH=DIR builds Haul with --scratch-path DIR)
set -euo pipefail
cd "$(dirname "$0")/.."

needed=()
for tool in nginx aria2c axel wget curl openssl; do
    command -v "$tool" >/dev/null 2>&1 || [ -x "/usr/sbin/$tool" ] || needed+=("$tool")
done
[ -x /usr/bin/time ] || needed+=(time)
if [ ${#needed[@]} -gt 0 ]; then
    packages=()
    for tool in "${needed[@]}"; do
        case "$tool" in aria2c) packages+=(aria2) ;; *) packages+=("$tool") ;; esac
    done
    echo "installing: ${packages[*]}" >&2
    SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${packages[@]}" >/dev/null
fi

# --static-swift-stdlib: the Swift runtime linked into the binary, not loaded at start (-2.2 MiB peak RSS on
# every run, see docs/benchmarks.md). Only OpenSSL, libc and the C++ runtime stay dynamic.
echo "building haul (release, --static-swift-stdlib)..." >&2
scratch=(); [ -n "${HAUL_SCRATCH:-}" ] && scratch=(--scratch-path "$HAUL_SCRATCH")
build=(swift build -c release --static-swift-stdlib "${scratch[@]}")
"${build[@]}" --product haul >&2
exec python3 Benchmarks/bench.py --haul "$("${build[@]}" --show-bin-path)/haul" "$@"
