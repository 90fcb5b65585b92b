/*
 * A chunk counter: the distinct chunks (UTF-8 byte strings) of a training text with how often
 * each occurs, gathered batch by batch, and merged across batches, threads and machines (the
 * counting pass over a training source). Its memory is the distinct chunks', never the text's:
 * each chunk's bytes once in one arena, 32 bytes of entry and two 4-byte hash slots beside.
 *
 * Each chunk keeps the smallest order key it was given (`first`): the key of its first
 * occurrence, so that a table gathered in any order lists its chunks as one pass over the text
 * would (`counter_order`).
 */

#include "engine.h"

#include <stdlib.h>
#include <string.h>

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

static int same(const ChunkCounter *c, const CountedChunk *chunk, const uint8_t *data, size_t length) {
    return chunk->length == length && memcmp(c->bytes + chunk->offset, data, length) == 0;
}

/* Room for twice as many slots as chunks (and at least 1024); the slots filled anew. */
static int rehash(ChunkCounter *c, size_t n_slots) {
    uint32_t *slots = calloc(n_slots, sizeof(uint32_t));
    if (!slots) return -1;
    for (size_t k = 0; k < c->n; k++) {
        const CountedChunk *chunk = &c->chunks[k];
        size_t s = chunk_bytes_hash(c->bytes + chunk->offset, chunk->length) & (n_slots - 1);
        while (slots[s]) s = (s + 1) & (n_slots - 1);
        slots[s] = (uint32_t)k + 1;
    }
    free(c->slots);
    c->slots = slots;
    c->n_slots = n_slots;
    return 0;
}

int counter_add(ChunkCounter *c, const uint8_t *data, size_t length, int64_t count, int64_t first) {
    if (c->n + 1 > c->n_slots / 2) {
        size_t n_slots = c->n_slots ? c->n_slots * 2 : 1024;
        if (n_slots > ((size_t)1 << 33) || rehash(c, n_slots) < 0) return -1;
    }
    if (length > UINT32_MAX) return -1;
    size_t s = chunk_bytes_hash(data, length) & (c->n_slots - 1);
    for (; c->slots[s]; s = (s + 1) & (c->n_slots - 1)) {
        CountedChunk *chunk = &c->chunks[c->slots[s] - 1];
        if (same(c, chunk, data, length)) {
            chunk->count += count;
            if (first < chunk->first) chunk->first = first;
            return 0;
        }
    }
    if (c->n >= UINT32_MAX - 1) return -1;
    c->bytes = grow(&c->status, c->bytes, &c->bytes_capacity, c->used + length + 1, 1);
    c->chunks = grow(&c->status, c->chunks, &c->chunks_capacity, c->n + 1, sizeof(CountedChunk));
    if (c->status.failed) return -1;
    memcpy(c->bytes + c->used, data, length);
    c->chunks[c->n] = (CountedChunk){c->used, (uint32_t)length, count, first};
    c->used += length;
    c->slots[s] = (uint32_t)++c->n;
    return 0;
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

void counter_free(ChunkCounter *c) {
    free(c->bytes);
    free(c->chunks);
    free(c->slots);
    memset(c, 0, sizeof(*c));
}
