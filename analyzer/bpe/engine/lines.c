/*
 * Lines of UTF-8 read in compiled code: the counting pass hands the engine a block of bytes,
 * never a Python string per document. `utf8_lines` finds the documents of a block of whole
 * lines exactly as analyzer/corpus/streams.py `_plain_lines` does (a line a document, a
 * carriage return before its break dropped, a line that is empty or all whitespace no
 * document), and checks the UTF-8 as Python's strict decoder does: a block that is not
 * UTF-8 is refused whole, and Python reads it again line by line to say (or skip) which line.
 */

#include "engine.h"

#include <string.h>

/* One code point of strict UTF-8 at data[*i] (no overlong form, no surrogate, at most
   U+10FFFF), *i moved past it; UINT32_MAX when the bytes there are not UTF-8. */
static inline int continues(uint8_t b) { return (b & 0xC0) == 0x80; }

static inline uint32_t next_code_point(const uint8_t *data, size_t n, size_t *i) {
    size_t k = *i;
    uint32_t b = data[k];
    if (b < 0x80) {
        *i = k + 1;
        return b;
    }
    if (b < 0xC2) return UINT32_MAX; /* a byte that continues, or an overlong lead */
    if (b < 0xE0) {
        if (k + 1 >= n || !continues(data[k + 1])) return UINT32_MAX;
        *i = k + 2;
        return (b & 0x1F) << 6 | (data[k + 1] & 0x3F);
    }
    if (b < 0xF0) {
        if (k + 2 >= n || !continues(data[k + 1]) || !continues(data[k + 2])) return UINT32_MAX;
        uint32_t c = (b & 0x0F) << 12 | (uint32_t)(data[k + 1] & 0x3F) << 6 | (data[k + 2] & 0x3F);
        if (c < 0x800 || (c >= 0xD800 && c < 0xE000)) return UINT32_MAX; /* overlong, surrogate */
        *i = k + 3;
        return c;
    }
    if (b > 0xF4 || k + 3 >= n || !continues(data[k + 1]) || !continues(data[k + 2])
        || !continues(data[k + 3]))
        return UINT32_MAX;
    uint32_t c = (b & 0x07) << 18 | (uint32_t)(data[k + 1] & 0x3F) << 12
                 | (uint32_t)(data[k + 2] & 0x3F) << 6 | (data[k + 3] & 0x3F);
    if (c < 0x10000 || c > 0x10FFFF) return UINT32_MAX; /* overlong, beyond Unicode */
    *i = k + 4;
    return c;
}

/* Python's str.isspace: bidirectional class WS, B or S, or category Zs (tests/test_sources.py
   checks it against Python on every code point). */
static inline int is_space(uint32_t c) {
    if (c < 0x80) return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20);
    return c == 0x85 || c == 0xA0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028
           || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

/* Whether [i, end) is strict UTF-8 (a code point may not run past `end`): eight ASCII bytes
   at a time, the rest one code point at a time. */
static int valid(const uint8_t *data, size_t i, size_t end) {
    while (i < end) {
        if (i + 8 <= end) {
            uint64_t word;
            memcpy(&word, data + i, 8);
            if (!(word & 0x8080808080808080ull)) {
                i += 8;
                continue;
            }
        }
        if (data[i] < 0x80) i++;
        else if (next_code_point(data, end, &i) == UINT32_MAX) return 0;
    }
    return 1;
}

ptrdiff_t utf8_lines(const uint8_t *data, size_t n, int64_t *starts, int64_t *ends,
                     size_t *characters) {
    size_t n_docs = 0, i = 0, kept = 0; /* kept: bytes of the documents */
    size_t continuations = 0;           /* of their bytes, those that continue a code point */
    while (i < n) {
        const uint8_t *line_break = memchr(data + i, '\n', n - i);
        if (!line_break) break; /* not a whole line: the caller gives whole lines only */
        size_t start = i, end = (size_t)(line_break - data);
        i = end + 1;
        if (!valid(data, start, end)) return -1;
        if (end > start && data[end - 1] == '\r') end--;
        int blank = 1; /* nothing but whitespace (most lines are found not blank at once) */
        for (size_t k = start; blank && k < end;) blank = is_space(next_code_point(data, end, &k));
        if (blank) continue;
        starts[n_docs] = (int64_t)start;
        ends[n_docs] = (int64_t)end;
        n_docs++;
        kept += end - start;
        for (size_t k = start; k < end; k++) continuations += (data[k] & 0xC0) == 0x80;
    }
    *characters = kept - continuations;
    return (ptrdiff_t)n_docs;
}

uint32_t utf8_widest(const uint8_t *data, size_t n, size_t *points) {
    size_t i = 0, m = 0;
    uint32_t widest = 0;
    while (i < n) {
        uint32_t c = next_code_point(data, n, &i);
        if (c == UINT32_MAX) return UINT32_MAX;
        if (c > widest) widest = c;
        m++;
    }
    *points = m;
    return widest;
}

void utf8_decode_kind(const uint8_t *data, size_t n, int kind, void *out) {
    for (size_t i = 0, m = 0; i < n; m++) {
        uint32_t c = next_code_point(data, n, &i);
        if (kind == 1) ((uint8_t *)out)[m] = (uint8_t)c;
        else if (kind == 2) ((uint16_t *)out)[m] = (uint16_t)c;
        else ((uint32_t *)out)[m] = c;
    }
}
