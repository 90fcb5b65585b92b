/*
 * The engine's data structures: growable arrays, position blocks (every pair's recorded
 * positions, each list contiguous inside one block), the open-addressing pair table, and the
 * binary heap of candidate pairs. Their types are in engine.h.
 */

#define _DEFAULT_SOURCE /* madvise, with -std=c11 */

#include "engine.h"

#include <stdlib.h>
#include <string.h>

#if defined(__linux__)
#include <sys/mman.h>
#include <unistd.h>
#endif

void *grow_to(Status *status, void *data, size_t *capacity, size_t needed, size_t item) {
    size_t capacity2 = *capacity ? *capacity : 16;
    while (capacity2 < needed) capacity2 *= 2;
    void *data2 = realloc(data, capacity2 * item);
    if (!data2) {
        status->failed = 1;
        return data;
    }
    *capacity = capacity2;
    return data2;
}

/* ---------------------------------------------------------------------------------------- */
/* Position blocks                                                                           */

/* Room for `count` bytes of lists; returns the block index and fills *offset. The caller adds one
   to the block's `live` for each list it puts there. */
uint32_t blocks_reserve(Status *status, Blocks *blocks, size_t count, size_t *offset) {
    Block *last = blocks->n ? &blocks->blocks[blocks->n - 1] : NULL;
    if (!last || last->closed || last->used + count > last->capacity) {
        if (last) {
            last->closed = 1;
            if (last->live == 0) { free(last->data); last->data = NULL; }
        }
        blocks->blocks = grow(status, blocks->blocks, &blocks->capacity, blocks->n + 1, sizeof(Block));
        if (status->failed) return NO_LIST;
        size_t capacity = count > blocks->block_bytes ? count : blocks->block_bytes;
        Block *block = &blocks->blocks[blocks->n];
        block->data = malloc(capacity + 1);
        if (!block->data) { status->failed = 1; return NO_LIST; }
        block->used = 0;
        block->capacity = capacity;
        block->live = 0;
        block->closed = 0;
        blocks->n++;
        last = block;
    }
    *offset = last->used;
    last->used += count;
    return (uint32_t)(blocks->n - 1);
}

/* A list (of `count` bytes) is dead: give its memory back when it can be. */
void blocks_release(Blocks *blocks, uint32_t block_index, size_t offset, size_t count) {
    Block *block = &blocks->blocks[block_index];
    if (--block->live == 0 && block->closed) {
        free(block->data);
        block->data = NULL;
        return;
    }
#if defined(__linux__)
    /* A large dead list in a block that lives on (the byte pairs' block): hand its whole pages
       back to the OS. Those positions are never read again. */
    size_t bytes = count;
    long page = sysconf(_SC_PAGESIZE);
    if (page > 0 && bytes >= (size_t)(4 * page)) {
        uintptr_t from = (uintptr_t)(block->data + offset);
        uintptr_t to = from + bytes;
        from = (from + (uintptr_t)page - 1) & ~((uintptr_t)page - 1);
        to &= ~((uintptr_t)page - 1);
        if (to > from) madvise((void *)from, to - from, MADV_DONTNEED);
    }
#else
    (void)offset;
    (void)count;
#endif
}

void blocks_free(Blocks *blocks) {
    for (size_t i = 0; i < blocks->n; i++) free(blocks->blocks[i].data);
    free(blocks->blocks);
    blocks->blocks = NULL;
    blocks->n = blocks->capacity = 0;
}

/* ---------------------------------------------------------------------------------------- */
/* The pair table                                                                            */

void table_rehash(Status *status, PairTable *table, size_t n_slots) {
    int32_t *slots = malloc(n_slots * sizeof(int32_t));
    if (!slots) { status->failed = 1; return; }
    memset(slots, 0xFF, n_slots * sizeof(int32_t));
    size_t mask = n_slots - 1;
    for (size_t i = 0; i < table->n; i++) {
        size_t slot = hash_key(table->pairs[i].key) & mask;
        while (slots[slot] >= 0) slot = (slot + 1) & mask;
        slots[slot] = (int32_t)i;
    }
    free(table->slots);
    table->slots = slots;
    table->n_slots = n_slots;
}

/* A new entry for a key that is not in the table. */
int32_t table_add(Status *status, PairTable *table, Key key, int64_t count) {
    if (2 * (table->n + 1) > table->n_slots) {
        table_rehash(status, table, table->n_slots ? 2 * table->n_slots : 1024);
        if (status->failed) return -1;
    }
    table->pairs = grow(status, table->pairs, &table->capacity, table->n + 1, sizeof(Pair));
    if (status->failed) return -1;
    Pair *pair = &table->pairs[table->n];
    pair->key = key;
    pair->count = count;
    pair->groups_at = 0;
    pair->n_groups = 0;
    pair->group_sum = 0;
    pair->block = NO_LIST;
    pair->bytes = 0;
    pair->offset = 0;
    pair->head = 0;
    pair->head_at = 0;
    size_t mask = table->n_slots - 1;
    size_t slot = hash_key(key) & mask;
    while (table->slots[slot] >= 0) slot = (slot + 1) & mask;
    table->slots[slot] = (int32_t)table->n;
    return (int32_t)table->n++;
}

void table_free(PairTable *table) {
    free(table->pairs);
    free(table->slots);
    memset(table, 0, sizeof(*table));
}

/* ---------------------------------------------------------------------------------------- */
/* The heap of candidates                                                                    */

static inline int candidate_before(const Candidate *a, const Candidate *b) {
    if (a->count != b->count) return a->count > b->count;
    if (a->first != b->first) return a->first < b->first;
    return a->key < b->key;
}

void heap_push(Status *status, Heap *heap, Candidate item) {
    heap->items = grow(status, heap->items, &heap->capacity, heap->n + 1, sizeof(Candidate));
    if (status->failed) return;
    size_t i = heap->n++;
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (!candidate_before(&item, &heap->items[parent])) break;
        heap->items[i] = heap->items[parent];
        i = parent;
    }
    heap->items[i] = item;
}

Candidate heap_pop(Heap *heap) {
    Candidate top = heap->items[0];
    Candidate last = heap->items[--heap->n];
    size_t i = 0, n = heap->n;
    for (;;) {
        size_t child = 2 * i + 1;
        if (child >= n) break;
        if (child + 1 < n && candidate_before(&heap->items[child + 1], &heap->items[child])) child++;
        if (!candidate_before(&heap->items[child], &last)) break;
        heap->items[i] = heap->items[child];
        i = child;
    }
    if (n) heap->items[i] = last;
    return top;
}
