#ifndef HAUL_BENCH_PICO_H
#define HAUL_BENCH_PICO_H

// picohttpparser (github.com/h2o/picohttpparser at f8326098f63eefabfa2b6ec595d90e9ed5ed958a, MIT), built
// only into the parser benchmark as a same-run reference. Never linked into Haul's libraries.
#include <stddef.h>

/// Parses a response head with phr_parse_response compiled for the x86-64 baseline (SSE2: pico's scalar
/// loops), as SwiftPM compiles C by default. Returns pico's result (head length, -1 error, -2 incomplete);
/// `status` and `header_count` receive the status code and the number of header fields.
int haul_bench_pico_parse_response(const char *buf, size_t len, int *status, size_t *header_count);

/// The same with pico's SSE4.2 scanners (`pcmpestri`), as h2o builds it; call only when
/// `haul_bench_pico_has_sse42()` says the CPU has SSE4.2.
int haul_bench_pico_parse_response_sse42(const char *buf, size_t len, int *status, size_t *header_count);
int haul_bench_pico_has_sse42(void);

#endif
