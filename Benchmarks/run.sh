#!/usr/bin/env bash
# Benchmarks Haul side by side with curl, wget, wget2, aria2c and axel on this machine, in one run.
# Installs what is missing (the peers, nginx, GNU time, gnuplot), builds Haul and the parser benchmark in
# release mode, starts its own nginx on 127.0.0.1 (HTTP and HTTPS with a CA it generates) and, for the
# throttled scenario (c), the per-connection pacer in front of it (Benchmarks/pacer.c, compiled with cc into
# the temporary directory, stopped after (c); three of them at different rates for the mirrors of (m)), creates the test data in a temporary directory, runs every
# scenario with tools interleaved, verifies each output's SHA-256, measures in (f) also the Swift API
# (Benchmarks/APIBenchmark) and each tool's syscalls and CPU per small file (strace -c -f, perf stat), prints
# markdown tables and the issue 16 targets (met / not met), saves the raw results as JSON (Benchmarks/results/, not in git) and draws the
# charts into docs/benchmarks/*.svg. It stops only the processes it started and removes its temporary
# directory also on failure and Ctrl-C.
#
# Usage: Benchmarks/run.sh [--rounds N] [--scenarios a,b,c,d,e,f,g,h,m,p] [--size-mib N] [--small-files N]
#                          [--many-files N] [--huge-gib N] [--huge-rounds N] [--mirror-mib N] [--haul-before BIN]
#                          [--resume-signal KILL|INT]
#                          [--no-charts] [--charts-dir DIR] [--results-dir DIR]
#        Benchmarks/run.sh --charts-only Benchmarks/results/latest.json   (tables and charts of a saved run)
# (see Benchmarks/bench.py and docs/benchmarks.md; HAUL_SCRATCH=DIR builds Haul with --scratch-path DIR;
# TMPDIR=DIR puts the test data elsewhere: (g) needs twice --huge-gib free)
set -euo pipefail
cd "$(dirname "$0")/.."

charts_only=0
scenarios="a,b,c,d,e,f,g,h,m,p"
previous=""
for argument in "$@"; do
    case "$argument" in
        --charts-only|--charts-only=*) charts_only=1 ;;
        --scenarios=*) scenarios="${argument#--scenarios=}" ;;
    esac
    [ "$previous" = "--scenarios" ] && scenarios="$argument"
    previous="$argument"
done

needed=()
if [ "$charts_only" -eq 0 ]; then
    for tool in nginx aria2c axel wget wget2 curl openssl strace perf; do
        command -v "$tool" >/dev/null 2>&1 || [ -x "/usr/sbin/$tool" ] || needed+=("$tool")
    done
    [ -x /usr/bin/time ] || needed+=(time)
    # The release link of haul takes libstdc++ statically (Package.swift): make sure the archive is there.
    case "$(gcc -print-file-name=libstdc++.a 2>/dev/null)" in
        /*) ;;
        *) needed+=("libstdc++-$(gcc -dumpversion 2>/dev/null | cut -d. -f1)-dev") ;;
    esac
fi
command -v gnuplot >/dev/null 2>&1 || needed+=(gnuplot)
if [ ${#needed[@]} -gt 0 ]; then
    packages=()
    for tool in "${needed[@]}"; do
        case "$tool" in aria2c) packages+=(aria2) ;; gnuplot) packages+=(gnuplot-nox) ;; perf) packages+=(linux-perf) ;; *) packages+=("$tool") ;; esac
    done
    echo "installing: ${packages[*]}" >&2
    SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${packages[@]}" >/dev/null
fi

if [ "$charts_only" -eq 1 ]; then
    exec python3 Benchmarks/bench.py "$@"
fi

# --static-swift-stdlib: the Swift runtime linked into the binary, not loaded at start (-2.2 MiB peak RSS on
# every run, see docs/benchmarks.md). Only OpenSSL, libc and the C++ runtime stay dynamic. The parser
# benchmark is built with the same flags, so that it shares the build (it only measures the codec).
echo "building haul (release, --static-swift-stdlib)..." >&2
scratch=(); [ -n "${HAUL_SCRATCH:-}" ] && scratch=(--scratch-path "$HAUL_SCRATCH")
build=(swift build -c release --static-swift-stdlib "${scratch[@]}")
"${build[@]}" --product haul >&2
bin="$("${build[@]}" --show-bin-path)"
parser=()
if [[ ",$scenarios," == *",p,"* ]]; then
    echo "building haul-parser-benchmark (release)..." >&2
    # A parser benchmark that does not build is reported in the targets table, not fatal to the run.
    if "${build[@]}" --product haul-parser-benchmark >&2; then
        parser=(--parser-benchmark "$bin/haul-parser-benchmark")
    else
        echo "haul-parser-benchmark did not build; (p) is skipped" >&2
    fi
fi
api=()
if [[ ",$scenarios," == *",f,"* ]]; then
    # (f)'s Swift API rows: the same list through HaulClient from a TaskGroup (Benchmarks/APIBenchmark).
    echo "building haul-api-benchmark (release)..." >&2
    if "${build[@]}" --product haul-api-benchmark >&2; then
        api=(--api-benchmark "$bin/haul-api-benchmark")
    else
        echo "haul-api-benchmark did not build; (f) runs without its API rows" >&2
    fi
fi
exec python3 Benchmarks/bench.py --haul "$bin/haul" "${parser[@]}" "${api[@]}" "$@"
