/* The compiled WordPiece trainer: the steps of analyzer/wordpiece/reference.py, exactly.

   Layout:
     wordpiece.h  the shared types: the chunks, the vocabulary, the pair table, the queue
     tables.c     the vocabulary (strings and an open-addressing map to their ids), the pair
                  table (an open-addressing map of (left, right) to a pair's number) and the
                  queue (a 4-ary heap of the larger counts' entries, the others aside by
                  count, each entry with its chunks as an array)
     train.c      the training: the chunks as ids, the first pair counts, the steps
     encode.c     a vocabulary's encoder (reference.py's `encode`, in linear time)
     module.c     the Python face: pack(chunks), train(data, offsets, counts, size) and the
                  Encoder type

   Exactness: the reference's order everywhere it matters (the queue's order: count, pair,
   push order; a step's notes of the chunks each pair gained in); counts are int64 (Hugging
   Face's are int32: the reference says where they would wrap). Nothing here is random. */

#ifndef ANALYZER_WORDPIECE_H
#define ANALYZER_WORDPIECE_H

#include <stddef.h>
#include <stdint.h>

#define BYTE_SYMBOLS 256
#define ALPHABET (2 * BYTE_SYMBOLS) /* ids 0..255 begin a chunk, 256..511 continue one */
#define NO_SLOT UINT32_MAX

/* The distinct chunks (Chunks), as both engines take them. */
#include "../../bpe/engine/chunks.h"

/* Every token's string and id (ids 0..n-1), and a map from string to id. */
typedef struct {
    uint8_t *bytes;    /* the strings end to end */
    size_t used, room;
    size_t *start;     /* id -> its string's first byte in `bytes` */
    uint32_t *length;  /* id -> its string's length */
    uint64_t *hash;    /* id -> its string's hash (to grow the map without hashing again) */
    uint32_t n, ids_room;
    uint32_t *slots;   /* open addressing: an id, or NO_SLOT */
    size_t mask;       /* slots - 1, a power of two less one */
} Vocab;

/* A pair: its ids as left << 32 | right (EMPTY_PAIR: a free slot), its count (chunk counts
   applied, stale ones included), and where it is among the pairs of the step it last gained
   in. 24 bytes: the table is large, and every lookup a cache miss. */
typedef struct {
    uint64_t key;
    int64_t count;
    uint32_t step;   /* the last step it gained in (steps count from 1) */
    uint32_t mark;   /* in that step: its place among the pairs that gained (train.c) */
} Pair;

#define EMPTY_PAIR UINT64_MAX  /* no pair has it: ids are below 2^31 */

/* Every pair ever counted, in an open-addressing table of the pairs themselves (a lookup is
   one place in memory). A pair's number is its slot: it holds until the table grows, which
   happens only in pairs_reserve (train.c reserves before a step takes any number). Pairs are
   never removed (the reference keeps stale counts too). */
typedef struct {
    Pair *at;
    size_t mask;     /* slots - 1 (a power of two less one) */
    size_t n;
} Pairs;

/* The queue: a 4-ary heap of small items (count, pair key, and a reference to the rest), so
   that a sift touches few cache lines; the rest of each entry (its push order, its chunks)
   is held aside. The order: the larger count, then the smaller pair (left id, then right id:
   the key's order), then the earlier push.
   Most entries never come out (a training ends long before the small counts' turn), so only
   those of count `floor` or more are in the heap, the rest set aside in buckets by count; when
   the heap is empty, a lower floor lets the largest of them in. The heap stays small (in cache), and
   the first entry is still the first of all: every one set aside counts less than any in the
   heap. */
typedef struct {
    int64_t count;
    uint64_t key;   /* left << 32 | right */
    uint32_t ref;   /* its Held */
} Item;

/* The chunks arrays of the entries one step (or the start) pushes, in one allocation: freed
   when the last entry holding a part of it is taken (a malloc an entry would be millions). */
typedef struct {
    size_t refs;
    uint32_t chunks[];
} Block;

Block *block_new(size_t chunks);  /* with one reference, the caller's */
void block_release(Block *b);

typedef struct {
    uint64_t push;     /* push order: the tie-breaker among equal count and pair */
    uint32_t *chunks;  /* its part of `block` */
    Block *block;
    uint32_t n;
} Held;

typedef struct {
    Item *at;
    uint32_t n, room;
} Bucket;

#define BUCKETS 65536  /* counts set aside: 1..65535 each its own, 0 and less in the first */

typedef struct {
    Item *items;       /* the heap: the entries of count `floor` or more */
    size_t n, room;
    Bucket *aside;     /* the entries of a count below `floor` (<= BUCKETS), by count */
    size_t aside_n;
    int64_t floor;
    size_t let_in;     /* entries (at least, while there are) a lower floor lets in at once */
    Held *held;
    uint32_t held_n, held_room;
    uint32_t *spare;   /* refs free again */
    uint32_t spare_n, spare_room;
    uint64_t pushes;
} Queue;

/* A growable array of uint32. */
typedef struct {
    uint32_t *at;
    size_t n, room;
} List;

/* tables.c. Each allocating function returns 0, or -1 when out of memory (nothing changed). */
int list_add(List *l, uint32_t value);
int vocab_init(Vocab *v);
void vocab_free(Vocab *v);
/* The id of a string, or NO_SLOT. */
uint32_t vocab_find(const Vocab *v, const uint8_t *s, uint32_t length, uint64_t hash);
/* Append a string as the next id (it must not be in the vocabulary). */
int vocab_add(Vocab *v, const uint8_t *s, uint32_t length, uint64_t hash);
uint64_t hash_bytes(const uint8_t *s, size_t length);

/* A pair key's home slot: Fibonacci hashing of both ids. */
static inline size_t pair_home(uint64_t key, size_t mask) {
    return (size_t)((key * 0x9e3779b97f4a7c15u) >> 20) & mask;
}

/* Ask for (left, right)'s home slot ahead of a lookup (the table is far larger than cache). */
static inline void pairs_prefetch(const Pairs *p, uint32_t left, uint32_t right) {
    __builtin_prefetch(p->at + pair_home((uint64_t)left << 32 | right, p->mask));
}

int pairs_init(Pairs *p, size_t expected);
void pairs_free(Pairs *p);
/* Room for `more` new pairs without growing (pair numbers change if it grows now). */
int pairs_reserve(Pairs *p, size_t more);
/* The number of (left, right), made with count 0 when it is new (room reserved); NO_SLOT
   when there is no room. */
uint32_t pairs_slot(Pairs *p, uint32_t left, uint32_t right);

/* An empty queue; 0, or -1 when out of memory. `let_in` changes only the speed (4096: a heap
   in cache, a few thousand entries a time). */
int queue_init(Queue *q, size_t let_in);
void queue_free(Queue *q);
/* The first entry of all, or NULL when the queue is empty (may let entries into the heap:
   out of memory is NULL too, with *failed set). */
const Item *queue_top(Queue *q, int *failed);
/* Push an entry, its chunks a part of `block` (which gains a reference). */
int queue_push(Queue *q, int64_t count, uint64_t key, uint32_t *chunks, Block *block, uint32_t n);
/* The first entry pushed again with another count: as taking it and pushing it anew (its
   push order the latest), in one sift (queue_top must have given it); -1 when out of
   memory. */
int queue_renew_top(Queue *q, int64_t count);
/* Take the first entry out (queue_top must have given it); its block's reference becomes the
   caller's. */
void queue_take(Queue *q, uint64_t *key, uint32_t **chunks, Block **block, uint32_t *n);

/* Asked after every step whether to stop (the caller's own test: module.c lets Python's
   signal handlers run, so that Ctrl-C ends a long training); nonzero stops it. */
typedef struct {
    int (*stop)(void *context);
    void *context;
} Interrupt;

#define INTERRUPTED "interrupted"

/* train.c. The vocabulary of at most `size` entries, into *out (initialized here; the caller
   frees it with vocab_free, also on failure); NULL, or what went wrong (INTERRUPTED: the
   interrupt said stop). `let_in`: the queue's (queue_init). The steps taken (symbols read,
   pairs applied, notes, queue operations) are added to *work, for tests of the bound. */
const char *train(const Chunks *chunks, uint32_t size, size_t let_in, const Interrupt *interrupt,
                  Vocab *out, uint64_t *work);

/* encode.c: a vocabulary's encoder (see encode.c). */
#define START 0   /* the node of a chunk's start */
#define INSIDE 1  /* the node of a later place */

typedef struct {
    uint64_t *keys;      /* the edges: node << 8 | byte, or all ones (free) */
    uint32_t *children;  /* ... and the node each leads to */
    size_t mask, edges;  /* slots - 1; edges held */
    int32_t *token;      /* per node: its id, or -1 */
    uint32_t *fail;      /* per node: its failure link (UINT32_MAX: none) */
    uint32_t *pops;      /* per node: the node whose ids a failure writes (UINT32_MAX: none) */
    uint32_t *part;      /* per inner node of the pops tree: its count's place in `parts` */
    List parts;          /* each inner node's count, then its parts */
    size_t n, room;
    uint32_t *stack;     /* writing the pops */
    size_t stack_room;
    uint64_t work;       /* steps taken: bytes read, failure links followed, pops written */
} Encoder;

typedef struct {
    int32_t *at;
    size_t n, room;
} Ids;

/* The encoder of a vocabulary (piece id's bytes and length); 0, or -1 when out of memory
   (encoder_free frees what was made, also then). */
int encoder_init(Encoder *e, const uint8_t *const *pieces, const size_t *lengths, size_t n);
void encoder_free(Encoder *e);
/* A chunk's ids into out (grown as needed): 0; 1 when it has none (some place begins no
   piece); -1 when out of memory. */
int encoder_encode(Encoder *e, const uint8_t *chunk, size_t length, Ids *out);

#endif
