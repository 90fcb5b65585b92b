/* The positions' keys sorted (the seeds' batches, the piece index): a most-significant-byte
   radix sort in place, as compare_positions orders them. */

#include <stdlib.h>

#include "unigram.h"

static int compare_positions(const void *a, const void *b) {
    const Position *x = a, *y = b;
    if (x->hi != y->hi) return x->hi < y->hi ? -1 : 1;
    if (x->lo != y->lo) return x->lo < y->lo ? -1 : 1;
    return (x->len > y->len) - (x->len < y->len);
}

/* The bin of a key at byte `depth` (its first `depth` bytes known equal to its neighbours'):
   0 when it ends there, else 1 + the byte. Bins in order are the keys' order (a prefix first),
   the order compare_positions gives: zero padding past the end ties with a real 0 byte, and
   the length then puts the shorter key first, as its bin 0 does. */
static inline int bin_at(const Position *p, uint32_t depth) {
    if (p->len <= depth) return 0;
    return 1 + (int)(depth < 8 ? (p->hi >> (56 - 8 * depth)) & 0xFF : (p->lo >> (56 - 8 * (depth - 8))) & 0xFF);
}

/* positions[0..n), whose keys share their first `depth` bytes, sorted by their keys (as
   compare_positions orders them: the same order qsort gave). Most significant byte first, in
   place (American flag sort: each key swapped into its bin's next free place); a few keys by
   insertion. Keys that are equal may come in any order: the scan reads their keys and sums
   their counts, and gives the same runs in every order. */
void radix_sort(Position *positions, size_t n, uint32_t depth, uint64_t *work) {
    while (n > 1) {
        *work += n;
        if (n <= 24) {
            for (size_t i = 1; i < n; i++) {
                Position x = positions[i];
                size_t j = i;
                for (; j > 0 && compare_positions(&positions[j - 1], &x) > 0; j--)
                    positions[j] = positions[j - 1];
                positions[j] = x;
            }
            return;
        }
        if (depth >= MAX_PIECE) return;  /* 16 equal bytes: equal keys */
        size_t count[257] = {0}, next[257], end[257];
        for (size_t i = 0; i < n; i++) count[bin_at(&positions[i], depth)]++;
        size_t sum = 0;
        for (int b = 0; b < 257; b++) {
            next[b] = sum;
            sum += count[b];
            end[b] = sum;
        }
        for (int b = 0; b < 257; b++)
            while (next[b] < end[b]) {
                Position x = positions[next[b]];
                int c;
                while ((c = bin_at(&x, depth)) != b) {  /* x to its bin; carry what was there */
                    Position y = positions[next[c]];
                    positions[next[c]++] = x;
                    x = y;
                }
                positions[next[b]++] = x;
            }
        /* Bin 0 holds keys that end here (all equal); each byte's bin is sorted further, the
           largest by this loop (no deeper recursion for it), the others by a call. */
        int largest = 1;
        for (int b = 2; b < 257; b++)
            if (count[b] > count[largest]) largest = b;
        for (int b = 1; b < 257; b++)
            if (b != largest && count[b] > 1)
                radix_sort(positions + end[b] - count[b], count[b], depth + 1, work);
        positions += end[largest] - count[largest];
        n = count[largest];
        depth++;
    }
}

void sort_positions(Position *positions, size_t n, uint32_t depth) {
    uint64_t work = 0;
    radix_sort(positions, n, depth, &work);
}
