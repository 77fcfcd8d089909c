// picohttpparser with its SSE4.2 scanners, without a global -msse4.2 (SwiftPM would need unsafeFlags): every
// function of this file gets the sse4.2 target attribute, and __SSE4_2__ selects pico's SIMD paths.
#if defined(__x86_64__) && defined(__clang__)
#include <x86intrin.h>
#define phr_parse_request haul_pico_sse42_parse_request
#define phr_parse_response haul_pico_sse42_parse_response
#define phr_parse_headers haul_pico_sse42_parse_headers
#define phr_decode_chunked haul_pico_sse42_decode_chunked
#define phr_decode_chunked_is_in_data haul_pico_sse42_decode_chunked_is_in_data
#ifndef __SSE4_2__
#define __SSE4_2__ 1
#endif
#pragma clang attribute push(__attribute__((target("sse4.2"))), apply_to = function)
#include "picohttpparser.c"
#include "CPicoHTTPParser.h"

int haul_bench_pico_parse_response_sse42(const char *buf, size_t len, int *status, size_t *header_count) {
    struct phr_header headers[64];
    size_t count = 64, message_length = 0;
    int minor = 0;
    const char *message = NULL;
    int result = phr_parse_response(buf, len, &minor, status, &message, &message_length, headers, &count, 0);
    *header_count = count;
    return result;
}
#pragma clang attribute pop

int haul_bench_pico_has_sse42(void) { return __builtin_cpu_supports("sse4.2"); }
#else
#include "CPicoHTTPParser.h"
int haul_bench_pico_parse_response_sse42(const char *buf, size_t len, int *status, size_t *header_count) {
    return haul_bench_pico_parse_response(buf, len, status, header_count);
}
int haul_bench_pico_has_sse42(void) { return 0; }
#endif
