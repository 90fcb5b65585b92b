/* The vocabulary, the pair table and the queue (see wordpiece.h). */

#include <stdlib.h>
#include <string.h>

#include "wordpiece.h"

/* FNV-1a, then a final mix: the strings are short, and few (one a merge). */
uint64_t hash_bytes(const uint8_t *s, size_t length) {
    uint64_t h = 0xcbf29ce484222325u;
    for (size_t i = 0; i < length; i++) h = (h ^ s[i]) * 0x100000001b3u;
    return h ^ (h >> 29);
}

int list_add(List *l, uint32_t value) {
    if (l->n == l->room) {
        size_t room = l->room ? 2 * l->room : 1024;
        uint32_t *at = realloc(l->at, room * sizeof *at);
        if (!at) return -1;
        l->at = at;
        l->room = room;
    }
    l->at[l->n++] = value;
    return 0;
}

/* --- the vocabulary ---------------------------------------------------------------------- */

int vocab_init(Vocab *v) {
    memset(v, 0, sizeof *v);
    v->room = 4096;
    v->ids_room = 1024;
    v->mask = 2047;
    v->bytes = malloc(v->room);
    v->start = malloc(v->ids_room * sizeof *v->start);
    v->length = malloc(v->ids_room * sizeof *v->length);
    v->hash = malloc(v->ids_room * sizeof *v->hash);
    v->slots = malloc((v->mask + 1) * sizeof *v->slots);
    if (!v->bytes || !v->start || !v->length || !v->hash || !v->slots) return -1;
    memset(v->slots, 0xff, (v->mask + 1) * sizeof *v->slots);  /* all NO_SLOT */
    return 0;
}

void vocab_free(Vocab *v) {
    free(v->bytes);
    free(v->start);
    free(v->length);
    free(v->hash);
    free(v->slots);
    memset(v, 0, sizeof *v);
}

uint32_t vocab_find(const Vocab *v, const uint8_t *s, uint32_t length, uint64_t hash) {
    for (size_t i = hash & v->mask;; i = (i + 1) & v->mask) {
        uint32_t id = v->slots[i];
        if (id == NO_SLOT) return NO_SLOT;
        if (v->hash[id] == hash && v->length[id] == length
            && memcmp(v->bytes + v->start[id], s, length) == 0)
            return id;
    }
}

static void vocab_place(Vocab *v, uint32_t id) {
    size_t i = v->hash[id] & v->mask;
    while (v->slots[i] != NO_SLOT) i = (i + 1) & v->mask;
    v->slots[i] = id;
}

int vocab_add(Vocab *v, const uint8_t *s, uint32_t length, uint64_t hash) {
    if (v->used + length > v->room) {
        size_t room = v->room;
        while (v->used + length > room) room *= 2;
        uint8_t *bytes = realloc(v->bytes, room);
        if (!bytes) return -1;
        v->bytes = bytes;
        v->room = room;
    }
    if (v->n == v->ids_room) {
        uint32_t room = v->ids_room * 2;
        size_t *start = realloc(v->start, room * sizeof *start);
        if (!start) return -1;
        v->start = start;
        uint32_t *lengths = realloc(v->length, room * sizeof *lengths);
        if (!lengths) return -1;
        v->length = lengths;
        uint64_t *hashes = realloc(v->hash, room * sizeof *hashes);
        if (!hashes) return -1;
        v->hash = hashes;
        v->ids_room = room;
    }
    if (2 * ((size_t)v->n + 1) > v->mask + 1) {  /* keep the map at most half full */
        size_t slots = 2 * (v->mask + 1);
        uint32_t *fresh = malloc(slots * sizeof *fresh);
        if (!fresh) return -1;
        memset(fresh, 0xff, slots * sizeof *fresh);
        free(v->slots);
        v->slots = fresh;
        v->mask = slots - 1;
        for (uint32_t id = 0; id < v->n; id++) vocab_place(v, id);
    }
    /* (s is never inside v->bytes, which the realloc above may have moved: train.c builds a
       new string in a buffer of its own.) */
    memcpy(v->bytes + v->used, s, length);
    v->start[v->n] = v->used;
    v->length[v->n] = length;
    v->hash[v->n] = hash;
    v->used += length;
    vocab_place(v, v->n++);
    return 0;
}

/* --- the pair table ---------------------------------------------------------------------- */

/* The table at `slots` slots, every pair placed again. */
static int pairs_rehash(Pairs *p, size_t slots) {
    Pair *fresh = malloc(slots * sizeof *fresh);
    if (!fresh) return -1;
    for (size_t i = 0; i < slots; i++) fresh[i].key = EMPTY_PAIR;
    size_t mask = slots - 1;
    for (size_t j = 0; p->at && j <= p->mask; j++) {
        if (p->at[j].key == EMPTY_PAIR) continue;
        size_t i = pair_home(p->at[j].key, mask);
        while (fresh[i].key != EMPTY_PAIR) i = (i + 1) & mask;
        fresh[i] = p->at[j];
    }
    free(p->at);
    p->at = fresh;
    p->mask = mask;
    return 0;
}

int pairs_init(Pairs *p, size_t expected) {
    memset(p, 0, sizeof *p);
    return pairs_reserve(p, expected);
}

int pairs_reserve(Pairs *p, size_t more) {
    size_t slots = p->at ? p->mask + 1 : 1024;
    while (2 * (p->n + more) > slots) slots *= 2;  /* at most half full */
    if (slots > ((size_t)1 << 31)) return -1;      /* numbers are uint32, NO_SLOT excluded */
    return p->at && slots == p->mask + 1 ? 0 : pairs_rehash(p, slots);
}

void pairs_free(Pairs *p) {
    free(p->at);
    memset(p, 0, sizeof *p);
}

uint32_t pairs_slot(Pairs *p, uint32_t left, uint32_t right) {
    uint64_t key = (uint64_t)left << 32 | right;
    size_t i = pair_home(key, p->mask);
    for (; p->at[i].key != EMPTY_PAIR; i = (i + 1) & p->mask)
        if (p->at[i].key == key) return (uint32_t)i;
    if (2 * (p->n + 1) > p->mask + 1) return NO_SLOT;  /* not reserved */
    p->at[i] = (Pair){key, 0, 0, 0};  /* step 0: never gained */
    p->n++;
    return (uint32_t)i;
}

/* --- the queue's blocks ------------------------------------------------------------------ */

Block *block_new(size_t chunks) {
    Block *b = malloc(sizeof *b + chunks * sizeof b->chunks[0]);
    if (b) b->refs = 1;
    return b;
}

void block_release(Block *b) {
    if (b && --b->refs == 0) free(b);
}

/* --- the queue --------------------------------------------------------------------------- */

#define ARITY 4  /* children a node: a shallower heap than a binary one, fewer cache misses */

/* Whether item a comes out before item b (pushes are all different: a strict order). */
static inline int before(const Queue *q, const Item *a, const Item *b) {
    if (a->count != b->count) return a->count > b->count;
    if (a->key != b->key) return a->key < b->key;
    return q->held[a->ref].push < q->held[b->ref].push;
}

void queue_free(Queue *q) {
    for (size_t i = 0; i < q->n; i++) block_release(q->held[q->items[i].ref].block);
    for (size_t c = 0; q->aside && c < BUCKETS; c++) {
        for (size_t i = 0; i < q->aside[c].n; i++)
            block_release(q->held[q->aside[c].at[i].ref].block);
        free(q->aside[c].at);
    }
    free(q->items);
    free(q->aside);
    free(q->held);
    free(q->spare);
    memset(q, 0, sizeof *q);
}

/* Place `item` at or below slot i, moving smaller children up. */
static void sift_down(Queue *q, size_t i, Item item) {
    size_t n = q->n;
    for (;;) {
        size_t first = ARITY * i + 1, child = first;
        if (first >= n) break;
        for (size_t c = first + 1; c < first + ARITY && c < n; c++)
            if (before(q, &q->items[c], &q->items[child])) child = c;
        if (!before(q, &q->items[child], &item)) break;
        q->items[i] = q->items[child];
        i = child;
    }
    q->items[i] = item;
}

/* Room for `more` items in an array of them. */
static int items_fit(Item **items, size_t *room, size_t n, size_t more) {
    if (n + more <= *room) return 0;
    size_t fresh = *room ? 2 * *room : 4096;
    while (fresh < n + more) fresh *= 2;
    Item *grown = realloc(*items, fresh * sizeof *grown);
    if (!grown) return -1;
    *items = grown;
    *room = fresh;
    return 0;
}

/* Into the heap (room made). */
static void heap_add(Queue *q, Item item) {
    size_t i = q->n++;
    while (i > 0) {  /* sift up */
        size_t parent = (i - 1) / ARITY;
        if (!before(q, &item, &q->items[parent])) break;
        q->items[i] = q->items[parent];
        i = parent;
    }
    q->items[i] = item;
}

/* The heap is empty: lower the floor, a count at a time, until `let_in` entries or more are
   in the heap (or none is left aside). */
static int let_in(Queue *q) {
    size_t moved = 0;
    while (q->floor > INT64_MIN && moved < q->let_in) {
        Bucket *b = &q->aside[q->floor > 0 ? q->floor - 1 : 0];
        q->floor = q->floor > 1 ? q->floor - 1 : INT64_MIN;  /* bucket 0: counts 0 and less */
        if (b->n == 0) continue;
        if (items_fit(&q->items, &q->room, q->n, b->n) < 0) return -1;
        memcpy(q->items + q->n, b->at, b->n * sizeof *b->at);
        q->n += b->n;
        q->aside_n -= b->n;
        moved += b->n;
        free(b->at);
        *b = (Bucket){0};
    }
    for (size_t i = q->n / ARITY + 1; i-- > 0;)  /* heapify, bottom up */
        if (i < q->n) sift_down(q, i, q->items[i]);
    return 0;
}

/* The bucket an entry of `count` below the floor is set aside in. */
static inline Bucket *bucket_of(Queue *q, int64_t count) {
    return &q->aside[count > 0 ? count : 0];
}

/* Room for one more entry of `count`: in the heap, or aside. */
static int room_for(Queue *q, int64_t count) {
    if (count >= q->floor) return items_fit(&q->items, &q->room, q->n, 1);
    Bucket *b = bucket_of(q, count);
    if (b->n < b->room) return 0;
    uint32_t room = b->room ? 2 * b->room : 16;
    Item *at = realloc(b->at, room * sizeof *at);
    if (!at) return -1;
    b->at = at;
    b->room = room;
    return 0;
}

/* Into the heap, or aside below the floor (room made). */
static void place(Queue *q, Item item) {
    if (item.count >= q->floor) {
        heap_add(q, item);
    } else {
        Bucket *b = bucket_of(q, item.count);
        b->at[b->n++] = item;
        q->aside_n++;
    }
}

const Item *queue_top(Queue *q, int *failed) {
    *failed = 0;
    if (q->n == 0 && q->aside_n > 0 && let_in(q) < 0) {
        *failed = 1;
        return NULL;
    }
    return q->n ? &q->items[0] : NULL;
}

int queue_init(Queue *q, size_t let_in) {
    memset(q, 0, sizeof *q);
    q->let_in = let_in;
    q->floor = BUCKETS;
    q->aside = calloc(BUCKETS, sizeof *q->aside);
    return q->aside ? 0 : -1;
}

int queue_push(Queue *q, int64_t count, uint64_t key, uint32_t *chunks, Block *block, uint32_t n) {
    if (room_for(q, count) < 0) return -1;
    uint32_t ref;
    if (q->spare_n) {
        ref = q->spare[--q->spare_n];
    } else {
        if (q->held_n == q->held_room) {
            if (q->held_room >= UINT32_MAX / 2) return -1;
            uint32_t room = q->held_room ? 2 * q->held_room : 4096;
            Held *held = realloc(q->held, room * sizeof *held);
            if (!held) return -1;
            q->held = held;
            q->held_room = room;
        }
        ref = q->held_n++;
    }
    q->held[ref] = (Held){q->pushes++, chunks, block, n};
    block->refs++;
    place(q, (Item){count, key, ref});
    return 0;
}

int queue_renew_top(Queue *q, int64_t count) {
    if (room_for(q, count) < 0) return -1;
    Item top = q->items[0];
    top.count = count;
    q->held[top.ref].push = q->pushes++;
    if (count >= q->floor) {
        sift_down(q, 0, top);
        return 0;
    }
    Item last = q->items[--q->n];  /* out of the heap, aside */
    if (q->n > 0) sift_down(q, 0, last);
    place(q, top);
    return 0;
}

void queue_take(Queue *q, uint64_t *key, uint32_t **chunks, Block **block, uint32_t *n) {
    Item top = q->items[0];
    *key = top.key;
    *chunks = q->held[top.ref].chunks;
    *block = q->held[top.ref].block;
    *n = q->held[top.ref].n;
    if (q->spare_n == q->spare_room) {  /* a ref not kept for reuse is only memory unused */
        uint32_t room = q->spare_room ? 2 * q->spare_room : 4096;
        uint32_t *spare = realloc(q->spare, room * sizeof *spare);
        if (spare) {
            q->spare = spare;
            q->spare_room = room;
        }
    }
    if (q->spare_n < q->spare_room) q->spare[q->spare_n++] = top.ref;
    Item last = q->items[--q->n];
    if (q->n > 0) sift_down(q, 0, last);
}
