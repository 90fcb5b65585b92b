/* The compiled Unigram trainer: the steps of analyzer/unigram/reference.py, exactly.

   Layout:
     unigram.h   the shared types: the chunks, a piece's key, the model and its index
     seeds.c     the seed model: bytes, then the best right-maximal substrings (by sorting)
     lattice.c   the piece index, the nodes cache, and one chunk's lattice: forward-backward
                 and Viterbi
     steps.c     the E- and M-step, pruning and finalizing, the E-step and Viterbi passes on
                 several threads
     positions.c the keys of positions sorted (a radix sort): the seeds' batches, the index
     threads.c   a job on every thread at once
     encode.c    counting chunks with a trained model, as Hugging Face's Unigram model does
     module.c    the Python type `Trainer` over them

   Exactness: every float is computed in the reference's order of operations (no fused
   multiply-add: built with -ffp-contract=off), expected counts are summed as integers in units
   of 2^-24 (so the threads' sums do not depend on how the chunks are shared), and every sort
   breaks ties as the reference does. */

#ifndef ANALYZER_UNIGRAM_H
#define ANALYZER_UNIGRAM_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

#define MAX_PIECE 16              /* a key holds at most 16 bytes */
#define FIXED_SCALE 16777216.0    /* 2^24: expected counts are integers in units of 1/FIXED */
#define MIN_EXPECTED 0.5
#define UNKNOWN_PENALTY 10.0
#define BYTE_PENALTY_STEP 0.0001
#define RESCALE_BELOW 0x1p-512  /* a forward or backward sum outside [2^-512, 2^512) is renormalized */
#define RESCALE_FROM 0x1p512

/* The distinct chunks (Chunks), as both engines take them. */
#include "../../bpe/engine/chunks.h"

/* A piece of up to 16 bytes as two big-endian words, zero-padded, and its length: comparing
   (hi, lo, len) in that order orders pieces as their bytes do (a prefix first). */
typedef struct {
    uint64_t hi, lo;
    uint32_t len;
} Key;

/* Key `k` with one more byte appended. */
static inline Key key_push(Key k, uint8_t byte) {
    if (k.len < 8) k.hi |= (uint64_t)byte << (56 - 8 * k.len);
    else k.lo |= (uint64_t)byte << (56 - 8 * (k.len - 8));
    k.len++;
    return k;
}

/* The first `len` bytes of a key (len <= its length). */
static inline Key key_prefix(Key k, uint32_t len) {
    Key p = {0, 0, len};
    p.hi = len >= 8 ? k.hi : len == 0 ? 0 : k.hi & ~(~(uint64_t)0 >> (8 * len));
    p.lo = len <= 8 ? 0 : len >= 16 ? k.lo : k.lo & ~(~(uint64_t)0 >> (8 * (len - 8)));
    return p;
}

/* The byte at index i of a key (i < len). */
static inline uint8_t key_byte(Key k, uint32_t i) {
    return (uint8_t)(i < 8 ? k.hi >> (56 - 8 * i) : k.lo >> (56 - 8 * (i - 8)));
}

/* A key's bytes into out (room for MAX_PIECE); their number. */
static inline uint32_t key_spell(Key k, uint8_t *out) {
    uint32_t n = k.len < MAX_PIECE ? k.len : MAX_PIECE;
    for (uint32_t i = 0; i < n; i++) out[i] = key_byte(k, i);
    return n;
}

/* -1, 0, 1 as a's bytes sort before, equal, after b's. */
static inline int key_compare(const Key *a, const Key *b) {
    if (a->hi != b->hi) return a->hi < b->hi ? -1 : 1;
    if (a->lo != b->lo) return a->lo < b->lo ? -1 : 1;
    return (a->len > b->len) - (a->len < b->len);
}

/* A key (its bytes and length) and a number: a position's chunk when seeding, a piece's id
   when indexing (24 bytes). */
typedef struct {
    uint64_t hi, lo;
    uint32_t len, chunk;
} Position;

/* How many leading bytes two keys share. */
static inline uint32_t common_prefix(const Position *a, const Position *b) {
    uint32_t shared;
    uint64_t x = a->hi ^ b->hi;
    if (x) shared = (uint32_t)__builtin_clzll(x) / 8;
    else if ((x = a->lo ^ b->lo)) shared = 8 + (uint32_t)__builtin_clzll(x) / 8;
    else shared = 16;
    uint32_t shorter = a->len < b->len ? a->len : b->len;
    return shared < shorter ? shared : shorter;
}

/* The model: its pieces in order, each with its score. A piece an M-step or a pruning dropped
   may stay in its place, dead (score DEAD), until the model is compacted: the node cache keeps
   its ids meanwhile (a dead piece's node is there, but with probability 0 and score -inf it
   changes no sum and wins no path). A pruning also reorders the pieces it keeps: their order
   is then `order` (their places), while they stay in place. */
typedef struct {
    Key *keys;
    double *scores;
    size_t *order;  /* NULL: the live pieces in order of place; else the live pieces' places,
                       in the model's order (`live` of them) */
    size_t n;       /* places, dead ones included */
    size_t live;    /* pieces */
} Model;

#define DEAD (-INFINITY)  /* a dead piece's score: its probability exp(DEAD) is exactly 0 */

static inline int is_dead(const Model *model, size_t i) { return model->scores[i] == DEAD; }

/* The model's pieces in order are the places piece_at(model, r) for r < in_order(model) that
   are not dead. */
static inline size_t in_order(const Model *model) { return model->order ? model->live : model->n; }
static inline size_t piece_at(const Model *model, size_t r) { return model->order ? model->order[r] : r; }

/* The pieces and all their prefixes, for the lattice: a prefix that is no piece has id -1, so a
   lookup can stop at the first byte string that begins no piece. Prefixes of one and two bytes
   are in direct tables (`bytes`, `pairs`: -2 for none), longer ones in hash tables (open
   addressing), one block of slots per first two bytes: a position's lookups of 3, 4, 5 ...
   bytes all probe one block, and a frequent pair's block stays in the cache. */
typedef struct {
    uint64_t hi, lo;
    int32_t id;      /* the piece's place in the model, -1: a prefix only */
    uint32_t len;    /* 0: an empty slot */
} Slot;

typedef struct {
    uint32_t first, mask;  /* slots[first .. first + mask] (slot 0: empty, for a pair with none) */
} Block;

typedef struct {
    Slot *slots;
    Block *blocks;   /* 65536, by first byte x 256 + second */
    int32_t *bytes;  /* 256 */
    int32_t *pairs;  /* 65536, by first byte x 256 + second */
} PieceIndex;

/* The work arrays of one chunk's lattice (its nodes as the cache keeps them), reused from
   chunk to chunk. */
typedef struct {
    double *alpha, *beta, *best;
    int *alpha_exp, *beta_exp;  /* alpha[i] x 2^alpha_exp[i] is the forward probability */
    int32_t *list_start, *list_length, *list_id, *list_by_end, *end_first;  /* chunk_expect */
    double *list_probability;
    int64_t *list_fixed;  /* chunk_expect: each node's count x marginal, until they are added */
    int64_t *back;
    size_t capacity;   /* bytes of chunk the arrays hold */
    int max;           /* the longest piece */
} Lattice;

/* Every chunk's lattice nodes, found once with the seed model and then only filtered: the
   model only loses pieces, so a chunk's nodes under a later model are its earlier nodes whose
   piece is still there (renumbered). at[p] is how many nodes begin at byte p of the chunks'
   data; chunk k's nodes are first[k] .. first[k + 1], by position then length.
   `where` holds, per piece, one place it occurs: the nodes there that end within it are the
   piece's own lattice (every piece is a substring of the chunks), so pruning reads a piece's
   alternatives from the cache, without looking its substrings up. */
typedef struct {
    uint32_t chunk, at;  /* chunk k, from its byte `at`; chunk UINT32_MAX: none found */
} Place;

typedef struct {
    int64_t *first;
    uint8_t *at;
    uint8_t *lengths;
    int32_t *ids;
    Place *where;  /* per piece (NULL: not kept, when the chunks are 2^32 or more) */
    size_t n;
    int valid;
    int off;  /* the chunks are too many to keep their nodes: every step looks them up */
} Nodes;

/* The whole state of a training. */
typedef struct {
    Chunks chunks;
    int max_piece;
    int threads;
    int64_t byte_counts[256];
    Model model;
    Nodes nodes;
    int64_t cache_limit;  /* bytes the node cache may take at most (5 per node, 16 per byte) */
    int64_t seed_batch;   /* keys the seeding sorts at a time (24 bytes each) */
    uint64_t work;        /* steps taken so far: each byte and node a pass visits, each key the
                             seeding bins or scans (tests read it to bound the time by the
                             input's size) */
} Training;

/* seeds.c */
const char *seed_model(Training *t, size_t seed_size);

/* positions.c */
/* positions[0..n), whose keys share their first `depth` bytes, sorted by their keys' bytes (a
   prefix first; equal keys in any order). */
void sort_positions(Position *positions, size_t n, uint32_t depth);
/* sort_positions, adding to `work` the keys it bins (a measure of the sort's cost). */
void radix_sort(Position *positions, size_t n, uint32_t depth, uint64_t *work);

/* threads.c */
#define MAX_THREADS 64  /* the most threads a step of seeding or indexing runs on */
/* job(&items[i]) for each of n <= MAX_THREADS items (`size` bytes apart), item 0 on this
   thread and the others on their own (here, if one cannot start). */
void on_threads(void *(*job)(void *), void *items, size_t size, int n);

/* lattice.c */
/* The pages of a fresh block (`bytes` long) faulted in now, on this thread, where the system
   can (Linux 5.14 on): threads that fault in pages of one block at once wait on each other,
   here 3 times as long as one thread doing it all. A hint: nothing changes if refused. */
void populate(void *block, size_t bytes);
const char *index_build(PieceIndex *index, const Model *model, int threads);
void index_free(PieceIndex *index);
int lattice_reserve(Lattice *lattice, size_t n, int max);
void lattice_free(Lattice *lattice);
/* Where each piece was first found: place[piece], set once found[piece] (a bit) is. The bits
   (128 KB for a million pieces) are what every node checks; the places are written once. */
typedef struct {
    Place *place;
    uint64_t *found;
} Seen;

size_t text_nodes(const PieceIndex *index, const uint8_t *text, size_t n, int max,
                  int32_t *ids, uint8_t *lengths, uint8_t *at, Seen *seen, uint32_t chunk);
void nodes_free(Nodes *nodes);
void chunk_expect(Lattice *lattice, const uint8_t *at, const uint8_t *lengths, const int32_t *ids,
                  size_t n, const double *probability, double unknown, int64_t count,
                  int64_t *expected);
size_t nodes_keep(Nodes *nodes, const Chunks *chunks, const int32_t *renumber, size_t first,
                  size_t last);
double min_score(const Model *model);
size_t nodes_viterbi(Lattice *lattice, const uint8_t *at, const uint8_t *lengths,
                     const int32_t *ids, size_t n, const double *scores, double unknown,
                     int skip_whole, int32_t *path);

/* steps.c */
const char *em_step(Training *t);
const char *prune_step(Training *t, size_t desired, double shrink);
const char *finalize(Training *t, size_t size, Model *out);
void model_free(Model *model);
/* All 256 bytes by count descending, then byte: the order of the seeds' bytes and of those
   finalize puts back. */
void bytes_by_count(const int64_t counts[256], int order[256]);
double digamma(double x);

/* encode.c: each chunk k (data[offsets[k] .. offsets[k + 1]), k < n) as Hugging Face's
   Unigram model encodes it with the pieces `index` finds (`max` bytes at most) and their
   `scores`: its ids end to end into `ids` (room for every byte of the chunks) and their
   number into lengths[k]. NULL, or what went wrong (a byte that is no piece). */
const char *viterbi_chunks(const PieceIndex *index, int max, const double *scores,
                           const uint8_t *data, const int64_t *offsets, size_t n,
                           int32_t *ids, int32_t *lengths);

#endif
