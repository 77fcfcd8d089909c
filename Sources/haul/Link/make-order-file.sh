#!/bin/bash
# Regenerates haul.order, the linker's symbol ordering file for the release haul (see Package.swift).
#
# It runs a release haul under valgrind's callgrind through what a user does most (start, parse, a
# download with 1, 8 and 16 connections, a list, a failure, --help) and lists every function of the
# haul binary that ran, first the ones start-up runs. lld then places those functions next to each other,
# so that the pages the kernel maps around each page fault hold code that runs. Names that no longer exist
# are ignored by the linker, so a stale file costs memory, never correctness.
#
# Most of the Swift runtime, the standard library and each Swift module without -function-sections is one
# .text section per object, which moves whole, wherever its first listed function puts it; where those
# large sections land moves the peak RSS by a few hundred KiB either way. Measure before replacing the
# file (peak RSS of `haul -c16 --no-sync` on 1 GiB, /usr/bin/time -v, several runs): the committed one
# measured 9.3 MiB against 9.6 for one regenerated from the same code on 2026-11-24.
#
# Names that no longer exist can be pruned without a measurement, since the linker skips them anyway (the
# binary stays byte-identical, checked on 2026-11-26): keep the lines that `nm` of a release haul built
# from the same tree lists, in their order. Pruned so on 2026-11-26 (3,118 → 2,800 lines).
#
# Usage: make-order-file.sh HAUL URL-OF-A-FILE-OF-16-MIB-OR-MORE
# (for example http://127.0.0.1:8080/f.bin served by nginx). Needs valgrind.
set -euo pipefail
haul=$1
url=$2
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# valgrind 3.19 cannot read the DWARF 5 that lld writes; the symbol table is all it needs.
objcopy --strip-debug "$haul" "$work/haul"
run() {
    local name=$1
    shift
    (cd "$work" && valgrind --tool=callgrind --demangle=no --callgrind-out-file="$work/$name.out" \
        "$work/haul" "$@" >/dev/null 2>&1) || true
    rm -f "$work"/f.bin*
}
run version --version
run c16 -q -c16 --no-sync "$url" -o f.bin
run c1 -q -c1 "$url" -o f.bin
run c8 -c8 "$url" -o f.bin
printf '%s\n%s\n' "$url" "$url?second" > "$work/list.txt"
run list -q -i list.txt -j2 -d dl
run missing -q "${url%/*}/no-such-file" -o f.bin
run help --help
for name in version c16 c1 c8 list missing help; do
    callgrind_annotate --threshold=100 "$work/$name.out" 2>/dev/null | grep " \[$work/haul\]$" |
        sed -E 's/^ *[0-9,]+ \([ 0-9.]+%\)  [^:]*://; s/ \[[^]]*\]$//; s/'"'"'[0-9]+$//'
done | awk '!seen[$0]++' > "$here/haul.order"
wc -l "$here/haul.order"
