#ifndef HAUL_SCAN_H
#define HAUL_SCAN_H

// Byte scanners for the HTTP head parser, 16 bytes per step with SSE2 (the x86-64 baseline). They are
// `static inline` so that Swift callers get them inlined; elsewhere the scalar loops below are used.
#include <stddef.h>
#include <stdint.h>

#if defined(__SSE2__)
#include <emmintrin.h>

/// Lanes of `v` inside [lo, hi] (unsigned).
static inline __m128i haul_in_range(__m128i v, unsigned char lo, unsigned char hi) {
    __m128i shifted = _mm_sub_epi8(v, _mm_set1_epi8((char)lo));
    return _mm_cmpeq_epi8(_mm_min_epu8(shifted, _mm_set1_epi8((char)(hi - lo))), shifted);
}
#endif

/// Index of the first byte in p[0..<n] that cannot be part of a field value (a control byte other than
/// HTAB, or DEL), or n. HTAB is reported too; the caller steps over it.
static inline size_t haul_scan_field_content(const uint8_t *p, size_t n) {
    size_t i = 0;
#if defined(__SSE2__)
    const __m128i del = _mm_set1_epi8(0x7F);
    for (; i + 16 <= n; i += 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)(p + i));
        // Below 0x20 unsigned: min(v, 0x1F) == v.
        __m128i control = _mm_cmpeq_epi8(_mm_min_epu8(v, _mm_set1_epi8(0x1F)), v);
        __m128i bad = _mm_or_si128(control, _mm_cmpeq_epi8(v, del));
        int mask = _mm_movemask_epi8(bad);
        if (mask) return i + (size_t)__builtin_ctz((unsigned)mask);
    }
#endif
    for (; i < n; i++) {
        uint8_t b = p[i];
        if (b < 0x20 || b == 0x7F) return i;
    }
    return n;
}

#if defined(__SSE2__)
/// Bit k set when v's byte k is a control byte or DEL.
static inline unsigned haul_control_bits16(__m128i v) {
    __m128i control = _mm_cmpeq_epi8(_mm_min_epu8(v, _mm_set1_epi8(0x1F)), v);
    return (unsigned)_mm_movemask_epi8(_mm_or_si128(control, _mm_cmpeq_epi8(v, _mm_set1_epi8(0x7F))));
}
#endif

/// `haul_control_mask64` for a window that runs past `end`: bytes from `end` on count as not control.
__attribute__((noinline)) static uint64_t haul_control_mask64_tail(const uint8_t *start, size_t offset, size_t end) {
    uint64_t mask = 0;
    size_t at = offset;
#if defined(__SSE2__)
    for (; at + 16 <= end; at += 16) {
        mask |= (uint64_t)haul_control_bits16(_mm_loadu_si128((const __m128i *)(start + at))) << (at - offset);
    }
    if (at < end && end >= 16) {
        // The last, partial block: load the 16 bytes that end at `end` and keep the lanes from `at` on.
        unsigned bits = haul_control_bits16(_mm_loadu_si128((const __m128i *)(start + end - 16)));
        return mask | (uint64_t)(bits >> (16 - (end - at))) << (at - offset);
    }
#endif
    for (; at < end; at++) {
        if (start[at] < 0x20 || start[at] == 0x7F) mask |= (uint64_t)1 << (at - offset);
    }
    return mask;
}

/// Bit k set when start[offset + k] is a control byte (below 0x20, which includes CR, LF and HTAB) or DEL,
/// for k in 0..<64. Bytes at and after `end` count as not control and are never read. The head parser finds
/// the line ends of 64 bytes with this one pass and then walks the bits, so that the lines' scans do not
/// wait on each other.
static inline uint64_t haul_control_mask64(const uint8_t *start, size_t offset, size_t end) {
#if defined(__SSE2__)
    if (__builtin_expect(offset + 64 <= end, 1)) {
        const uint8_t *p = start + offset;
        uint64_t b0 = haul_control_bits16(_mm_loadu_si128((const __m128i *)p));
        uint64_t b1 = haul_control_bits16(_mm_loadu_si128((const __m128i *)(p + 16)));
        uint64_t b2 = haul_control_bits16(_mm_loadu_si128((const __m128i *)(p + 32)));
        uint64_t b3 = haul_control_bits16(_mm_loadu_si128((const __m128i *)(p + 48)));
        return b0 | b1 << 16 | b2 << 32 | b3 << 48;
    }
#endif
    return haul_control_mask64_tail(start, offset, end);
}

/// Index of the first byte in p[0..<n] that is not an RFC 9110 tchar, or n.
static inline size_t haul_scan_token(const uint8_t *p, size_t n, const uint8_t *token_table) {
    size_t i = 0;
#if defined(__SSE2__)
    // Field names are nearly always letters, digits and '-': test for those alone (half the work of the
    // full tchar test) and take the full test only from a byte outside them that is still a token byte.
    for (; i + 16 <= n; i += 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)(p + i));
        // OR 0x20 folds A-Z onto a-z and moves no other byte into a-z.
        __m128i common = haul_in_range(_mm_or_si128(v, _mm_set1_epi8(0x20)), 'a', 'z');
        common = _mm_or_si128(common, haul_in_range(v, '0', '9'));
        common = _mm_or_si128(common, _mm_cmpeq_epi8(v, _mm_set1_epi8('-')));
        unsigned other = (unsigned)_mm_movemask_epi8(common) ^ 0xFFFFu;
        if (other) {
            size_t stop = i + (size_t)__builtin_ctz(other);
            if (p[stop] == ':' || !(token_table[p[stop]] & 1)) return stop;
            i = stop;
            break;
        }
    }
    for (; i + 16 <= n; i += 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)(p + i));
        // tchar is VCHAR (0x21-0x7E) minus the delimiters "(),/:;<=>?@[\]{}
        __m128i bad = _mm_xor_si128(haul_in_range(v, 0x21, 0x7E), _mm_set1_epi8((char)0xFF));
        bad = _mm_or_si128(bad, _mm_cmpeq_epi8(v, _mm_set1_epi8('"')));
        bad = _mm_or_si128(bad, haul_in_range(v, '(', ')'));
        bad = _mm_or_si128(bad, _mm_cmpeq_epi8(v, _mm_set1_epi8(',')));
        bad = _mm_or_si128(bad, _mm_cmpeq_epi8(v, _mm_set1_epi8('/')));
        bad = _mm_or_si128(bad, haul_in_range(v, ':', '@'));
        bad = _mm_or_si128(bad, haul_in_range(v, '[', ']'));
        bad = _mm_or_si128(bad, _mm_cmpeq_epi8(v, _mm_set1_epi8('{')));
        bad = _mm_or_si128(bad, _mm_cmpeq_epi8(v, _mm_set1_epi8('}')));
        int mask = _mm_movemask_epi8(bad);
        if (mask) return i + (size_t)__builtin_ctz((unsigned)mask);
    }
#endif
    for (; i < n; i++) {
        if (!(token_table[p[i]] & 1)) return i;
    }
    return n;
}

#endif
