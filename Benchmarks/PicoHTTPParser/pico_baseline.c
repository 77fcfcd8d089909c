// picohttpparser compiled for the x86-64 baseline, its public names prefixed so that both builds link.
#define phr_parse_request haul_pico_base_parse_request
#define phr_parse_response haul_pico_base_parse_response
#define phr_parse_headers haul_pico_base_parse_headers
#define phr_decode_chunked haul_pico_base_decode_chunked
#define phr_decode_chunked_is_in_data haul_pico_base_decode_chunked_is_in_data
#include "picohttpparser.c"
#include "CPicoHTTPParser.h"

int haul_bench_pico_parse_response(const char *buf, size_t len, int *status, size_t *header_count) {
    struct phr_header headers[64];
    size_t count = 64, message_length = 0;
    int minor = 0;
    const char *message = NULL;
    int result = phr_parse_response(buf, len, &minor, status, &message, &message_length, headers, &count, 0);
    *header_count = count;
    return result;
}
