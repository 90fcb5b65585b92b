/* The seed model (reference: Trainer.seed): every byte that occurs, scored by its count; then
   the seed_size best substrings of 2..max bytes that occur at least twice (chunk counts
   applied) and are right-maximal (ending a chunk, or followed by two different bytes, or max
   long), scored by count x length.

   The reference counts every substring in a dictionary; here every position's key (its next
   max bytes, cut at the chunk's end) is sorted once, so each substring of length l is a run of
   neighbouring keys that share their first l bytes. One pass over the sorted keys closes each
   run when the next key's common prefix is shorter than l, with the run's summed counts. Within
   a run, keys that end at l come first and the others are in order of their byte at l, so the
   substring is right-maximal iff its first key ends there or its first and last keys differ at l.

   Memory stays bounded on a gigabyte of chunks: the keys are sorted in batches of buckets (by
   their first two bytes, which every run of two bytes or more shares, so no run spans two
   buckets), each batch filled by a pass over the chunks, at most t->seed_batch keys at a time (or one
   bucket, if bigger); and the best seed_size candidates are kept (with at most half as many
   again waiting to be selected among), not all of them. Every step runs on every thread:
   each counts and lays out the keys of its share of the chunks, then sorts and scans its
   share of a batch's buckets into its own best candidates (one more buffer of those per
   thread), offered to the first's at the end. */

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "unigram.h"

#define N_BUCKETS 65536

typedef struct {
    int64_t score;
    Key key;
} Candidate;

static Key key_of(const Position *p) {
    Key k = {p->hi, p->lo, p->len};
    return k;
}

/* -1 when a ranks before b: score descending, then bytes ascending. */
static int compare_candidates(const void *a, const void *b) {
    const Candidate *x = a, *y = b;
    if (x->score != y->score) return x->score > y->score ? -1 : 1;
    return key_compare(&x->key, &y->key);
}

/* Candidates a[0..n) sorted by compare_candidates: a quicksort (median of three, the smaller
   side by a call) with the comparison inlined, insertion sort for a few. The order is the
   keys' own (no two candidates have the same bytes), so any sort gives the same. */
static inline void swap_candidates(Candidate *a, Candidate *b) {
    Candidate swap = *a;
    *a = *b;
    *b = swap;
}

/* a[0..n) reordered so that a[lo .. n) holds no candidate better than any of a[0 .. lo) and
   a[lo] is the pivot's place: Hoare's partition around the median of three; the pivot's
   final index. */
static size_t partition_candidates(Candidate *a, size_t n) {
    const size_t mid = n / 2;
    if (compare_candidates(&a[mid], &a[0]) < 0) swap_candidates(&a[mid], &a[0]);
    if (compare_candidates(&a[n - 1], &a[mid]) < 0) {
        swap_candidates(&a[n - 1], &a[mid]);
        if (compare_candidates(&a[mid], &a[0]) < 0) swap_candidates(&a[mid], &a[0]);
    }
    swap_candidates(&a[0], &a[mid]);  /* the pivot at the front; a[n - 1] is not better */
    const Candidate pivot = a[0];
    size_t i = 0, j = n;
    for (;;) {
        do i++; while (i < n && compare_candidates(&a[i], &pivot) < 0);
        do j--; while (compare_candidates(&a[j], &pivot) > 0);
        if (i >= j) break;
        swap_candidates(&a[i], &a[j]);
    }
    swap_candidates(&a[0], &a[j]);
    return j;
}

static void insertion_sort_candidates(Candidate *a, size_t n) {
    for (size_t i = 1; i < n; i++) {
        Candidate x = a[i];
        size_t j = i;
        for (; j > 0 && compare_candidates(&a[j - 1], &x) > 0; j--) a[j] = a[j - 1];
        a[j] = x;
    }
}

static void sort_candidates(Candidate *a, size_t n, int depth) {
    while (n > 24) {
        if (depth-- == 0) {  /* unlucky pivots: the library's sort, n log n */
            qsort(a, n, sizeof *a, compare_candidates);
            return;
        }
        const size_t p = partition_candidates(a, n);
        if (p < n - 1 - p) {
            sort_candidates(a, p, depth);
            a += p + 1;
            n -= p + 1;
        } else {
            sort_candidates(a + p + 1, n - 1 - p, depth);
            n = p;
        }
    }
    insertion_sort_candidates(a, n);
}

/* a[0..n) reordered so that a[0..k) are the best k (in any order), a[k - 1] the worst of
   them (quickselect; 0 < k < n). */
static void select_candidates(Candidate *a, size_t n, size_t k) {
    int depth = 64;
    while (n > 24) {
        if (depth-- == 0) break;  /* unlucky pivots: sort what is left */
        const size_t p = partition_candidates(a, n);
        if (p + 1 == k) return;
        if (p + 1 < k) {
            a += p + 1;
            n -= p + 1;
            k -= p + 1;
        } else {
            n = p;  /* k <= p: the k best are among a[0..p) */
        }
    }
    sort_candidates(a, n, 128);
}

/* A part of the candidates to sort on a thread of its own. */
typedef struct {
    Candidate *items;
    size_t n;
} SortPart;

static void *sort_part(void *arg) {
    SortPart *part = arg;
    sort_candidates(part->items, part->n, 128);
    return NULL;
}

/* a[0..n) sorted on `threads` threads: cut by quickselect into parts that rank one after
   another (each the best of what is left), each part sorted on its own thread. */
static void sort_on_threads(Candidate *a, size_t n, int threads) {
    if (threads > MAX_THREADS) threads = MAX_THREADS;
    if (threads < 2 || n < 4096) {  /* too few to be worth a thread */
        sort_candidates(a, n, 128);
        return;
    }
    SortPart parts[MAX_THREADS];
    size_t first = 0;
    for (int i = 0; i < threads; i++) {
        const size_t last = i == threads - 1 ? n : n / (size_t)threads * (size_t)(i + 1);
        if (last < n) select_candidates(a + first, n - first, last - first);
        parts[i] = (SortPart){a + first, last - first};
        first = last;
    }
    on_threads(sort_part, parts, sizeof *parts, threads);
}

/* The best `cap` candidates. Offers are appended to a buffer of `room` > cap; when it is full,
   the best cap are selected, and from then on an offer that ranks after the worst of them
   (`bar`) is refused: cap better ones are held already, so it could never be kept. Every
   step is sequential through memory, where a heap of a million candidates misses the cache
   at every level of every offer. */
typedef struct {
    Candidate *items;
    size_t n, cap, room;
    int barred;
    Candidate bar;
} Best;

static void best_trim(Best *best) {
    if (best->n <= best->cap) return;
    select_candidates(best->items, best->n, best->cap);
    best->n = best->cap;
    best->bar = best->items[best->cap - 1];
    best->barred = 1;
}

static inline void best_offer(Best *best, const Candidate *c) {
    if (best->cap == 0 || (best->barred && compare_candidates(c, &best->bar) > 0)) return;
    best->items[best->n++] = *c;
    if (best->n == best->room) best_trim(best);
}

/* The bucket of the key at data[p] (two bytes or more): its first two bytes. */
static inline size_t bucket_at(const uint8_t *data, int64_t p) {
    return ((size_t)data[p] << 8) | data[p + 1];
}

static void scan_batch(const Position *positions, size_t n, const Chunks *c, uint32_t max, Best *best);

/* Sorting a batch's buckets apart and scanning them, on several threads, each share into its
   own best candidates (the order of the keys is theirs alone, and no run spans two buckets). */
typedef struct {
    Position *positions;
    const size_t *bounds;  /* bucket b is positions[bounds[b] - base .. bounds[b + 1] - base) */
    size_t base, first, last;
    const Chunks *chunks;
    uint32_t max;
    Best *best;
    uint64_t work;  /* keys binned and scanned */
} Buckets;

static void *sort_buckets(void *arg) {
    Buckets *b = arg;
    /* a bucket's keys share their first two bytes */
    for (size_t k = b->first; k < b->last; k++)
        if (b->bounds[k + 1] - b->bounds[k] > 1)
            radix_sort(b->positions + (b->bounds[k] - b->base), b->bounds[k + 1] - b->bounds[k], 2,
                       &b->work);
    b->work += (b->bounds[b->last] - b->bounds[b->first]) * b->max;  /* the scan's steps */
    scan_batch(b->positions + (b->bounds[b->first] - b->base), b->bounds[b->last] - b->bounds[b->first],
               b->chunks, b->max, b->best);
    return NULL;
}

/* One pass over a sorted batch closes every run: start[l] and sum[l] are the open run of depth
   l. Each right-maximal substring seen twice or more is offered to `best`. */
static void scan_batch(const Position *positions, size_t n, const Chunks *c, uint32_t max, Best *best) {
    size_t start[MAX_PIECE + 1] = {0};
    int64_t sum[MAX_PIECE + 1] = {0};
    if (n == 0) return;
    for (uint32_t l = 2; l <= max; l++) sum[l] = c->counts[positions[0].chunk];
    for (size_t j = 1; j <= n; j++) {
        uint32_t shared = j < n ? common_prefix(&positions[j - 1], &positions[j]) : 0;
        int64_t weight = j < n ? c->counts[positions[j].chunk] : 0;
        for (uint32_t l = 2; l <= max; l++) {
            if (shared >= l) {
                sum[l] += weight;
                continue;
            }
            const Key first = key_of(&positions[start[l]]), last = key_of(&positions[j - 1]);
            if (first.len >= l && sum[l] >= 2
                && (l == max || first.len == l || key_byte(first, l) != key_byte(last, l))) {
                Candidate candidate = {sum[l] * (int64_t)l, key_prefix(first, l)};
                best_offer(best, &candidate);
            }
            start[l] = j;
            sum[l] = weight;
        }
    }
}

/* A thread's chunks [first, last) while the keys are laid out: how many keys of each bucket
   they have (`count`), then where the next of each goes in the batch (`next`). */
typedef struct {
    const Chunks *c;
    size_t first, last;
    uint32_t max;
    size_t *count, *next;
    Position *positions;  /* the batch's, buckets [lo, hi) */
    size_t lo, hi;
} Layout;

static void *count_keys(void *arg) {
    Layout *l = arg;
    const Chunks *c = l->c;
    for (size_t k = l->first; k < l->last; k++)
        for (int64_t p = c->offsets[k]; p + 2 <= c->offsets[k + 1]; p++) l->count[bucket_at(c->data, p)]++;
    return NULL;
}

/* The keys of the thread's chunks that fall in the batch's buckets, each at its bucket's
   next place (the threads' places in a bucket follow one another, in chunk order). */
static void *place_keys(void *arg) {
    Layout *l = arg;
    const Chunks *c = l->c;
    const int64_t data_end = c->n ? c->offsets[c->n] : 0;
    for (size_t k = l->first; k < l->last; k++) {
        const int64_t end = c->offsets[k + 1];
        for (int64_t p = c->offsets[k]; p + 2 <= end; p++) {
            size_t b = bucket_at(c->data, p);
            if (b < l->lo || b >= l->hi) continue;
            Key key = {0, 0, 0};
            if (p + MAX_PIECE <= data_end) {  /* 16 bytes at once, cut to the key's length */
                uint64_t words[2];
                memcpy(words, c->data + p, sizeof words);
                const uint32_t len = end - p < (int64_t)l->max ? (uint32_t)(end - p) : l->max;
                const Key whole = {__builtin_bswap64(words[0]), __builtin_bswap64(words[1]), MAX_PIECE};
                key = key_prefix(whole, len);
            } else {
                for (int64_t q = p; q < end && key.len < l->max; q++) key = key_push(key, c->data[q]);
            }
            l->positions[l->next[b]++] = (Position){key.hi, key.lo, key.len, (uint32_t)k};
        }
    }
    return NULL;
}

/* The batch's buckets [lo, hi) sorted and scanned, share i's candidates offered to bests[i]. */
static uint64_t sort_batch(Position *positions, const size_t *bounds, size_t lo, size_t hi,
                           int threads, const Chunks *c, uint32_t max, Best *bests) {
    Buckets shares[MAX_THREADS];
    const size_t n = bounds[hi] - bounds[lo];
    size_t bucket = lo;
    for (int i = 0; i < threads; i++) {  /* about n / threads keys each */
        shares[i] = (Buckets){positions, bounds, bounds[lo], bucket, bucket, c, max, &bests[i], 0};
        size_t goal = bounds[lo] + n * (size_t)(i + 1) / (size_t)threads;
        while (bucket < hi && (i == threads - 1 || bounds[bucket + 1] <= goal)) bucket++;
        shares[i].last = bucket;
    }
    on_threads(sort_buckets, shares, sizeof *shares, threads);
    uint64_t work = 0;
    for (int i = 0; i < threads; i++) work += shares[i].work;
    return work;
}

/* Every key of two bytes or more, sorted and scanned batch by batch into bests[thread]; the
   keys counted and laid out on every thread too, each its share of the chunks (by bytes). The
   steps taken are added to *work. */
static const char *batches(const Training *t, const Chunks *c, uint32_t max, int threads, Best *bests,
                           uint64_t *work) {
    size_t *bounds = calloc(N_BUCKETS + 1, sizeof *bounds);
    size_t *tables = calloc((size_t)threads * 2 * N_BUCKETS, sizeof *tables);
    if (!bounds || !tables) {
        free(bounds);
        free(tables);
        return "out of memory";
    }
    Layout layouts[MAX_THREADS];
    const int64_t bytes = c->n ? c->offsets[c->n] - c->offsets[0] : 0;
    size_t first = 0;
    for (int i = 0; i < threads; i++) {
        layouts[i] = (Layout){c, first, c->n, max, tables + (size_t)i * 2 * N_BUCKETS,
                              tables + ((size_t)i * 2 + 1) * N_BUCKETS, NULL, 0, 0};
        if (i < threads - 1) {  /* about bytes / threads each */
            const int64_t goal = c->offsets[0] + bytes * (i + 1) / threads;
            size_t last = first;
            while (last < c->n && c->offsets[last] < goal) last++;
            layouts[i].last = last;
        }
        first = layouts[i].last;
    }
    on_threads(count_keys, layouts, sizeof *layouts, threads);
    for (size_t b = 0; b < N_BUCKETS; b++) {
        bounds[b + 1] = bounds[b];
        for (int i = 0; i < threads; i++) bounds[b + 1] += layouts[i].count[b];
    }
    const size_t batch = t->seed_batch > 0 ? (size_t)t->seed_batch : 1;
    size_t largest = 0;  /* the largest batch: `batch` keys, or one bucket bigger than that */
    for (size_t b = 0; b < N_BUCKETS; b++)
        if (bounds[b + 1] - bounds[b] > largest) largest = bounds[b + 1] - bounds[b];
    if (largest < batch) largest = bounds[N_BUCKETS] < batch ? bounds[N_BUCKETS] : batch;
    Position *positions = malloc((largest ? largest : 1) * sizeof *positions);
    if (!positions) {
        free(bounds);
        free(tables);
        return "out of memory";
    }
    for (size_t lo = 0, hi; lo < N_BUCKETS; lo = hi) {
        hi = lo + 1;
        while (hi < N_BUCKETS && bounds[hi + 1] - bounds[lo] <= largest) hi++;
        if (bounds[hi] == bounds[lo]) continue;
        for (size_t b = lo; b < hi; b++) {
            size_t at = bounds[b] - bounds[lo];
            for (int i = 0; i < threads; i++) {
                layouts[i].next[b] = at;
                at += layouts[i].count[b];
            }
        }
        for (int i = 0; i < threads; i++) {
            layouts[i].positions = positions;
            layouts[i].lo = lo;
            layouts[i].hi = hi;
        }
        on_threads(place_keys, layouts, sizeof *layouts, threads);
        *work += bounds[hi] - bounds[lo];  /* each key placed */
        *work += sort_batch(positions, bounds, lo, hi, threads, c, max, bests);
    }
    free(positions);
    free(bounds);
    free(tables);
    return NULL;
}

/* The best substrings into `best`, batch by batch: each thread's share of a batch into its own
   best candidates, offered to `best` at the end (the best are the same in any order: no two
   candidates rank equal). */
static const char *best_substrings(Training *t, Best *best) {
    const Chunks *c = &t->chunks;
    const uint32_t max = (uint32_t)t->max_piece;
    const int threads = t->threads < 1 ? 1 : t->threads > MAX_THREADS ? MAX_THREADS : t->threads;
    Best bests[MAX_THREADS];
    bests[0] = *best;
    for (int i = 1; i < threads; i++) {
        bests[i] = *best;
        bests[i].items = malloc(best->room * sizeof *best->items);
        if (!bests[i].items) {
            for (int j = 1; j < i; j++) free(bests[j].items);
            return "out of memory";
        }
    }
    const char *problem = batches(t, c, max, threads, bests, &t->work);
    *best = bests[0];
    for (int i = 1; i < threads; i++) {
        for (size_t j = 0; j < bests[i].n && !problem; j++) best_offer(best, &bests[i].items[j]);
        free(bests[i].items);
    }
    return problem;
}

const char *seed_model(Training *t, size_t seed_size) {
    const Chunks *c = &t->chunks;
    memset(t->byte_counts, 0, sizeof t->byte_counts);
    size_t keys = 0;
    for (size_t k = 0; k < c->n; k++) {
        t->work += (uint64_t)(c->offsets[k + 1] - c->offsets[k]);
        for (int64_t p = c->offsets[k]; p < c->offsets[k + 1]; p++)
            t->byte_counts[c->data[p]] += c->counts[k];
        if (c->offsets[k + 1] - c->offsets[k] >= 2) keys += (size_t)(c->offsets[k + 1] - c->offsets[k] - 1);
    }
    if (seed_size > keys * (MAX_PIECE - 1)) seed_size = keys * (MAX_PIECE - 1);  /* more cannot be */
    /* room for half as many again (16 more: a small seed size, as the tests ask, is trimmed
       often, so every path is taken) */
    Best best = {NULL, 0, seed_size, seed_size + seed_size / 2 + 16, 0, {0, {0, 0, 0}}};
    best.items = malloc(best.room * sizeof *best.items);
    if (!best.items) return "out of memory";
    const char *problem = best_substrings(t, &best);
    if (problem) {
        free(best.items);
        return problem;
    }
    best_trim(&best);
    sort_on_threads(best.items, best.n, t->threads);
    const size_t n_candidates = best.n;
    Candidate *candidates = best.items;

    /* The model: the bytes that occur (count descending, then byte), then the candidates. */
    int order[256], n_bytes = 0;
    bytes_by_count(t->byte_counts, order);
    while (n_bytes < 256 && t->byte_counts[order[n_bytes]]) n_bytes++;  /* those that occur */
    size_t n = (size_t)n_bytes + n_candidates;
    model_free(&t->model);
    nodes_free(&t->nodes);  /* found again under the new model */
    t->model.keys = malloc((n ? n : 1) * sizeof(Key));
    t->model.scores = malloc((n ? n : 1) * sizeof(double));
    if (!t->model.keys || !t->model.scores) {
        free(candidates);
        model_free(&t->model);
        return "out of memory";
    }
    int64_t total = 0;
    for (int i = 0; i < n_bytes; i++) {
        Key key = {0, 0, 0};
        t->model.keys[i] = key_push(key, (uint8_t)order[i]);
        t->model.scores[i] = (double)t->byte_counts[order[i]];
        total += t->byte_counts[order[i]];
    }
    for (size_t i = 0; i < n_candidates; i++) {
        t->model.keys[n_bytes + i] = candidates[i].key;
        t->model.scores[n_bytes + i] = (double)candidates[i].score;
        total += candidates[i].score;
    }
    free(candidates);
    double log_total = n ? log((double)total) : 0.0;
    for (size_t i = 0; i < n; i++) t->model.scores[i] = log(t->model.scores[i]) - log_total;
    t->model.n = t->model.live = n;
    return NULL;
}
