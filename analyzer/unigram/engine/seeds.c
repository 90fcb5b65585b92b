/* The seed model (reference: Trainer.seed): every byte that occurs, scored by its count; then
   the seed_size best substrings of 2..max bytes that occur at least twice (chunk counts
   applied) and are right-maximal (ending a chunk, or followed by two different bytes, or max
   long), scored by count x length.

   The reference counts every substring in a dictionary; here every position's key (its next
   max bytes, cut at the chunk's end) is sorted once, so each substring of length l is a run of
   neighbouring keys that share their first l bytes. One pass over the sorted keys closes each
   run when the next key's common prefix is shorter than l, with the run's summed counts. Within
   a run, keys that end at l come first and the others are in order of their byte at l, so the
   substring is right-maximal iff its first key ends there or its first and last keys differ at l. */

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "unigram.h"

typedef struct {
    Key key;
    uint32_t chunk;
} Position;

typedef struct {
    int64_t score;
    Key key;
} Candidate;

static int compare_positions(const void *a, const void *b) {
    return key_compare(&((const Position *)a)->key, &((const Position *)b)->key);
}

/* Score descending, then bytes ascending. */
static int compare_candidates(const void *a, const void *b) {
    const Candidate *x = a, *y = b;
    if (x->score != y->score) return x->score > y->score ? -1 : 1;
    return key_compare(&x->key, &y->key);
}

/* The first `len` bytes of a key. */
static Key key_prefix(Key k, uint32_t len) {
    Key p = {0, 0, len};
    p.hi = len >= 8 ? k.hi : len == 0 ? 0 : k.hi & ~(~(uint64_t)0 >> (8 * len));
    p.lo = len <= 8 ? 0 : len >= 16 ? k.lo : k.lo & ~(~(uint64_t)0 >> (8 * (len - 8)));
    return p;
}

/* How many leading bytes two keys share. */
static uint32_t common_prefix(const Key *a, const Key *b) {
    uint32_t shared;
    uint64_t x = a->hi ^ b->hi;
    if (x) shared = (uint32_t)__builtin_clzll(x) / 8;
    else if ((x = a->lo ^ b->lo)) shared = 8 + (uint32_t)__builtin_clzll(x) / 8;
    else shared = 16;
    uint32_t shorter = a->len < b->len ? a->len : b->len;
    return shared < shorter ? shared : shorter;
}

/* Sorting the keys: a counting pass puts them in buckets by their first two bytes, then the
   buckets are sorted apart, on several threads (the order is the keys' alone). */
typedef struct {
    Position *positions;
    const size_t *bounds;  /* bucket b is positions[bounds[b] .. bounds[b + 1]) */
    size_t first, last;    /* this thread's buckets */
} Buckets;

static void *sort_buckets(void *arg) {
    Buckets *b = arg;
    for (size_t k = b->first; k < b->last; k++)
        if (b->bounds[k + 1] - b->bounds[k] > 1)
            qsort(b->positions + b->bounds[k], b->bounds[k + 1] - b->bounds[k], sizeof(Position),
                  compare_positions);
    return NULL;
}

#define N_BUCKETS 65536

static const char *sort_positions(Position **positions, size_t n, int threads) {
    size_t *bounds = calloc(N_BUCKETS + 1, sizeof *bounds);
    Position *sorted = malloc((n ? n : 1) * sizeof *sorted);
    if (!bounds || !sorted) {
        free(bounds);
        free(sorted);
        return "out of memory";
    }
    for (size_t i = 0; i < n; i++) bounds[((*positions)[i].key.hi >> 48) + 1]++;
    for (size_t b = 0; b < N_BUCKETS; b++) bounds[b + 1] += bounds[b];
    size_t *next = malloc(N_BUCKETS * sizeof *next);
    if (!next) {
        free(bounds);
        free(sorted);
        return "out of memory";
    }
    memcpy(next, bounds, N_BUCKETS * sizeof *next);
    for (size_t i = 0; i < n; i++) sorted[next[(*positions)[i].key.hi >> 48]++] = (*positions)[i];
    free(next);
    free(*positions);
    *positions = sorted;
    if (threads < 1) threads = 1;
    if (threads > 64) threads = 64;
    Buckets shares[64];
    pthread_t ids[64];
    size_t bucket = 0;
    int started = 0;
    for (int i = 0; i < threads; i++) {  /* about n / threads keys each */
        shares[i].positions = sorted;
        shares[i].bounds = bounds;
        shares[i].first = bucket;
        size_t goal = n * (size_t)(i + 1) / (size_t)threads;
        while (bucket < N_BUCKETS && (i == threads - 1 || bounds[bucket + 1] <= goal)) bucket++;
        shares[i].last = bucket;
    }
    for (int i = 1; i < threads; i++, started++)
        if (pthread_create(&ids[i], NULL, sort_buckets, &shares[i]) != 0) break;
    sort_buckets(&shares[0]);
    for (int i = 1; i <= started; i++) pthread_join(ids[i], NULL);
    for (int i = started + 1; i < threads; i++) sort_buckets(&shares[i]);  /* not started: here */
    free(bounds);
    return NULL;
}

static int compare_bytes_by_count(const void *a, const void *b, const int64_t *counts) {
    int x = *(const int *)a, y = *(const int *)b;
    if (counts[x] != counts[y]) return counts[x] > counts[y] ? -1 : 1;
    return (x > y) - (x < y);
}

const char *seed_model(Training *t, size_t seed_size) {
    const Chunks *c = &t->chunks;
    const uint32_t max = (uint32_t)t->max_piece;
    memset(t->byte_counts, 0, sizeof t->byte_counts);
    size_t n_positions = 0;
    for (size_t k = 0; k < c->n; k++) {
        for (int64_t p = c->offsets[k]; p < c->offsets[k + 1]; p++)
            t->byte_counts[c->data[p]] += c->counts[k];
        int64_t length = c->offsets[k + 1] - c->offsets[k];
        if (length >= 2) n_positions += (size_t)(length - 1);  /* keys of two bytes or more */
    }

    /* Every position's key of 2..max bytes, sorted. */
    Position *positions = malloc((n_positions ? n_positions : 1) * sizeof *positions);
    if (!positions) return "out of memory";
    size_t at = 0;
    for (size_t k = 0; k < c->n; k++) {
        int64_t end = c->offsets[k + 1];
        for (int64_t p = c->offsets[k]; p + 2 <= end; p++) {
            Key key = {0, 0, 0};
            for (int64_t q = p; q < end && key.len < max; q++) key = key_push(key, c->data[q]);
            positions[at].key = key;
            positions[at].chunk = (uint32_t)k;
            at++;
        }
    }
    const char *problem = sort_positions(&positions, n_positions, t->threads);
    if (problem) {
        free(positions);
        return problem;
    }

    /* One pass closes every run: start[l] and sum[l] are the open run of depth l. */
    size_t n_candidates = 0, cap = 1024;
    Candidate *candidates = malloc(cap * sizeof *candidates);
    size_t start[MAX_PIECE + 1] = {0};
    int64_t sum[MAX_PIECE + 1] = {0};
    if (!candidates) {
        free(positions);
        return "out of memory";
    }
    for (uint32_t l = 2; l <= max; l++) sum[l] = n_positions ? c->counts[positions[0].chunk] : 0;
    for (size_t j = 1; j <= n_positions; j++) {
        uint32_t shared = j < n_positions ? common_prefix(&positions[j - 1].key, &positions[j].key) : 0;
        int64_t weight = j < n_positions ? c->counts[positions[j].chunk] : 0;
        for (uint32_t l = 2; l <= max; l++) {
            if (shared >= l) {
                sum[l] += weight;
                continue;
            }
            const Key *first = &positions[start[l]].key, *last = &positions[j - 1].key;
            if (first->len >= l && sum[l] >= 2
                && (l == max || first->len == l || key_byte(*first, l) != key_byte(*last, l))) {
                if (n_candidates == cap) {
                    Candidate *grown = realloc(candidates, 2 * cap * sizeof *candidates);
                    if (!grown) {
                        free(candidates);
                        free(positions);
                        return "out of memory";
                    }
                    candidates = grown;
                    cap *= 2;
                }
                candidates[n_candidates].score = sum[l] * (int64_t)l;
                candidates[n_candidates].key = key_prefix(*first, l);
                n_candidates++;
            }
            start[l] = j;
            sum[l] = weight;
        }
    }
    free(positions);
    qsort(candidates, n_candidates, sizeof *candidates, compare_candidates);
    if (n_candidates > seed_size) n_candidates = seed_size;

    /* The model: the bytes that occur (count descending, then byte), then the candidates. */
    int order[256], n_bytes = 0;
    for (int b = 0; b < 256; b++)
        if (t->byte_counts[b]) order[n_bytes++] = b;
    for (int i = 1; i < n_bytes; i++)  /* insertion sort: 256 at most */
        for (int j = i; j > 0 && compare_bytes_by_count(&order[j], &order[j - 1], t->byte_counts) < 0; j--) {
            int swap = order[j];
            order[j] = order[j - 1];
            order[j - 1] = swap;
        }
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
    t->model.n = n;
    return NULL;
}
