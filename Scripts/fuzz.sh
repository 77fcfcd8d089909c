#!/usr/bin/env bash
# Builds every libFuzzer harness in Fuzz/ and runs each for SECONDS (default 30), two at a time.
# Usage: Scripts/fuzz.sh [SECONDS] [HARNESS...]
# Exits non-zero if any harness crashes; the crashing input is kept in Fuzz/artifacts/.
# The working corpus (Fuzz/corpus-work/, not committed) grows across runs, starting from Fuzz/Corpus/.
set -euo pipefail

seconds=${1:-30}
shift || true
root=$(cd "$(dirname "$0")/.." && pwd)
fuzz="$root/Fuzz"
all_harnesses=(FuzzResponseParser FuzzChunkedDecoder FuzzURL FuzzContentDisposition FuzzFieldValues FuzzJournal FuzzSessions FuzzProxySettings FuzzProxyReplies FuzzNetrc FuzzInputFile FuzzCodable FuzzMetalink)
harnesses=("$@")
[ ${#harnesses[@]} -gt 0 ] || harnesses=("${all_harnesses[@]}")
jobs=${FUZZ_JOBS:-$(nproc)}

declare -A dictionary=([FuzzResponseParser]=http.dict [FuzzChunkedDecoder]=http.dict [FuzzURL]=url.dict
                      [FuzzProxyReplies]=http.dict [FuzzNetrc]=netrc.dict
                      [FuzzMetalink]=metalink.dict)

echo "building fuzz harnesses (release, -sanitize=fuzzer,address)..."
# gold crashes on ASan-instrumented objects; lld links them.
(cd "$fuzz" && swift build -c release -Xswiftc -sanitize=fuzzer,address -Xswiftc -parse-as-library \
    -Xswiftc -use-ld=lld 2>&1 | tail -n 3)
bin=$(cd "$fuzz" && swift build -c release -Xswiftc -sanitize=fuzzer,address -Xswiftc -parse-as-library \
    -Xswiftc -use-ld=lld --show-bin-path)

mkdir -p "$fuzz/artifacts" "$fuzz/corpus-work"
run_one() {
    local name=$1 work="$fuzz/corpus-work/$1" log="$fuzz/artifacts/$1.log"
    mkdir -p "$work"
    cp -n "$fuzz/Corpus/$name"/* "$work"/ 2>/dev/null || true
    local dict=()
    [ -n "${dictionary[$name]:-}" ] && dict=("-dict=$fuzz/Dictionaries/${dictionary[$name]}")
    # The Swift runtime's crash backtracer stalls under ASan; libFuzzer prints its own stack.
    if SWIFT_BACKTRACE=enable=no "$bin/$name" "$work" "${dict[@]}" -max_total_time="$seconds" \
        -timeout=10 -rss_limit_mb=2048 -max_len=4096 -print_final_stats=1 \
        -artifact_prefix="$fuzz/artifacts/$name-" >"$log" 2>&1; then
        local execs per_second corpus
        execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo 0)
        per_second=$(grep -o 'exec/s: [0-9]*' "$log" | tail -n 1 | grep -o '[0-9]*$' || echo 0)
        corpus=$(ls "$work" | wc -l)
        printf '%-24s ok     %10s runs  %7s exec/s  corpus %5s files\n' "$name" "$execs" "$per_second" "$corpus"
    else
        printf '%-24s CRASH  see %s\n' "$name" "$log"
        grep -E 'ERROR|Fatal error|precondition|Test unit written' "$log" | head -n 5
        return 1
    fi
}

status=0
pids=()
names=()
for name in "${harnesses[@]}"; do
    run_one "$name" & pids+=($!); names+=("$name")
    if [ ${#pids[@]} -ge "$jobs" ]; then
        wait "${pids[0]}" || status=1
        pids=("${pids[@]:1}")
    fi
done
for pid in "${pids[@]}"; do wait "$pid" || status=1; done
exit $status
