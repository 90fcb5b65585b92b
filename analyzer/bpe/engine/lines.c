/*
 * Lines of UTF-8 read in compiled code: the counting pass hands the engine a block of bytes,
 * never a Python string per document. `utf8_lines` finds the documents of a block of whole
 * lines exactly as analyzer/corpus/streams.py `_plain_lines` does (a line a document, a
 * carriage return before its break dropped, a line that is empty or all whitespace no
 * document), and checks the UTF-8 as Python's strict decoder does: a block that is not
 * UTF-8 is refused whole, and Python reads it again line by line to say (or skip) which line.
 */

#include "engine.h"

/* One code point of strict UTF-8 at data[*i] (no overlong form, no surrogate, at most
   U+10FFFF), *i moved past it; UINT32_MAX when the bytes there are not UTF-8. */
static inline uint32_t next_code_point(const uint8_t *data, size_t n, size_t *i) {
    size_t k = *i;
    uint32_t b = data[k];
    if (b < 0x80) {
        *i = k + 1;
        return b;
    }
    uint32_t c;
    size_t more;
    uint8_t low = 0x80, high = 0xBF; /* the second byte's range, narrowed to refuse overlong forms */
    if (b >= 0xC2 && b <= 0xDF) c = b & 0x1F, more = 1;
    else if (b >= 0xE0 && b <= 0xEF) {
        c = b & 0x0F, more = 2;
        if (b == 0xE0) low = 0xA0;
        if (b == 0xED) high = 0x9F; /* U+D800..U+DFFF: surrogates */
    } else if (b >= 0xF0 && b <= 0xF4) {
        c = b & 0x07, more = 3;
        if (b == 0xF0) low = 0x90;
        if (b == 0xF4) high = 0x8F; /* above U+10FFFF */
    } else return UINT32_MAX;
    if (k + more >= n) return UINT32_MAX; /* cut short */
    for (size_t m = 1; m <= more; m++) {
        uint8_t next = data[k + m];
        if (next < (m == 1 ? low : 0x80) || next > (m == 1 ? high : 0xBF)) return UINT32_MAX;
        c = c << 6 | (next & 0x3F);
    }
    *i = k + more + 1;
    return c;
}

/* Python's str.isspace: bidirectional class WS, B or S, or category Zs (tests/test_sources.py
   checks it against Python on every code point). */
static inline int is_space(uint32_t c) {
    if (c < 0x80) return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20);
    return c == 0x85 || c == 0xA0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028
           || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

ptrdiff_t utf8_lines(const uint8_t *data, size_t n, int64_t *starts, int64_t *ends,
                     size_t *characters) {
    size_t n_docs = 0, i = 0;
    *characters = 0;
    while (i < n) {
        size_t start = i, length = 0;
        int blank = 1;
        while (i < n && data[i] != '\n') {
            uint32_t c = next_code_point(data, n, &i);
            if (c == UINT32_MAX) return -1;
            if (blank && !is_space(c)) blank = 0;
            length++;
        }
        size_t end = i;
        if (i == n) break; /* not a whole line: the caller gives whole lines only */
        i++;
        if (end > start && data[end - 1] == '\r') end--, length--;
        if (blank) continue; /* empty, or whitespace only (a dropped '\r' is whitespace too) */
        starts[n_docs] = (int64_t)start;
        ends[n_docs] = (int64_t)end;
        n_docs++;
        *characters += length;
    }
    return (ptrdiff_t)n_docs;
}

size_t utf8_decode(const uint8_t *data, size_t n, uint32_t *out) {
    size_t i = 0, m = 0;
    while (i < n) {
        uint32_t c = next_code_point(data, n, &i);
        if (c == UINT32_MAX) return SIZE_MAX;
        if (out) out[m] = c;
        m++;
    }
    return m;
}
