/*
 * A chunk counter: the distinct chunks (UTF-8 byte strings) of a training text with how often
 * each occurs, gathered batch by batch, and merged across batches, threads and machines (the
 * counting pass over a training source). Its memory is the distinct chunks', never the text's:
 * 32 bytes of entry per chunk (its hash among them, so that a probe rarely reads bytes that do
 * not match; a chunk of up to 8 bytes, most of them, held in it too), two 4-byte slots, and the
 * longer chunks' bytes once in one arena.
 *
 * Each chunk keeps the smallest order key it was given (`first`): the key of its first
 * occurrence, so that a table gathered in any order lists its chunks as one pass over the text
 * would (`counter_sort`).
 *
 * `counter_add_gathered` takes the distinct chunks split.c gathered from a batch of Python
 * strings (1, 2 or 4 bytes per code point) and counts them in UTF-8: the counting pass makes no
 * Python object per chunk.
 */

#define _DEFAULT_SOURCE /* POSIX threads, with -std=c11 */

#include "engine.h"

#include <stdlib.h>
#include <string.h>

#if ENGINE_THREADS
#include <pthread.h>
#endif

/* A 64-bit hash of a byte string: eight bytes at a time, mixed as hash_key mixes. */
static uint64_t chunk_bytes_hash(const uint8_t *data, size_t length) {
    uint64_t h = 0x9E3779B97F4A7C15ull ^ (uint64_t)length;
    size_t i = 0;
    for (; i + 8 <= length; i += 8) {
        uint64_t word;
        memcpy(&word, data + i, 8);
        h = hash_key(h ^ word);
    }
    uint64_t tail = 0;
    memcpy(&tail, data + i, length - i);
    return hash_key(h ^ tail ^ ((uint64_t)(length - i) << 56));
}

static int same(const ChunkCounter *c, const CountedChunk *chunk, uint32_t hash,
                const uint8_t *data, size_t length) {
    return chunk->hash == hash && chunk->length == length
           && memcmp(counted_bytes(c, chunk), data, length) == 0;
}

/* Room for twice as many slots as chunks (and at least 1024); the slots filled anew. */
static int rehash(ChunkCounter *c, size_t n_slots) {
    uint32_t *slots = calloc(n_slots, sizeof(uint32_t));
    if (!slots) return -1;
    for (size_t k = 0; k < c->n; k++) {
        size_t s = c->chunks[k].hash & (n_slots - 1);
        while (slots[s]) s = (s + 1) & (n_slots - 1);
        slots[s] = (uint32_t)k + 1;
    }
    free(c->slots);
    c->slots = slots;
    c->n_slots = n_slots;
    return 0;
}

/* counter_add with the chunk's hash given (chunk_bytes_hash's low 32 bits). */
static int add_hashed(ChunkCounter *c, const uint8_t *data, size_t length, uint32_t hash,
                      int64_t count, int64_t first) {
    if (c->n + 1 > c->n_slots / 2) {
        size_t n_slots = c->n_slots ? c->n_slots * 2 : 1024;
        /* a slot is found from the 32-bit hash: at most 2^32 slots, 2^31 chunks */
        if (n_slots > ((size_t)1 << 32) || rehash(c, n_slots) < 0) return -1;
    }
    if (length > UINT32_MAX) return -1;
    size_t s = hash & (c->n_slots - 1);
    for (; c->slots[s]; s = (s + 1) & (c->n_slots - 1)) {
        CountedChunk *chunk = &c->chunks[c->slots[s] - 1];
        if (same(c, chunk, hash, data, length)) {
            chunk->count += count;
            if (first < chunk->first) chunk->first = first;
            return 0;
        }
    }
    if (c->n >= UINT32_MAX - 1) return -1;
    c->chunks = grow(&c->status, c->chunks, &c->chunks_capacity, c->n + 1, sizeof(CountedChunk));
    if (c->status.failed) return -1;
    CountedChunk *chunk = &c->chunks[c->n];
    *chunk = (CountedChunk){0, (uint32_t)length, hash, count, first};
    if (length <= INLINE_CHUNK) { /* most chunks: no arena, and no other memory read to compare */
        memcpy(&chunk->offset, data, length);
    } else {
        c->bytes = grow(&c->status, c->bytes, &c->bytes_capacity, c->used + length, 1);
        if (c->status.failed) return -1;
        memcpy(c->bytes + c->used, data, length);
        chunk->offset = c->used;
        c->used += length;
    }
    c->total_bytes += length;
    c->slots[s] = (uint32_t)++c->n;
    return 0;
}

int counter_add(ChunkCounter *c, const uint8_t *data, size_t length, int64_t count, int64_t first) {
    return add_hashed(c, data, length, (uint32_t)chunk_bytes_hash(data, length), count, first);
}

size_t utf8_of(const SplitText *t, size_t start, size_t length, uint8_t *out) {
    size_t n = 0;
    if (t->kind == 1) { /* Latin-1: one byte below 0x80, two from there */
        const uint8_t *code = (const uint8_t *)t->data + start;
        for (size_t i = 0; i < length; i++) {
            if (code[i] < 0x80) {
                if (out) out[n] = code[i];
                n++;
            } else {
                if (out) out[n] = (uint8_t)(0xC0 | code[i] >> 6), out[n + 1] = (uint8_t)(0x80 | (code[i] & 0x3F));
                n += 2;
            }
        }
        return n;
    }
    for (size_t i = start; i < start + length; i++) {
        uint32_t c = t->kind == 2 ? ((const uint16_t *)t->data)[i] : ((const uint32_t *)t->data)[i];
        if (c < 0x80) {
            if (out) out[n] = (uint8_t)c;
            n += 1;
        } else if (c < 0x800) {
            if (out) out[n] = (uint8_t)(0xC0 | c >> 6), out[n + 1] = (uint8_t)(0x80 | (c & 0x3F));
            n += 2;
        } else if (c < 0x10000) {
            if (c >= 0xD800 && c < 0xE000) return SIZE_MAX;
            if (out) {
                out[n] = (uint8_t)(0xE0 | c >> 12);
                out[n + 1] = (uint8_t)(0x80 | ((c >> 6) & 0x3F));
                out[n + 2] = (uint8_t)(0x80 | (c & 0x3F));
            }
            n += 3;
        } else {
            if (out) {
                out[n] = (uint8_t)(0xF0 | c >> 18);
                out[n + 1] = (uint8_t)(0x80 | ((c >> 12) & 0x3F));
                out[n + 2] = (uint8_t)(0x80 | ((c >> 6) & 0x3F));
                out[n + 3] = (uint8_t)(0x80 | (c & 0x3F));
            }
            n += 4;
        }
    }
    return n;
}

/* How many chunks ahead of the one being added its slot, then its entry, are fetched: a big
   counter's slot and entry are each a cache miss, which this overlaps. */
#define SLOT_AHEAD 16
#define ENTRY_AHEAD 8

/* A gathering's chunks in UTF-8, end to end (`at`: where each starts, n + 1 of them), with
   their hashes (chunk_bytes_hash). */
typedef struct {
    uint8_t *utf8;
    size_t *at;
    uint64_t *hashes;
} Encoded;

static void encoded_free(Encoded *e) {
    free(e->utf8);
    free(e->at);
    free(e->hashes);
}

/* 0; -1 when memory ran out; -2 when a chunk holds a lone surrogate (nothing encoded). */
static int encode_gathered(const Gathered *gathered, const SplitText *texts, Encoded *e) {
    const ChunkTable *table = &gathered->table;
    size_t n = table->n, total = 0;
    *e = (Encoded){0};
    for (size_t id = 0; id < n; id++) { /* refused whole, before anything is counted */
        const ChunkEntry *entry = &table->entries[id];
        size_t length = utf8_of(&texts[entry->text], entry->start, entry->length, NULL);
        if (length == SIZE_MAX) return -2;
        total += length;
    }
    e->utf8 = malloc(total + 1);
    e->at = malloc((n + 1) * sizeof *e->at);
    e->hashes = malloc((n + 1) * sizeof *e->hashes);
    if (!e->utf8 || !e->at || !e->hashes) return -1;
    e->at[0] = 0;
    for (size_t id = 0, used = 0; id < n; id++) {
        const ChunkEntry *entry = &table->entries[id];
        used += utf8_of(&texts[entry->text], entry->start, entry->length, e->utf8 + used);
        e->at[id + 1] = used;
        e->hashes[id] = chunk_bytes_hash(e->utf8 + e->at[id], used - e->at[id]);
    }
    return 0;
}

/* The chunks `ids` (all n_ids of them; NULL: 0 to n_ids - 1) of an encoded gathering added,
   the n-th distinct chunk's order key first + n. */
static int add_encoded(ChunkCounter *c, const Encoded *e, const ChunkTable *table,
                       const uint32_t *ids, size_t n_ids, int64_t first) {
    for (size_t k = 0; k < n_ids; k++) {
        if (c->n_slots) {
            size_t mask = c->n_slots - 1;
            if (k + SLOT_AHEAD < n_ids) {
                size_t ahead = ids ? ids[k + SLOT_AHEAD] : k + SLOT_AHEAD;
                __builtin_prefetch(&c->slots[(uint32_t)e->hashes[ahead] & mask]);
            }
            if (k + ENTRY_AHEAD < n_ids) {
                size_t ahead = ids ? ids[k + ENTRY_AHEAD] : k + ENTRY_AHEAD;
                uint32_t slot = c->slots[(uint32_t)e->hashes[ahead] & mask];
                if (slot) __builtin_prefetch(&c->chunks[slot - 1]);
            }
        }
        size_t id = ids ? ids[k] : k;
        if (add_hashed(c, e->utf8 + e->at[id], e->at[id + 1] - e->at[id], (uint32_t)e->hashes[id],
                       table->entries[id].count, first + (int64_t)id) < 0)
            return -1;
    }
    return 0;
}

int counter_add_gathered(ChunkCounter *c, const Gathered *gathered, const SplitText *texts,
                         int64_t first) {
    Encoded e;
    int failed = encode_gathered(gathered, texts, &e);
    if (!failed) failed = add_encoded(c, &e, &gathered->table, NULL, gathered->table.n, first);
    encoded_free(&e);
    return failed;
}

/* ---------------------------------------------------------------------------------------- */
/* A counter in parts, one per counting thread                                               */

/* Which part a chunk lives in: from the hash's high bits (the low ones pick its slot). */
static inline int part_of(uint64_t hash, int n_parts) {
    return (int)((hash >> 32) % (uint64_t)n_parts);
}

#if ENGINE_THREADS
#define LOCK(p, k) pthread_mutex_lock(&((pthread_mutex_t *)(p)->locks)[k])
#define TRY_LOCK(p, k) (pthread_mutex_trylock(&((pthread_mutex_t *)(p)->locks)[k]) == 0)
#define UNLOCK(p, k) pthread_mutex_unlock(&((pthread_mutex_t *)(p)->locks)[k])
#else
#define LOCK(p, k) ((void)0)
#define TRY_LOCK(p, k) 1
#define UNLOCK(p, k) ((void)0)
#endif

int parted_init(PartedCounter *p, int n_parts) {
    if (n_parts < 1) n_parts = 1;
    if (n_parts > MAX_SPLIT_THREADS) n_parts = MAX_SPLIT_THREADS;
    *p = (PartedCounter){0};
    p->parts = calloc((size_t)n_parts, sizeof *p->parts);
#if ENGINE_THREADS
    p->locks = calloc((size_t)n_parts, sizeof(pthread_mutex_t));
    if (p->locks)
        for (int k = 0; k < n_parts; k++) pthread_mutex_init(&((pthread_mutex_t *)p->locks)[k], NULL);
#else
    p->locks = calloc(1, 1);
#endif
    p->n = n_parts;
    if (!p->parts || !p->locks) {
        parted_free(p);
        return -1;
    }
    return 0;
}

void parted_free(PartedCounter *p) {
    if (p->parts)
        for (int k = 0; k < p->n; k++) counter_free(&p->parts[k]);
#if ENGINE_THREADS
    if (p->locks)
        for (int k = 0; k < p->n; k++) pthread_mutex_destroy(&((pthread_mutex_t *)p->locks)[k]);
#endif
    free(p->parts);
    free(p->locks);
    *p = (PartedCounter){0};
}

int parted_add(PartedCounter *p, const uint8_t *data, size_t length, int64_t count,
               int64_t first) {
    uint64_t hash = chunk_bytes_hash(data, length);
    int k = part_of(hash, p->n);
    LOCK(p, k);
    int failed = add_hashed(&p->parts[k], data, length, (uint32_t)hash, count, first);
    UNLOCK(p, k);
    return failed;
}

int parted_add_gathered(PartedCounter *p, const Gathered *gathered, const SplitText *texts,
                        int64_t first, int start) {
    const ChunkTable *table = &gathered->table;
    size_t n = table->n;
    Encoded e;
    int failed = encode_gathered(gathered, texts, &e);
    /* The ids by part (each part's in ascending order): `order`, part k's from begin[k]. */
    size_t begin[MAX_SPLIT_THREADS + 1] = {0};
    uint32_t *order = failed ? NULL : malloc((n + 1) * sizeof *order);
    if (!failed && !order) failed = -1;
    if (!failed) {
        size_t fill[MAX_SPLIT_THREADS] = {0};
        for (size_t id = 0; id < n; id++) begin[part_of(e.hashes[id], p->n) + 1]++;
        for (int k = 0; k < p->n; k++) begin[k + 1] += begin[k], fill[k] = begin[k];
        for (size_t id = 0; id < n; id++) order[fill[part_of(e.hashes[id], p->n)]++] = (uint32_t)id;
    }
    /* Each part's chunks added under its lock: a part another thread holds is passed over
       while one is free, and waited for only when none is. */
    uint8_t done[MAX_SPLIT_THREADS] = {0};
    for (int left = p->n; !failed && left > 0;) {
        int took = 0;
        for (int m = 0; m < p->n && !failed; m++) {
            int k = (start + m) % p->n;
            if (done[k] || !TRY_LOCK(p, k)) continue;
            failed = add_encoded(&p->parts[k], &e, table, order + begin[k], begin[k + 1] - begin[k],
                                 first);
            UNLOCK(p, k);
            done[k] = 1, left--, took = 1;
        }
        if (!took && !failed) { /* every part left is busy: wait for the first of them */
            int k = start % p->n;
            while (done[k]) k = (k + 1) % p->n;
            LOCK(p, k);
            failed = add_encoded(&p->parts[k], &e, table, order + begin[k], begin[k + 1] - begin[k],
                                 first);
            UNLOCK(p, k);
            done[k] = 1, left--;
        }
    }
    free(order);
    encoded_free(&e);
    return failed;
}

size_t parted_len(const PartedCounter *p) {
    size_t n = 0;
    for (int k = 0; k < p->n; k++) n += p->parts[k].n;
    return n;
}

int parted_next(const PartedCounter *p, const size_t *at) {
    int best = -1;
    for (int k = 0; k < p->n; k++)
        if (at[k] < p->parts[k].n
            && (best < 0 || p->parts[k].chunks[at[k]].first < p->parts[best].chunks[at[best]].first))
            best = k;
    return best;
}

static int by_first(const void *a, const void *b) {
    const CountedChunk *x = a, *y = b;
    return (x->first > y->first) - (x->first < y->first);
}

int counter_sort(ChunkCounter *c) {
    /* Firsts are distinct (each occurrence has its own key), so the order is total. */
    qsort(c->chunks, c->n, sizeof(CountedChunk), by_first);
    return c->n_slots ? rehash(c, c->n_slots) : 0; /* the slots pointed at the old places */
}

void counter_order(ChunkCounter *c) {
    qsort(c->chunks, c->n, sizeof(CountedChunk), by_first);
    free(c->slots); /* pointing at the old places, and not needed to list the chunks */
    c->slots = NULL;
    c->n_slots = 0;
}

void counter_free(ChunkCounter *c) {
    free(c->bytes);
    free(c->chunks);
    free(c->slots);
    memset(c, 0, sizeof(*c));
}
