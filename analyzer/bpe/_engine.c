/*
 * analyzer.bpe._engine: the compiled BPE engine.
 *
 * It learns exactly the merges of analyzer.bpe.reference.train_many (both tie-breaks, any
 * min_pair_count, texts weighted as w copies of themselves) and replays merge lists exactly as
 * reference.encode does, with flat arrays instead of Python objects. The algorithm is the pure
 * engine's (analyzer/bpe/trainer.py), which the comments there explain at more length:
 *
 *  - Texts arrive packed in one buffer, separated (and surrounded) by the byte 0xFF, which
 *    UTF-8 never uses. `tok` holds one int32 per byte: a token's id at its first byte, ~start
 *    (<= -2) at its last byte (so the left neighbour of position i is found from tok[i - 1]),
 *    and GAP (-1) everywhere else (separators and the inside of tokens).
 *  - Pair counts are kept up to date around each replaced occurrence, never recounted.
 *  - A pair's occurrences all appear in one step (when the later of its two tokens is made;
 *    byte pairs at the start), so its positions are recorded once, in ascending order, and its
 *    count only falls afterwards. Recorded positions are checked lazily against `tok`.
 *  - The best pair comes from a binary heap with lazy invalidation: an entry whose pair's
 *    count has fallen since it was pushed ranks too high, and is pushed again when popped.
 *
 * What is new here, for memory (a gigabyte corpus must fit):
 *
 *  - A count floor. Only pairs whose count reaches `floor` are stored (entry, heap, positions);
 *    a pair made with a smaller count can never beat a stored one while the best stored count
 *    is at least the floor, because a pair's count only falls after it is made. When the best
 *    stored count falls below the floor (or nothing is stored), `rescan` recounts every pair
 *    of the current tokens and lowers the floor (by 4x, down to min_pair_count). So the result
 *    is exact, and the many pairs that occur a handful of times cost nothing until the end.
 *  - Positions live in blocks: a pair's list is contiguous inside one block, a block is freed
 *    when the last list in it is dead (its pair merged or forgotten), and large dead lists in
 *    the first block (the byte pairs) are handed back to the OS page by page.
 *
 * Everything in `train` after argument parsing runs without the GIL; it is taken back every
 * `progress_every` merges to call the progress callback and to let Ctrl-C through.
 */

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#if defined(__linux__)
#include <sys/mman.h>
#include <unistd.h>
#endif

#define GAP (-1)
#define SEPARATOR 0xFF
#define FIRST_NEW_ID 256
#define MAX_IDS (1 << 24) /* analyzer.bpe.MAX_VOCAB_SIZE: ids fit in 24 bits */
#define NO_LIST UINT32_MAX

typedef uint64_t Key; /* (left << 32) | right: ordering keys orders pairs lexicographically */

static inline Key pair_key(int32_t left, int32_t right) { return ((Key)(uint32_t)left << 32) | (uint32_t)right; }
static inline int32_t key_left(Key key) { return (int32_t)(key >> 32); }
static inline int32_t key_right(Key key) { return (int32_t)(key & 0xFFFFFFFFu); }

/* A slot for a key: both halves of the key (left and right id) mixed into the low bits that
   the table's mask keeps (the finaliser of MurmurHash3). */
static inline uint64_t hash_key(Key key) {
    key ^= key >> 33;
    key *= 0xFF51AFD7ED558CCDull;
    key ^= key >> 33;
    key *= 0xC4CEB9FE1A85EC53ull;
    key ^= key >> 33;
    return key;
}

/* ------------------------------------------------------------------------------------------ */
/* Growable arrays and errors. Every allocation failure sets `failed`, and the training loop  */
/* stops at the next check; nothing is reported from here without the GIL.                    */

typedef struct {
    int failed; /* an allocation failed */
} Status;

static void *grow(Status *status, void *data, size_t *capacity, size_t needed, size_t item) {
    if (needed <= *capacity) return data;
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

/* ------------------------------------------------------------------------------------------ */
/* Position blocks: every pair's recorded positions, each list contiguous inside one block.    */

typedef struct {
    uint32_t *data;
    size_t used, capacity;
    size_t live; /* lists in this block not yet dead */
    int closed;  /* no more lists will be added */
} Block;

typedef struct {
    Block *blocks;
    size_t n, capacity;
    size_t block_items; /* the usual size of a new block */
} Blocks;

/* Room for `count` positions; returns the block index and fills *offset. The caller adds one
   to the block's `live` for each list it puts there. */
static uint32_t blocks_reserve(Status *status, Blocks *blocks, size_t count, size_t *offset) {
    Block *last = blocks->n ? &blocks->blocks[blocks->n - 1] : NULL;
    if (!last || last->closed || last->used + count > last->capacity) {
        if (last) {
            last->closed = 1;
            if (last->live == 0) { free(last->data); last->data = NULL; }
        }
        blocks->blocks = grow(status, blocks->blocks, &blocks->capacity, blocks->n + 1, sizeof(Block));
        if (status->failed) return NO_LIST;
        size_t capacity = count > blocks->block_items ? count : blocks->block_items;
        Block *block = &blocks->blocks[blocks->n];
        block->data = malloc(capacity * sizeof(uint32_t) + 1);
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

/* A list is dead: give its memory back when it can be. */
static void blocks_release(Blocks *blocks, uint32_t block_index, size_t offset, size_t count) {
    Block *block = &blocks->blocks[block_index];
    if (--block->live == 0 && block->closed) {
        free(block->data);
        block->data = NULL;
        return;
    }
#if defined(__linux__)
    /* A large dead list in a block that lives on (the byte pairs' block): hand its whole pages
       back to the OS. Those positions are never read again. */
    size_t bytes = count * sizeof(uint32_t);
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

static void blocks_free(Blocks *blocks) {
    for (size_t i = 0; i < blocks->n; i++) free(blocks->blocks[i].data);
    free(blocks->blocks);
    blocks->blocks = NULL;
    blocks->n = blocks->capacity = 0;
}

/* ------------------------------------------------------------------------------------------ */
/* Pairs: an open-addressing table from key to an entry.                                       */

typedef struct {
    Key key;
    int64_t count;   /* weighted count of current occurrences; -1 once merged or forgotten */
    uint32_t block;  /* where its positions are (NO_LIST: none recorded) */
    uint32_t n;      /* how many positions are recorded */
    uint64_t offset; /* first recorded position inside the block */
    uint32_t head;   /* "first" mode: index of the first recorded position that may be valid */
} Pair;

typedef struct {
    Pair *pairs;
    size_t n, capacity;
    int32_t *slots; /* index into pairs, or -1 */
    size_t n_slots; /* a power of two, at least twice n */
} PairTable;

static int32_t table_find(const PairTable *table, Key key) {
    size_t mask = table->n_slots - 1;
    for (size_t slot = hash_key(key) & mask;; slot = (slot + 1) & mask) {
        int32_t index = table->slots[slot];
        if (index < 0 || table->pairs[index].key == key) return index;
    }
}

static void table_rehash(Status *status, PairTable *table, size_t n_slots) {
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
static int32_t table_add(Status *status, PairTable *table, Key key, int64_t count) {
    if (2 * (table->n + 1) > table->n_slots) {
        table_rehash(status, table, table->n_slots ? 2 * table->n_slots : 1024);
        if (status->failed) return -1;
    }
    table->pairs = grow(status, table->pairs, &table->capacity, table->n + 1, sizeof(Pair));
    if (status->failed) return -1;
    Pair *pair = &table->pairs[table->n];
    pair->key = key;
    pair->count = count;
    pair->block = NO_LIST;
    pair->n = 0;
    pair->offset = 0;
    pair->head = 0;
    size_t mask = table->n_slots - 1;
    size_t slot = hash_key(key) & mask;
    while (table->slots[slot] >= 0) slot = (slot + 1) & mask;
    table->slots[slot] = (int32_t)table->n;
    return (int32_t)table->n++;
}

static void table_free(PairTable *table) {
    free(table->pairs);
    free(table->slots);
    memset(table, 0, sizeof(*table));
}

/* ------------------------------------------------------------------------------------------ */
/* The heap of candidate pairs. Higher count first; then, in "first" mode, the earlier first  */
/* occurrence; then the smaller key. An entry remembers the count (and first position) it was */
/* pushed with: when that is no longer the pair's, it is stale and ranks too high.            */

typedef struct {
    int64_t count;
    Key key;        /* a copy, so that comparing two candidates reads nothing else */
    uint32_t first;
    int32_t pair;   /* index into the table */
} Candidate;

typedef struct {
    Candidate *items;
    size_t n, capacity;
} Heap;

static inline int candidate_before(const Candidate *a, const Candidate *b) {
    if (a->count != b->count) return a->count > b->count;
    if (a->first != b->first) return a->first < b->first;
    return a->key < b->key;
}

static void heap_push(Status *status, Heap *heap, Candidate item) {
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

static Candidate heap_pop(Heap *heap) {
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

/* ------------------------------------------------------------------------------------------ */
/* Scratch of one merge: the pairs it creates, with their positions and weights, in the order */
/* they are found (ascending for each key). Aggregated once the merge is done.                 */

typedef struct {
    Key key;
    uint32_t position;
    uint32_t weight;
} Record;

typedef struct {
    Key key;
    int64_t count;
    uint32_t n, filled;
    int32_t pair; /* the entry it became, or -1 when below the floor */
} Made;

typedef struct {
    Record *records;
    size_t n, capacity;
    Record *lost; /* pairs an occurrence of which this merge destroyed (position unused) */
    size_t n_lost, lost_capacity;
    Made *made;
    size_t n_made, made_capacity;
    int32_t *slots; /* key -> index into made, reset after each merge */
    size_t n_slots;
} Scratch;

/* ------------------------------------------------------------------------------------------ */
/* The trainer.                                                                                */

typedef struct {
    Status status;
    int32_t *tok;
    size_t size;             /* bytes in the packed buffer */
    const uint8_t *buffer;   /* the packed buffer (owned by the bytes object, kept alive) */
    uint32_t *weight;        /* per position (NULL: every text weighs 1) */
    int32_t *length;         /* bytes of each id */
    size_t n_ids, length_capacity;
    int64_t min_count, floor;
    int first_mode;
    PairTable table;
    Heap heap;
    Blocks blocks;
    Scratch scratch;
    struct Groups *groups; /* NULL unless texts are in groups (languages) */
} Trainer;

/* Texts in groups (languages): each merge's replacements counted per group, and, for
   parity-aware training (Foroutan et al. 2025), each pair's count within each group and a heap
   per group, so that the group with the most tokens can take its own best pair. Pair counts
   and positions stay global (a merge applies to every group); only the choice is per group.
   A text of weight 0 is measured only: its pairs count for nothing, merges still apply. */
typedef struct {
    size_t start;            /* the first position of the run's first text */
    uint32_t multiplicity;   /* its texts' weight in the group's token count */
    uint16_t group;
} Run;

typedef struct Groups {
    /* Consecutive texts of one group and one multiplicity form a run: texts laid out language
       by language make a few runs, so finding a position's group is a search in a small array
       that stays in cache, where a per-position array cost a cache miss per occurrence. */
    Run *runs;
    size_t n_runs;
    size_t cursor;           /* the run found last: positions asked for mostly increase */
    int64_t *tokens;         /* per group: current tokens (multiplicities applied) */
    int64_t *applied;        /* per group: the current merge's replacements (weights applied) */
    int32_t n;
    int parity;
    int global_phase;        /* the next merge is chosen over all groups (the global heap) */
    PairTable counts;        /* parity: group_key(group, pair) -> count in the group */
    Heap *heaps;             /* parity: one per group; candidates name entries of `counts` */
    int32_t *touched;        /* scratch: entries of `counts` a merge created */
    size_t n_touched, touched_capacity;
} Groups;

/* The run holding `position` (a position inside a text): the last run starting at or before it. */
static inline const Run *run_at(Groups *groups, size_t position) {
    const Run *runs = groups->runs;
    size_t r = groups->cursor, n = groups->n_runs;
    if (runs[r].start <= position && (r + 1 == n || position < runs[r + 1].start)) return &runs[r];
    if (r + 1 < n && runs[r + 1].start <= position && (r + 2 == n || position < runs[r + 2].start)) {
        groups->cursor = r + 1;
        return &runs[r + 1];
    }
    size_t lo = 0, hi = n; /* the answer is in [lo, hi) */
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (runs[mid].start <= position) lo = mid; else hi = mid;
    }
    groups->cursor = lo;
    return &runs[lo];
}

static inline uint16_t group_at(Groups *groups, size_t position) {
    return run_at(groups, position)->group;
}

static inline Key group_key(uint32_t group, Key key) {
    return (Key)group << 48 | (Key)key_left(key) << 24 | (Key)key_right(key);
}

static inline uint32_t weight_at(const Trainer *t, size_t position) {
    return t->weight ? t->weight[position] : 1;
}

static inline const uint32_t *pair_positions(const Trainer *t, const Pair *pair) {
    return t->blocks.blocks[pair->block].data + pair->offset;
}

/* The first current occurrence of a pair ("first" mode rank); positions only move right. */
static uint32_t first_occurrence(Trainer *t, Pair *pair) {
    int32_t left = key_left(pair->key), right = key_right(pair->key);
    const uint32_t *positions = pair_positions(t, pair);
    for (uint32_t k = pair->head; k < pair->n; k++) {
        uint32_t i = positions[k];
        if (t->tok[i] == left && t->tok[i + t->length[left]] == right && weight_at(t, i)) {
            pair->head = k;
            return i;
        }
    }
    pair->head = pair->n;
    return UINT32_MAX; /* none left: its count is 0 */
}

/* The first current occurrence of a pair in one group's trained texts (no resumption: it is
   only needed in "first" mode with groups). */
static uint32_t group_first_occurrence(Trainer *t, Pair *pair, uint16_t group) {
    int32_t left = key_left(pair->key), right = key_right(pair->key);
    const uint32_t *positions = pair_positions(t, pair);
    for (uint32_t k = pair->head; k < pair->n; k++) {
        uint32_t i = positions[k];
        if (group_at(t->groups, i) == group && t->tok[i] == left && t->tok[i + t->length[left]] == right
            && weight_at(t, i))
            return i;
    }
    return UINT32_MAX;
}

static void push_pair(Trainer *t, int32_t index) {
    Pair *pair = &t->table.pairs[index];
    Candidate candidate = {pair->count, pair->key, 0, index};
    if (t->first_mode) candidate.first = first_occurrence(t, pair);
    heap_push(&t->status, &t->heap, candidate);
}

/* Push entry `entry` of the group counts on its group's heap (parity-aware training). The
   candidate carries the plain pair key, so that ties fall as in the global heap. */
static void push_group(Trainer *t, int32_t entry) {
    Groups *groups = t->groups;
    Pair *counted = &groups->counts.pairs[entry];
    uint16_t group = (uint16_t)(counted->key >> 48);
    Key key = pair_key((int32_t)(counted->key >> 24 & 0xFFFFFF), (int32_t)(counted->key & 0xFFFFFF));
    Candidate candidate = {counted->count, key, 0, entry};
    if (t->first_mode) {
        int32_t index = table_find(&t->table, key);
        candidate.first = index < 0 ? UINT32_MAX : group_first_occurrence(t, &t->table.pairs[index], group);
    }
    heap_push(&t->status, &groups->heaps[group], candidate);
}

/* A pair that will never be merged (merged already, or forgotten): its positions go. */
static void retire(Trainer *t, Pair *pair) {
    if (pair->block != NO_LIST) blocks_release(&t->blocks, pair->block, pair->offset, pair->n);
    pair->block = NO_LIST;
    pair->count = -1;
}

/* Walk the tokens of the packed buffer: `visit(t, left, right, left_start, right_start)` for
   every adjacent pair inside a text. A token is stored at its first byte; separators are GAP. */
#define FOR_EACH_PAIR(t, BODY)                                                              \
    do {                                                                                    \
        int32_t left_ = GAP;                                                                \
        size_t left_start_ = 0;                                                             \
        for (size_t p_ = 0; p_ < (t)->size;) {                                              \
            int32_t right_ = (t)->tok[p_];                                                  \
            if (right_ < 0) { left_ = GAP; p_++; continue; }                                \
            if (left_ >= 0) {                                                               \
                int32_t left = left_, right = right_;                                       \
                size_t left_start = left_start_, right_start = p_;                          \
                (void)left, (void)right, (void)right_start;                                 \
                BODY                                                                        \
            }                                                                               \
            left_ = right_;                                                                 \
            left_start_ = p_;                                                               \
            p_ += (size_t)(t)->length[right_];                                              \
        }                                                                                   \
    } while (0)

/* Store the pairs of `keys[0..n)` whose count reaches the floor: an entry each, room for their
   positions in one block (offsets set, lists still empty), and `stored[i]`, the entry of pair
   i (UINT32_MAX: not stored). */
static void store_counted(Trainer *t, size_t n, const Key *keys, const int64_t *counts,
                          const uint32_t *occurrences, uint32_t *stored) {
    Status *status = &t->status;
    size_t total = 0;
    for (size_t i = 0; i < n; i++) {
        if (counts[i] >= t->floor) total += occurrences[i];
    }
    size_t offset = 0;
    uint32_t block = total ? blocks_reserve(status, &t->blocks, total, &offset) : NO_LIST;
    for (size_t i = 0; i < n; i++) {
        stored[i] = UINT32_MAX;
        if (counts[i] < t->floor || status->failed) continue;
        int32_t index = table_add(status, &t->table, keys[i], counts[i]);
        if (index < 0) return;
        Pair *pair = &t->table.pairs[index];
        pair->block = block;
        pair->offset = offset;
        offset += occurrences[i];
        t->blocks.blocks[block].live++;
        stored[i] = (uint32_t)index;
    }
}

static inline void add_position(Trainer *t, uint32_t index, size_t position) {
    Pair *pair = &t->table.pairs[index];
    t->blocks.blocks[pair->block].data[pair->offset + pair->n++] = (uint32_t)position;
}

/* The start: every pair is a byte pair, counted in direct arrays (no hashing). */
static void count_byte_pairs(Trainer *t) {
    Status *status = &t->status;
    const size_t n = 1 << 16;
    Key *keys = malloc(n * sizeof(Key));
    int64_t *counts = calloc(n, sizeof(int64_t));
    uint32_t *occurrences = calloc(n, sizeof(uint32_t));
    uint32_t *stored = malloc(n * sizeof(uint32_t));
    if (!keys || !counts || !occurrences || !stored) {
        status->failed = 1;
    } else {
        for (size_t i = 0; i + 1 < t->size; i++) {
            if (t->tok[i] < 0 || t->tok[i + 1] < 0) continue;
            size_t pair = (size_t)t->tok[i] << 8 | (size_t)t->tok[i + 1];
            counts[pair] += weight_at(t, i);
            occurrences[pair]++;
        }
        for (size_t pair = 0; pair < n; pair++) keys[pair] = pair_key((int32_t)(pair >> 8), (int32_t)(pair & 0xFF));
        store_counted(t, n, keys, counts, occurrences, stored);
        for (size_t i = 0; i + 1 < t->size && !status->failed; i++) {
            if (t->tok[i] < 0 || t->tok[i + 1] < 0) continue;
            uint32_t index = stored[(size_t)t->tok[i] << 8 | (size_t)t->tok[i + 1]];
            if (index != UINT32_MAX) add_position(t, index, i);
        }
    }
    free(keys);
    free(counts);
    free(occurrences);
    free(stored);
}

/* Later: the pairs of the current tokens, counted in a temporary table in one hashing pass
   that also notes each occurrence's pair; the second pass (positions) needs no lookups. */
static void count_pairs(Trainer *t) {
    Status *status = &t->status;
    PairTable all = {0};
    size_t n_pairs = 0, capacity = 0;
    uint32_t *pair_of = NULL; /* the pair of each adjacent pair occurrence, in walk order */
    uint32_t *stored = NULL;
    Key *keys = NULL;
    int64_t *counts = NULL;
    uint32_t *occurrences = NULL;
    table_rehash(status, &all, 1 << 16);
    FOR_EACH_PAIR(t, {
        if (status->failed) break;
        Key key = pair_key(left, right);
        int32_t index = table_find(&all, key);
        if (index < 0) index = table_add(status, &all, key, 0);
        pair_of = grow(status, pair_of, &capacity, n_pairs + 1, sizeof(uint32_t));
        if (index < 0 || status->failed) break;
        all.pairs[index].count += weight_at(t, left_start);
        all.pairs[index].n++;
        pair_of[n_pairs++] = (uint32_t)index;
    });
    keys = malloc((all.n + 1) * sizeof(Key));
    counts = malloc((all.n + 1) * sizeof(int64_t));
    occurrences = malloc((all.n + 1) * sizeof(uint32_t));
    stored = malloc((all.n + 1) * sizeof(uint32_t));
    if (!keys || !counts || !occurrences || !stored) status->failed = 1;
    if (!status->failed) {
        size_t distinct = all.n;
        for (size_t i = 0; i < distinct; i++) {
            keys[i] = all.pairs[i].key;
            counts[i] = all.pairs[i].count;
            occurrences[i] = all.pairs[i].n;
        }
        table_free(&all); /* its memory goes before the stored pairs' is taken */
        store_counted(t, distinct, keys, counts, occurrences, stored);
        size_t k = 0;
        FOR_EACH_PAIR(t, {
            if (status->failed) break;
            uint32_t index = stored[pair_of[k++]];
            if (index != UINT32_MAX) add_position(t, index, left_start);
        });
    }
    table_free(&all);
    free(pair_of);
    free(keys);
    free(counts);
    free(occurrences);
    free(stored);
}

/* Parity-aware training: every stored pair's count in each group, recounted from the current
   tokens, and the groups' heaps rebuilt (at the start, and whenever the floor is lowered). */
static void group_recount(Trainer *t) {
    Groups *groups = t->groups;
    table_free(&groups->counts);
    table_rehash(&t->status, &groups->counts, 1024);
    for (int32_t g = 0; g < groups->n; g++) groups->heaps[g].n = 0;
    /* (No `continue` in the body: it would skip the macro's step to the next token.) */
    FOR_EACH_PAIR(t, {
        if (t->status.failed) break;
        uint32_t w = weight_at(t, left_start);
        Key key = pair_key(left, right);
        /* Pairs below the floor are kept nowhere; measured-only texts count for nothing. */
        if (w && table_find(&t->table, key) >= 0) {
            Key counted = group_key(group_at(groups, left_start), key);
            int32_t entry = table_find(&groups->counts, counted);
            if (entry < 0) entry = table_add(&t->status, &groups->counts, counted, 0);
            if (entry < 0) break;
            groups->counts.pairs[entry].count += w;
        }
    });
    for (size_t i = 0; i < groups->counts.n && !t->status.failed; i++) {
        if (groups->counts.pairs[i].count >= t->min_count) push_group(t, (int32_t)i);
    }
}

/* Count every adjacent pair of the current tokens and store those at or above the floor:
   entries, positions (ascending: the walks go left to right) and the heap, all built afresh.
   Exact by construction, so it serves for the start and whenever the floor is lowered. */
static void rescan(Trainer *t, int start) {
    for (size_t i = 0; i < t->table.n; i++) retire(t, &t->table.pairs[i]);
    table_free(&t->table);
    blocks_free(&t->blocks);
    t->heap.n = 0;
    table_rehash(&t->status, &t->table, 1024);
    if (start) count_byte_pairs(t);
    else count_pairs(t);
    if (t->blocks.n) t->blocks.blocks[t->blocks.n - 1].closed = 1;
    for (size_t i = 0; i < t->table.n && !t->status.failed; i++) push_pair(t, (int32_t)i);
    if (t->groups && t->groups->parity) group_recount(t);
}

/* The best pair to merge now, or -1 when none reaches min_count. */
static int32_t best_pair(Trainer *t) {
    for (;;) {
        while (t->heap.n && !t->status.failed) {
            Candidate top = heap_pop(&t->heap);
            Pair *pair = &t->table.pairs[top.pair];
            if (pair->count < 0) continue; /* merged already */
            if (pair->count < t->min_count) { /* it can never come back: forget it */
                retire(t, pair);
                continue;
            }
            Candidate current = {pair->count, pair->key, 0, top.pair};
            if (t->first_mode) current.first = first_occurrence(t, pair);
            if (current.count != top.count || current.first != top.first) {
                heap_push(&t->status, &t->heap, current); /* stale: rank it again */
                continue;
            }
            if (pair->count >= t->floor) return top.pair; /* the best: nothing unstored can tie */
            /* The best stored pair is below the floor, so pairs that were not stored may tie or
               beat it: recount everything with a lower floor. */
            break;
        }
        if (t->status.failed || t->floor <= t->min_count) return -1;
        t->floor = t->floor / 4 > t->min_count ? t->floor / 4 : t->min_count;
        rescan(t, 0);
    }
}

/* Parity-aware: the best pair of one group, by its count there (the global entry's index);
   -1 when the group has none reaching min_count; -2 when the floor must be lowered first (the
   group's best stored count is below it, or it has none stored while pairs were left out). */
static int32_t best_pair_group(Trainer *t, int32_t group) {
    Groups *groups = t->groups;
    Heap *heap = &groups->heaps[group];
    while (heap->n && !t->status.failed) {
        Candidate top = heap_pop(heap);
        int32_t index = table_find(&t->table, top.key);
        if (index < 0 || t->table.pairs[index].count < 0) continue; /* merged or forgotten */
        int64_t count = groups->counts.pairs[top.pair].count;
        if (count < t->min_count) continue; /* counts only fall: not this group's any more */
        Candidate current = {count, top.key, 0, top.pair};
        if (t->first_mode) current.first = group_first_occurrence(t, &t->table.pairs[index], (uint16_t)group);
        if (current.count != top.count || current.first != top.first) {
            heap_push(&t->status, heap, current); /* stale: rank it again */
            continue;
        }
        if (count >= t->floor) return index;
        heap_push(&t->status, heap, current);
        return -2;
    }
    return t->floor > t->min_count ? -2 : -1;
}

typedef struct {
    int64_t tokens;
    int32_t group;
} GroupTokens;

/* Most tokens first; ties to the lower group (the smaller language code). */
static int worst_first(const void *a, const void *b) {
    const GroupTokens *x = a, *y = b;
    if (x->tokens != y->tokens) return x->tokens > y->tokens ? -1 : 1;
    return (x->group > y->group) - (x->group < y->group);
}

/* Parity-aware: the pair of the group with the most tokens that has one; *chosen says which
   group. -1 when no group has a pair reaching min_count. */
static int32_t best_pair_parity(Trainer *t, GroupTokens *order, int32_t *chosen) {
    Groups *groups = t->groups;
    for (;;) {
        for (int32_t g = 0; g < groups->n; g++) order[g] = (GroupTokens){groups->tokens[g], g};
        qsort(order, (size_t)groups->n, sizeof(GroupTokens), worst_first);
        int lower = 0;
        for (int32_t k = 0; k < groups->n && !lower; k++) {
            int32_t index = best_pair_group(t, order[k].group);
            if (index >= 0) {
                *chosen = order[k].group;
                return index;
            }
            lower = index == -2;
        }
        if (!lower || t->status.failed) return -1;
        t->floor = t->floor / 4 > t->min_count ? t->floor / 4 : t->min_count;
        rescan(t, 0);
    }
}

static Made *scratch_made(Trainer *t, Key key) {
    Scratch *s = &t->scratch;
    size_t mask = s->n_slots - 1;
    size_t slot = hash_key(key) & mask;
    for (;; slot = (slot + 1) & mask) {
        int32_t index = s->slots[slot];
        if (index < 0) break;
        if (s->made[index].key == key) return &s->made[index];
    }
    s->made = grow(&t->status, s->made, &s->made_capacity, s->n_made + 1, sizeof(Made));
    if (t->status.failed) return NULL;
    s->slots[slot] = (int32_t)s->n_made;
    Made *made = &s->made[s->n_made++];
    made->key = key;
    made->count = 0;
    made->n = made->filled = 0;
    made->pair = -1;
    return made;
}

static inline void record(Trainer *t, Key key, size_t position, uint32_t weight) {
    Scratch *s = &t->scratch;
    s->records = grow(&t->status, s->records, &s->capacity, s->n + 1, sizeof(Record));
    if (t->status.failed) return;
    s->records[s->n++] = (Record){key, (uint32_t)position, weight};
}

/* An occurrence of (left, right), at `position`, is gone: its count falls, later (see
   apply_decrements). */
static inline void decrement(Trainer *t, int32_t left, int32_t right, size_t position, uint32_t weight) {
    Scratch *s = &t->scratch;
    s->lost = grow(&t->status, s->lost, &s->lost_capacity, s->n_lost + 1, sizeof(Record));
    if (t->status.failed) return;
    s->lost[s->n_lost++] = (Record){pair_key(left, right), (uint32_t)position, weight};
}

/* The counts of the pairs a merge destroyed occurrences of, lowered in one pass. Their order
   does not matter, so the table's slots and entries are fetched a few steps ahead: the
   lookups, which miss the cache when done one by one, overlap. */
static void apply_decrements(Trainer *t) {
    Scratch *s = &t->scratch;
    PairTable *table = &t->table;
    size_t mask = table->n_slots - 1, n = s->n_lost;
    const size_t ahead = 12;
    for (size_t k = 0; k < n && k < ahead; k++)
        __builtin_prefetch(&table->slots[hash_key(s->lost[k].key) & mask]);
    for (size_t k = 0; k < n; k++) {
        if (k + ahead < n) __builtin_prefetch(&table->slots[hash_key(s->lost[k + ahead].key) & mask]);
        if (k + ahead / 2 < n) {
            int32_t soon = table->slots[hash_key(s->lost[k + ahead / 2].key) & mask];
            if (soon >= 0) __builtin_prefetch(&table->pairs[soon]);
        }
        int32_t index = table_find(table, s->lost[k].key);
        if (index >= 0 && table->pairs[index].count > 0) table->pairs[index].count -= s->lost[k].weight;
    }
    Groups *groups = t->groups;
    if (groups && groups->parity) { /* the same, within the occurrence's group */
        for (size_t k = 0; k < n; k++) {
            if (!s->lost[k].weight) continue;
            Key counted = group_key(group_at(groups, s->lost[k].position), s->lost[k].key);
            int32_t entry = table_find(&groups->counts, counted);
            if (entry >= 0 && groups->counts.pairs[entry].count > 0)
                groups->counts.pairs[entry].count -= s->lost[k].weight;
        }
    }
    s->n_lost = 0;
}

/* Replace every current occurrence of the pair by z; the number of tokens replaced. */
static int64_t merge(Trainer *t, int32_t index, int32_t z) {
    Pair *pair = &t->table.pairs[index];
    int32_t a = key_left(pair->key), b = key_right(pair->key);
    int32_t la = t->length[a], lb = t->length[b];
    int32_t *tok = t->tok;
    pair->count = -1; /* merged: decrements of the pair itself (runs like aaa) do nothing */
    Scratch *s = &t->scratch;
    s->n = 0;
    s->n_lost = 0;
    int64_t replaced = 0;
    Groups *groups = t->groups;
    const uint32_t *positions = pair_positions(t, pair);
    const uint32_t ahead = 16; /* fetch the tokens of later occurrences while this one is done */
    for (uint32_t k = 0; k < pair->n && k < ahead; k++) __builtin_prefetch(&tok[positions[k]]);
    for (uint32_t k = 0; k < pair->n; k++) {
        if (k + ahead < pair->n) __builtin_prefetch(&tok[positions[k + ahead]]);
        size_t i = positions[k];
        if (tok[i] != a) continue;
        size_t j = i + (size_t)la;
        if (tok[j] != b) continue;
        size_t end = j + (size_t)lb;
        tok[i] = z;
        tok[j] = GAP;
        tok[end - 1] = ~(int32_t)i;
        uint32_t w = weight_at(t, i);
        replaced += w;
        if (groups) {
            const Run *run = run_at(groups, i);
            groups->applied[run->group] += w;
            groups->tokens[run->group] -= run->multiplicity;
        }
        int32_t x = tok[i - 1];
        if (x != GAP) {
            size_t start = i - 1;
            if (x < 0) { start = (size_t)~x; x = tok[start]; }
            if (x == z) {
                /* The replacement just before this one recorded (z, a) at its start; that a
                   is merged away now: the record is the last one made. */
                s->n--;
            } else {
                decrement(t, x, a, start, w);
            }
            record(t, pair_key(x, z), start, w);
        }
        int32_t y = tok[end];
        if (y >= 0) {
            decrement(t, b, y, i, w);
            record(t, pair_key(z, y), i, w);
        }
    }
    retire(t, pair);
    apply_decrements(t);
    if (t->status.failed) return replaced;

    /* The pairs this merge made: count them, store those at the floor, push them. */
    size_t want = 2;
    while (want < 2 * s->n + 16) want *= 2;
    if (want > s->n_slots) {
        free(s->slots);
        s->slots = malloc(want * sizeof(int32_t));
        if (!s->slots) { t->status.failed = 1; s->n_slots = 0; return replaced; }
        s->n_slots = want;
        memset(s->slots, 0xFF, want * sizeof(int32_t));
    }
    s->n_made = 0;
    for (size_t r = 0; r < s->n; r++) {
        Made *made = scratch_made(t, s->records[r].key);
        if (!made) return replaced;
        made->count += s->records[r].weight;
        made->n++;
    }
    size_t kept = 0;
    for (size_t m = 0; m < s->n_made; m++) {
        Made *made = &s->made[m];
        if (made->count >= t->floor) kept += made->n;
    }
    size_t offset = 0;
    uint32_t block = kept ? blocks_reserve(&t->status, &t->blocks, kept, &offset) : NO_LIST;
    for (size_t m = 0; m < s->n_made && !t->status.failed; m++) {
        Made *made = &s->made[m];
        if (made->count < t->floor) continue;
        int32_t created = table_add(&t->status, &t->table, made->key, made->count);
        if (created < 0) return replaced;
        Pair *stored = &t->table.pairs[created];
        stored->block = block;
        stored->offset = offset;
        stored->n = made->n;
        offset += made->n;
        t->blocks.blocks[block].live++;
        made->pair = created;
    }
    for (size_t r = 0; r < s->n && !t->status.failed; r++) {
        Made *made = scratch_made(t, s->records[r].key);
        if (made->pair < 0) continue;
        Pair *stored = &t->table.pairs[made->pair];
        t->blocks.blocks[block].data[stored->offset + made->filled++] = s->records[r].position;
    }
    int global_heap = !groups || !groups->parity || groups->global_phase;
    for (size_t m = 0; m < s->n_made && !t->status.failed && global_heap; m++) {
        if (s->made[m].pair >= 0) push_pair(t, s->made[m].pair);
    }
    if (groups && groups->parity) {
        /* Each kept pair's count in each group: new keys (they hold z), so new entries. */
        groups->n_touched = 0;
        for (size_t r = 0; r < s->n && !t->status.failed; r++) {
            Made *made = scratch_made(t, s->records[r].key);
            if (made->pair < 0 || !s->records[r].weight) continue;
            Key counted = group_key(group_at(groups, s->records[r].position), made->key);
            int32_t entry = table_find(&groups->counts, counted);
            if (entry < 0) {
                entry = table_add(&t->status, &groups->counts, counted, 0);
                groups->touched = grow(&t->status, groups->touched, &groups->touched_capacity,
                                       groups->n_touched + 1, sizeof(int32_t));
                if (entry < 0 || t->status.failed) return replaced;
                groups->touched[groups->n_touched++] = entry;
            }
            groups->counts.pairs[entry].count += s->records[r].weight;
        }
        for (size_t k = 0; k < groups->n_touched && !t->status.failed; k++) {
            if (groups->counts.pairs[groups->touched[k]].count >= t->min_count)
                push_group(t, groups->touched[k]);
        }
    }
    /* Reset the slots this merge used. */
    size_t mask = s->n_slots - 1;
    for (size_t m = 0; m < s->n_made; m++) {
        size_t slot = hash_key(s->made[m].key) & mask;
        while (s->slots[slot] >= 0) { s->slots[slot] = -1; slot = (slot + 1) & mask; }
    }
    return replaced;
}

static void trainer_free(Trainer *t) {
    free(t->tok);
    free(t->weight);
    free(t->length);
    table_free(&t->table);
    free(t->heap.items);
    blocks_free(&t->blocks);
    free(t->scratch.records);
    free(t->scratch.lost);
    free(t->scratch.made);
    free(t->scratch.slots);
}

/* The first floor: pairs rarer than about one per 64 KiB of text are not stored at first. */
static int64_t initial_floor(size_t size, int64_t min_count, const uint32_t *weight) {
    int64_t floor = (int64_t)(size >> 16);
    if (weight) floor = floor / 4; /* weighted texts are unique chunks: counts are larger */
    return floor > min_count ? floor : min_count;
}

/* ------------------------------------------------------------------------------------------ */
/* Python: train(buffer, starts, weights, vocab_size, min_pair_count, first, progress,        */
/*               progress_every)                                                               */

static int read_int64s(PyObject *object, Py_buffer *view, const char *name) {
    if (PyObject_GetBuffer(object, view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) return -1;
    if (view->itemsize != 8 || !view->format || (view->format[0] != 'q' && view->format[0] != 'Q')) {
        PyBuffer_Release(view);
        PyErr_Format(PyExc_TypeError, "%s must be an array of 64-bit ints", name);
        return -1;
    }
    return 0;
}

/* An optional int64 array with one value per text: 1 when given (the view then held), 0 for
   None, -1 with an exception (nothing held). */
static int read_per_text(PyObject *object, Py_buffer *view, const char *name, Py_ssize_t n_bytes) {
    if (object == Py_None) return 0;
    if (read_int64s(object, view, name) < 0) return -1;
    if (view->len != n_bytes) {
        PyBuffer_Release(view);
        PyErr_Format(PyExc_ValueError, "%s and starts differ in length", name);
        return -1;
    }
    return 1;
}

/* Call progress(done, total) with the GIL held; 0, or -1 with an exception set. */
static int report(PyObject *progress, Py_ssize_t done, Py_ssize_t total) {
    if (PyErr_CheckSignals() < 0) return -1;
    if (progress == Py_None) return 0;
    PyObject *result = PyObject_CallFunction(progress, "nn", done, total);
    if (!result) return -1;
    Py_DECREF(result);
    return 0;
}

static void groups_free(Groups *groups) {
    free(groups->runs);
    free(groups->tokens);
    free(groups->applied);
    table_free(&groups->counts);
    if (groups->heaps) {
        for (int32_t g = 0; g < groups->n; g++) free(groups->heaps[g].items);
        free(groups->heaps);
    }
    free(groups->touched);
}

/* Set up `groups` from one group number per text (and, for parity-aware training, one
   multiplicity per text: its weight in its group's token count). 0, or -1 with an exception. */
static int groups_init(Groups *groups, const Trainer *t, const int64_t *starts, Py_ssize_t n_texts,
                       const int64_t *group_of_text, const int64_t *multiplicities, int parity) {
    int64_t largest = -1;
    for (Py_ssize_t k = 0; k < n_texts; k++) {
        if (group_of_text[k] < 0 || group_of_text[k] >= (1 << 16)) {
            PyErr_SetString(PyExc_ValueError, "groups must be from 0 to 65535");
            return -1;
        }
        if (group_of_text[k] > largest) largest = group_of_text[k];
        if (multiplicities && (multiplicities[k] < 0 || multiplicities[k] > UINT32_MAX)) {
            PyErr_SetString(PyExc_ValueError, "multiplicities must be from 0 to 2**32 - 1");
            return -1;
        }
    }
    groups->n = (int32_t)(largest + 1);
    groups->parity = parity;
    groups->runs = malloc(((size_t)n_texts + 1) * sizeof(Run));
    groups->tokens = calloc((size_t)groups->n + 1, sizeof(int64_t));
    groups->applied = calloc((size_t)groups->n + 1, sizeof(int64_t));
    if (parity) groups->heaps = calloc((size_t)groups->n + 1, sizeof(Heap));
    if (!groups->runs || !groups->tokens || !groups->applied || (parity && !groups->heaps)) {
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t k = 0; k < n_texts; k++) {
        size_t from = (size_t)starts[k];
        size_t end = k + 1 < n_texts ? (size_t)starts[k + 1] - 1 : t->size - 1; /* its separator */
        uint16_t group = (uint16_t)group_of_text[k];
        /* Only parity-aware training follows a group's tokens (by default each text once);
           otherwise 0 everywhere keeps the runs long. */
        uint32_t m = multiplicities ? (uint32_t)multiplicities[k] : (parity ? 1 : 0);
        Run *last = groups->n_runs ? &groups->runs[groups->n_runs - 1] : NULL;
        if (!last || last->group != group || last->multiplicity != m)
            groups->runs[groups->n_runs++] = (Run){k ? from : 0, m, group};
        groups->tokens[group] += (int64_t)m * (int64_t)(end - from);
    }
    return 0;
}

static PyObject *engine_train(PyObject *self, PyObject *args, PyObject *kwargs) {
    static char *keywords[] = {"buffer", "starts", "weights", "vocab_size", "min_pair_count",
                               "first", "progress", "progress_every", "groups", "multiplicities",
                               "parity", "global_merges", "floor", NULL};
    Py_buffer buffer, starts_view, weights_view = {0}, groups_view = {0}, multiplicities_view = {0};
    PyObject *starts_object, *weights_object, *progress;
    PyObject *groups_object = Py_None, *multiplicities_object = Py_None;
    Py_ssize_t vocab_size, progress_every, global_merges = 0;
    long long min_pair_count, forced_floor = 0;
    int first, parity = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "y*OOnLpOn|OOpnL", keywords, &buffer, &starts_object,
                                     &weights_object, &vocab_size, &min_pair_count, &first,
                                     &progress, &progress_every, &groups_object,
                                     &multiplicities_object, &parity, &global_merges, &forced_floor))
        return NULL;
    PyObject *result = NULL;
    Trainer t = {0};
    Groups groups = {0};
    GroupTokens *order = NULL;
    int have_starts = 0, have_weights = 0, have_groups = 0, have_multiplicities = 0;
    int32_t *lefts = NULL, *rights = NULL, *chosen = NULL;
    int64_t *counts = NULL, *applied = NULL, *group_applied = NULL;
    if ((size_t)buffer.len >= (size_t)INT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "the compiled engine trains on at most 2 GiB of text at once");
        goto done;
    }
    if (vocab_size < FIRST_NEW_ID || vocab_size > MAX_IDS || min_pair_count < 1 || progress_every < 1
        || global_merges < 0) {
        PyErr_SetString(PyExc_ValueError, "vocab_size, min_pair_count, progress_every or global_merges out of range");
        goto done;
    }
    if (read_int64s(starts_object, &starts_view, "starts") < 0) goto done;
    have_starts = 1;
    Py_ssize_t n_texts = starts_view.len / 8;
    if ((have_groups = read_per_text(groups_object, &groups_view, "groups", starts_view.len)) < 0
        || (have_multiplicities = read_per_text(multiplicities_object, &multiplicities_view,
                                                "multiplicities", starts_view.len)) < 0
        || (have_weights = read_per_text(weights_object, &weights_view, "weights",
                                         starts_view.len)) < 0)
        goto done;
    if (parity && !have_groups) {
        PyErr_SetString(PyExc_ValueError, "parity-aware training needs groups");
        goto done;
    }
    Py_ssize_t n_merges = vocab_size - FIRST_NEW_ID;
    t.size = (size_t)buffer.len;
    t.buffer = buffer.buf;
    t.min_count = min_pair_count;
    t.first_mode = first;
    t.tok = malloc(t.size * sizeof(int32_t) + 4);
    t.length_capacity = FIRST_NEW_ID + 1024;
    t.length = malloc(t.length_capacity * sizeof(int32_t));
    lefts = malloc(((size_t)n_merges + 1) * sizeof(int32_t));
    rights = malloc(((size_t)n_merges + 1) * sizeof(int32_t));
    counts = malloc(((size_t)n_merges + 1) * sizeof(int64_t));
    applied = malloc(((size_t)n_merges + 1) * sizeof(int64_t));
    if (!t.tok || !t.length || !lefts || !rights || !counts || !applied) {
        PyErr_NoMemory();
        goto done;
    }
    if (have_weights) {
        const int64_t *starts = starts_view.buf, *weights = weights_view.buf;
        int64_t lowest = have_groups ? 0 : 1; /* weight 0 (measured only) needs groups */
        int heavy = 0;
        for (Py_ssize_t k = 0; k < n_texts; k++) {
            if (weights[k] < lowest || weights[k] > UINT32_MAX) {
                PyErr_SetString(PyExc_ValueError, lowest ? "weights must be from 1 to 2**32 - 1"
                                                         : "weights must be from 0 to 2**32 - 1");
                goto done;
            }
            heavy |= weights[k] != 1;
        }
        if (heavy) {
            t.weight = malloc(t.size * sizeof(uint32_t));
            if (!t.weight) { PyErr_NoMemory(); goto done; }
            for (Py_ssize_t k = 0; k < n_texts; k++) {
                size_t from = (size_t)starts[k];
                size_t to = k + 1 < n_texts ? (size_t)starts[k + 1] : t.size;
                for (size_t p = from ? from - 1 : 0; p < to; p++) t.weight[p] = (uint32_t)weights[k];
            }
        }
    }
    if (have_groups) {
        if (groups_init(&groups, &t, starts_view.buf, n_texts, groups_view.buf,
                        have_multiplicities ? multiplicities_view.buf : NULL, parity) < 0)
            goto done;
        if ((size_t)groups.n * ((size_t)n_merges + 1) > ((size_t)1 << 31)) {
            PyErr_SetString(PyExc_ValueError, "too many groups times merges to report on");
            goto done;
        }
        chosen = malloc(((size_t)n_merges + 1) * sizeof(int32_t));
        group_applied = calloc((size_t)groups.n * ((size_t)n_merges + 1), sizeof(int64_t));
        order = malloc(((size_t)groups.n + 1) * sizeof(GroupTokens));
        if (!chosen || !group_applied || !order) { PyErr_NoMemory(); goto done; }
        groups.global_phase = parity && global_merges > 0;
        t.groups = &groups;
    }
    t.n_ids = FIRST_NEW_ID;
    for (int b = 0; b < FIRST_NEW_ID; b++) t.length[b] = 1;
    Py_ssize_t learned = 0;
    int stopped_early = 0, interrupted = 0;
    size_t block_items = t.size / 64;
    t.blocks.block_items = block_items > 4096 ? block_items : 4096;
    Py_BEGIN_ALLOW_THREADS
    const uint8_t *bytes = t.buffer;
    for (size_t p = 0; p < t.size; p++) t.tok[p] = bytes[p] == SEPARATOR ? GAP : bytes[p];
    t.floor = initial_floor(t.size, t.min_count, t.weight);
    if (parity) {
        /* A group's counts are a share of the whole: a floor from the whole text would be
           above most of them, and each group's heap would soon run dry and ask for a rescan.
           So the floor follows the smallest group's share. */
        size_t smallest = t.size;
        for (int32_t g = 0; g < groups.n; g++) {
            size_t bytes = (size_t)groups.tokens[g];
            if (bytes && bytes < smallest) smallest = bytes;
        }
        t.floor = initial_floor(smallest, t.min_count, t.weight);
    }
    /* Tests start from a high floor on small texts, so that the recounts are exercised. */
    if (forced_floor > t.min_count) t.floor = forced_floor;
    rescan(&t, 1);
    Py_END_ALLOW_THREADS
    while (learned < n_merges && !t.status.failed && !interrupted) {
        Py_ssize_t until = learned + progress_every < n_merges ? learned + progress_every : n_merges;
        Py_BEGIN_ALLOW_THREADS
        while (learned < until) {
            int32_t group = -1, index;
            if (parity && learned >= global_merges) index = best_pair_parity(&t, order, &group);
            else index = best_pair(&t);
            if (index < 0 || t.status.failed) { stopped_early = 1; break; }
            Key key = t.table.pairs[index].key;
            int64_t count = group >= 0 ? 0 : t.table.pairs[index].count;
            if (group >= 0) { /* the count it was chosen on: the group's own */
                int32_t entry = table_find(&groups.counts, group_key((uint32_t)group, key));
                count = entry >= 0 ? groups.counts.pairs[entry].count : 0;
            }
            int32_t z = (int32_t)(FIRST_NEW_ID + learned);
            t.length = grow(&t.status, t.length, &t.length_capacity, (size_t)z + 1, sizeof(int32_t));
            if (t.status.failed) break;
            t.length[z] = t.length[key_left(key)] + t.length[key_right(key)];
            t.n_ids = (size_t)z + 1;
            if (t.groups) {
                groups.global_phase = parity && learned + 1 < global_merges;
                memset(groups.applied, 0, (size_t)groups.n * sizeof(int64_t));
            }
            int64_t replaced = merge(&t, index, z);
            lefts[learned] = key_left(key);
            rights[learned] = key_right(key);
            counts[learned] = count;
            applied[learned] = replaced;
            if (t.groups) {
                chosen[learned] = group;
                for (int32_t g = 0; g < groups.n; g++)
                    group_applied[(size_t)g * (size_t)n_merges + (size_t)learned] = groups.applied[g];
            }
            learned++;
        }
        Py_END_ALLOW_THREADS
        if (t.status.failed) break;
        if (report(progress, learned, n_merges) < 0) interrupted = 1;
        if (stopped_early) break;
    }
    if (interrupted) goto done;
    if (t.status.failed) { PyErr_NoMemory(); goto done; }
    const char *stop = learned < n_merges ? "min_pair_count" : "vocab_size";
    if (!t.groups) {
        result = Py_BuildValue("y#y#y#y#s", (char *)lefts, (Py_ssize_t)(learned * 4),
                               (char *)rights, (Py_ssize_t)(learned * 4), (char *)counts,
                               (Py_ssize_t)(learned * 8), (char *)applied, (Py_ssize_t)(learned * 8),
                               stop);
    } else {
        /* group_applied is group-major with n_merges columns: keep the learned ones of each. */
        for (int32_t g = 1; g < groups.n; g++)
            memmove(group_applied + (size_t)g * (size_t)learned,
                    group_applied + (size_t)g * (size_t)n_merges, (size_t)learned * sizeof(int64_t));
        result = Py_BuildValue("y#y#y#y#sy#y#", (char *)lefts, (Py_ssize_t)(learned * 4),
                               (char *)rights, (Py_ssize_t)(learned * 4), (char *)counts,
                               (Py_ssize_t)(learned * 8), (char *)applied, (Py_ssize_t)(learned * 8),
                               stop, (char *)chosen, (Py_ssize_t)(learned * 4), (char *)group_applied,
                               (Py_ssize_t)((size_t)groups.n * (size_t)learned * 8));
    }
done:
    t.groups = NULL;
    trainer_free(&t);
    groups_free(&groups);
    free(order);
    free(lefts);
    free(rights);
    free(counts);
    free(applied);
    free(chosen);
    free(group_applied);
    if (have_weights > 0) PyBuffer_Release(&weights_view); /* -1: a read that failed holds nothing */
    if (have_groups > 0) PyBuffer_Release(&groups_view);
    if (have_multiplicities > 0) PyBuffer_Release(&multiplicities_view);
    if (have_starts) PyBuffer_Release(&starts_view);
    PyBuffer_Release(&buffer);
    return result;
}

/* ------------------------------------------------------------------------------------------ */
/* Replay: encode and count with a merge list, as reference.encode does. Texts are replayed   */
/* in batches of about REPLAY_BATCH bytes, so that a batch's token array and lists stay in the */
/* cache. In a batch, as in training: the ranks of the merges whose pair is present wait in a */
/* heap; each rank's occurrences are recorded when its pair appears (all at once: a pair       */
/* appears when the later of its two tokens is made) and checked lazily against `tok`; each   */
/* merge is applied once, in rank order, left to right. A batch costs a heap operation per    */
/* rank present, not per occurrence.                                                          */

#define REPLAY_BATCH (1 << 18)
#define BATCH_TEXTS 65535

/* The merges an id takes part in, as one side, sorted by the id on the other side: when id z
   is made, the new pairs (x, z) and (z, y) are looked up in z's own short lists, which stay
   in the cache while z's occurrences are replaced. */
typedef struct {
    int32_t partner;
    int32_t rank;
} Partner;

#define SHORT_LIST 8 /* lists this long or shorter are scanned; longer ones get a hash table */

typedef struct {
    PyObject_HEAD
    Py_ssize_t n_merges;
    int32_t *lefts, *rights; /* by rank */
    int32_t *length;         /* bytes of each id */
    uint8_t **piece;         /* the bytes of each id (pointers into `pieces`) */
    uint8_t *pieces;
    int32_t *byte_rank;      /* (left << 8 | right) -> first rank of that byte pair, or -1 */
    uint32_t *as_left;       /* id -> where its merges as the left id start in `partners`; */
    uint32_t *as_right;      /* the lists of id i end where those of id i + 1 begin */
    Partner *partners;       /* right partners (for as_left), then left partners (as_right) */
    uint32_t *hash_at;       /* by list (as_left lists, then as_right ones): its hash table's */
    Partner *hashed;         /* start in `hashed` (a long list: 2 x length slots, a power of two,
                                empty slots with partner -1); short lists have none */
} Replayer;

typedef struct {
    uint32_t position;
    int32_t rank;
} RankRecord;

typedef struct {
    Status status;
    int32_t *tok;              /* the batch, as in training: id at a token's start, ~start at its last byte */
    uint16_t *text_of;         /* the batch's text of each position (a batch has < 65536 texts) */
    uint32_t *tokens;          /* each text's tokens now */
    size_t tok_capacity;
    uint32_t *list_start;      /* by rank: where its list begins in `arena` */
    uint32_t *list_n;          /* by rank: how many positions (0: none yet) */
    int32_t *touched;          /* ranks recorded by the current step */
    size_t n_touched;
    RankRecord *records;       /* positions found by the current step, in order */
    size_t n_records, records_capacity;
    uint32_t *arena;           /* every list of the batch, one after the other */
    size_t arena_used, arena_capacity;
    uint64_t *waiting;         /* a bit per rank whose list waits; ranks only come after the
                                  one being applied (a new pair's merge uses the new id), so
                                  the next is found by scanning forward */
    size_t n_words;
} Work;

/* Partners in order, and a repeated pair's first rank before its later ones. */
static int partner_order(const void *a, const void *b) {
    const Partner *x = a, *y = b;
    if (x->partner != y->partner) return x->partner < y->partner ? -1 : 1;
    return (x->rank > y->rank) - (x->rank < y->rank);
}

static inline size_t partner_slot(int32_t partner, size_t mask) {
    return (size_t)((uint32_t)partner * 2654435761u) & mask;
}

/* The first rank (below `limit`) of the merge of `partner` in list `list` (`n` entries, or a
   hash table for a long list), or -1. These lookups are many and their outcomes irregular: a
   short list is scanned without data-dependent branches, a long one hashed. */
static inline int32_t find_partner(const Replayer *r, size_t list, const Partner *entries, size_t n,
                                   int32_t partner, Py_ssize_t limit) {
    int32_t rank = -1;
    if (n <= SHORT_LIST) {
        for (size_t k = n; k-- > 0;) rank = entries[k].partner == partner ? entries[k].rank : rank;
    } else {
        const Partner *table = r->hashed + r->hash_at[list];
        size_t mask = (size_t)(r->hash_at[list + 1] - r->hash_at[list]) - 1;
        for (size_t slot = partner_slot(partner, mask);; slot = (slot + 1) & mask) {
            if (table[slot].partner == partner) { rank = table[slot].rank; break; }
            if (table[slot].partner < 0) break;
        }
    }
    return rank < limit ? rank : -1;
}

/* The rank of pair (x, z) where z is new: among z's merges as the right id. */
static inline int32_t rank_with_left(const Replayer *r, int32_t x, int32_t z, Py_ssize_t limit) {
    size_t n_ids = (size_t)r->n_merges + FIRST_NEW_ID;
    return find_partner(r, n_ids + (size_t)z, r->partners + r->as_right[z],
                        r->as_right[z + 1] - r->as_right[z], x, limit);
}

/* The rank of pair (z, y) where z is new: among z's merges as the left id. */
static inline int32_t rank_with_right(const Replayer *r, int32_t z, int32_t y, Py_ssize_t limit) {
    return find_partner(r, (size_t)z, r->partners + r->as_left[z], r->as_left[z + 1] - r->as_left[z],
                        y, limit);
}

static inline void rank_push(Work *w, int32_t rank) {
    w->waiting[(size_t)rank >> 6] |= 1ull << (rank & 63);
}

/* The smallest waiting rank at or after `from`, taken out of the set; -1 when none. */
static inline int32_t rank_pop(Work *w, size_t *word) {
    for (; *word < w->n_words; (*word)++) {
        uint64_t bits = w->waiting[*word];
        if (bits) {
            int bit = __builtin_ctzll(bits);
            w->waiting[*word] = bits & (bits - 1);
            return (int32_t)(*word * 64 + (size_t)bit);
        }
    }
    return -1;
}

static inline void replay_record(Work *w, int32_t rank, size_t position) {
    w->records = grow(&w->status, w->records, &w->records_capacity, w->n_records + 1, sizeof(RankRecord));
    if (w->status.failed) return;
    w->records[w->n_records++] = (RankRecord){(uint32_t)position, rank};
}

/* Turn the records of one step into each rank's list (in the order found: ascending) and
   push the ranks. A rank's list is made in one step only, so it never has to grow. */
static void replay_lists(Work *w) {
    size_t n = w->n_records;
    if (!n) return;
    w->arena = grow(&w->status, w->arena, &w->arena_capacity, w->arena_used + n, sizeof(uint32_t));
    if (w->status.failed) return;
    RankRecord *records = w->records;
    w->n_touched = 0;
    for (size_t k = 0; k < n; k++) {
        int32_t rank = records[k].rank;
        if (w->list_n[rank]++ == 0) w->touched[w->n_touched++] = rank;
    }
    for (size_t k = 0; k < w->n_touched; k++) {
        int32_t rank = w->touched[k];
        w->list_start[rank] = (uint32_t)w->arena_used;
        w->arena_used += w->list_n[rank];
        w->list_n[rank] = 0; /* refilled below */
        rank_push(w, rank);
    }
    for (size_t k = 0; k < n; k++) {
        int32_t rank = records[k].rank;
        w->arena[w->list_start[rank] + w->list_n[rank]++] = records[k].position;
    }
    w->n_records = 0;
}

/* Replay the merges of rank < limit on one batch: `size` bytes of packed texts (0xFF before,
   between and after them) whose texts start at text_starts[0..n_texts) (batch offsets).
   counts[s * stride + k] gets text k's tokens just before the merge of rank snapshot[s];
   replaced[rank * replaced_stride + group_of[k]] counts each merge's replacements (if given). */
static void replay_batch(const Replayer *r, Work *w, const uint8_t *bytes, size_t size,
                         Py_ssize_t limit, const int64_t *text_starts, Py_ssize_t n_texts,
                         const int64_t *snapshot, Py_ssize_t n_snapshots, uint32_t *counts,
                         size_t stride, int64_t *replaced, size_t replaced_stride,
                         const int32_t *group_of) {
    if (size > w->tok_capacity) {
        free(w->tok);
        free(w->text_of);
        w->tok = malloc(size * sizeof(int32_t));
        w->text_of = malloc(size * sizeof(uint16_t));
        w->tok_capacity = w->tok && w->text_of ? size : 0;
        if (!w->tok_capacity) { w->status.failed = 1; return; }
    }
    int32_t *tok = w->tok;
    uint16_t *text_of = w->text_of;
    uint32_t *tokens = w->tokens;
    for (size_t i = 0; i < size; i++) tok[i] = bytes[i] == SEPARATOR ? GAP : bytes[i];
    for (Py_ssize_t k = 0; k < n_texts; k++) {
        size_t from = (size_t)text_starts[k], to = k + 1 < n_texts ? (size_t)text_starts[k + 1] : size;
        for (size_t i = from; i < to; i++) text_of[i] = (uint16_t)k;
        tokens[k] = (uint32_t)(to - from - 1); /* its bytes: all but the separator after it */
    }
    /* The byte pairs' lists, by counting sort straight from the bytes. */
    w->arena_used = 0;
    w->n_records = 0;
    w->n_touched = 0;
    for (size_t i = 0; i + 1 < size; i++) {
        int32_t rank = r->byte_rank[bytes[i] << 8 | bytes[i + 1]]; /* -1 for the separator's pairs */
        if (rank >= 0 && rank < limit && w->list_n[rank]++ == 0) w->touched[w->n_touched++] = rank;
    }
    w->arena = grow(&w->status, w->arena, &w->arena_capacity, size, sizeof(uint32_t));
    if (w->status.failed) return;
    for (size_t k = 0; k < w->n_touched; k++) {
        int32_t rank = w->touched[k];
        w->list_start[rank] = (uint32_t)w->arena_used;
        w->arena_used += w->list_n[rank];
        w->list_n[rank] = 0;
        rank_push(w, rank);
    }
    for (size_t i = 0; i + 1 < size; i++) {
        int32_t rank = r->byte_rank[bytes[i] << 8 | bytes[i + 1]];
        if (rank >= 0 && rank < limit) w->arena[w->list_start[rank] + w->list_n[rank]++] = (uint32_t)i;
    }
    Py_ssize_t s = 0;
    size_t word = 0;
    for (int32_t rank; !w->status.failed && (rank = rank_pop(w, &word)) >= 0;) {
        for (; s < n_snapshots && snapshot[s] <= rank; s++)
            memcpy(counts + (size_t)s * stride, tokens, (size_t)n_texts * sizeof(uint32_t));
        int32_t a = r->lefts[rank], b = r->rights[rank], z = FIRST_NEW_ID + rank;
        int32_t la = r->length[a], lb = r->length[b];
        const uint32_t *positions = w->arena + w->list_start[rank];
        uint32_t n = w->list_n[rank];
        w->list_n[rank] = 0; /* done with this rank in this batch */
        const uint32_t ahead = 8; /* fetch later occurrences' tokens while this one is done */
        for (uint32_t k = 0; k < n && k < ahead; k++) {
            __builtin_prefetch(&tok[positions[k]]);
            __builtin_prefetch(&text_of[positions[k]]);
        }
        for (uint32_t k = 0; k < n; k++) {
            if (k + ahead < n) {
                __builtin_prefetch(&tok[positions[k + ahead]]);
                __builtin_prefetch(&text_of[positions[k + ahead]]);
            }
            size_t i = positions[k];
            if (tok[i] != a) continue;
            size_t j = i + (size_t)la;
            if (tok[j] != b) continue;
            size_t end = j + (size_t)lb;
            tok[i] = z;
            tok[j] = GAP;
            tok[end - 1] = ~(int32_t)i;
            uint16_t text = text_of[i];
            tokens[text]--;
            if (replaced) replaced[(size_t)rank * replaced_stride + (size_t)group_of[text]]++;
            int32_t x = tok[i - 1];
            if (x != GAP) {
                size_t start = i - 1;
                if (x < 0) { start = (size_t)~x; x = tok[start]; }
                int32_t new_rank = rank_with_left(r, x, z, limit);
                if (new_rank >= 0) replay_record(w, new_rank, start);
            }
            int32_t y = tok[end];
            if (y >= 0) {
                int32_t new_rank = rank_with_right(r, z, y, limit);
                if (new_rank >= 0) replay_record(w, new_rank, i);
            }
        }
        replay_lists(w);
    }
    for (; s < n_snapshots; s++)
        memcpy(counts + (size_t)s * stride, tokens, (size_t)n_texts * sizeof(uint32_t));
}

/* Whether the tokens of the batch's text at `start` spell its bytes again. */
static int spells(const Replayer *r, const Work *w, const uint8_t *bytes, size_t start) {
    size_t position = start;
    while (w->tok[position] >= 0) {
        int32_t id = w->tok[position];
        if (memcmp(r->piece[id], bytes + position, (size_t)r->length[id])) return 0;
        position += (size_t)r->length[id];
    }
    return bytes[position] == SEPARATOR;
}

static int work_init(const Replayer *r, Work *w) {
    memset(w, 0, sizeof(*w));
    size_t n = (size_t)r->n_merges + 1;
    w->list_start = malloc(n * sizeof(uint32_t));
    w->list_n = calloc(n, sizeof(uint32_t));
    w->touched = malloc(n * sizeof(int32_t));
    w->tokens = malloc(BATCH_TEXTS * sizeof(uint32_t));
    w->n_words = n / 64 + 1;
    w->waiting = calloc(w->n_words, sizeof(uint64_t));
    return w->list_start && w->list_n && w->touched && w->tokens && w->waiting ? 0 : -1;
}

static void work_free(Work *w) {
    free(w->tok);
    free(w->text_of);
    free(w->tokens);
    free(w->list_start);
    free(w->list_n);
    free(w->touched);
    free(w->records);
    free(w->arena);
    free(w->waiting);
}

static void Replayer_dealloc(Replayer *self) {
    free(self->lefts);
    free(self->rights);
    free(self->length);
    free(self->piece);
    free(self->pieces);
    free(self->byte_rank);
    free(self->as_left);
    free(self->as_right);
    free(self->partners);
    free(self->hash_at);
    free(self->hashed);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* Replayer(lefts, rights): the merge list as two int32 arrays, merge r making id 256 + r. */
static int Replayer_init(Replayer *self, PyObject *args, PyObject *kwargs) {
    static char *keywords[] = {"lefts", "rights", NULL};
    Py_buffer lefts, rights;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "y*y*", keywords, &lefts, &rights)) return -1;
    int status = -1;
    if (lefts.len != rights.len || lefts.len % 4) {
        PyErr_SetString(PyExc_ValueError, "lefts and rights must be int32 arrays of one length");
        goto done;
    }
    Py_ssize_t n = lefts.len / 4;
    if (n + FIRST_NEW_ID > MAX_IDS) {
        PyErr_SetString(PyExc_ValueError, "too many merges");
        goto done;
    }
    self->n_merges = n;
    self->lefts = malloc((size_t)(n + 1) * sizeof(int32_t));
    self->rights = malloc((size_t)(n + 1) * sizeof(int32_t));
    self->length = malloc((size_t)(n + FIRST_NEW_ID) * sizeof(int32_t));
    self->piece = malloc((size_t)(n + FIRST_NEW_ID) * sizeof(uint8_t *));
    if (!self->lefts || !self->rights || !self->length || !self->piece) { PyErr_NoMemory(); goto done; }
    memcpy(self->lefts, lefts.buf, (size_t)lefts.len);
    memcpy(self->rights, rights.buf, (size_t)rights.len);
    size_t total = FIRST_NEW_ID;
    for (int b = 0; b < FIRST_NEW_ID; b++) self->length[b] = 1;
    for (Py_ssize_t k = 0; k < n; k++) {
        int32_t a = self->lefts[k], b = self->rights[k];
        if (a < 0 || b < 0 || a >= FIRST_NEW_ID + k || b >= FIRST_NEW_ID + k) {
            PyErr_Format(PyExc_ValueError, "merge %zd uses an id that does not exist before it", k);
            goto done;
        }
        int64_t length = (int64_t)self->length[a] + self->length[b];
        if (length > INT32_MAX / 2) {
            PyErr_Format(PyExc_ValueError, "merge %zd makes a token too long", k);
            goto done;
        }
        self->length[FIRST_NEW_ID + k] = (int32_t)length;
        total += (size_t)length;
    }
    self->pieces = malloc(total);
    if (!self->pieces) { PyErr_NoMemory(); goto done; }
    uint8_t *cursor = self->pieces;
    for (int b = 0; b < FIRST_NEW_ID; b++) { self->piece[b] = cursor; *cursor++ = (uint8_t)b; }
    for (Py_ssize_t k = 0; k < n; k++) {
        int32_t a = self->lefts[k], b = self->rights[k];
        self->piece[FIRST_NEW_ID + k] = cursor;
        memcpy(cursor, self->piece[a], (size_t)self->length[a]);
        memcpy(cursor + self->length[a], self->piece[b], (size_t)self->length[b]);
        cursor += self->length[FIRST_NEW_ID + k];
    }
    self->byte_rank = malloc((1 << 16) * sizeof(int32_t));
    if (!self->byte_rank) { PyErr_NoMemory(); goto done; }
    memset(self->byte_rank, 0xFF, (1 << 16) * sizeof(int32_t));
    for (Py_ssize_t k = 0; k < n; k++) {
        /* a pair listed twice acts at its first rank: later, none of it is left to merge */
        int32_t left = self->lefts[k], right = self->rights[k];
        if (left < FIRST_NEW_ID && right < FIRST_NEW_ID && self->byte_rank[left << 8 | right] < 0)
            self->byte_rank[left << 8 | right] = (int32_t)k;
    }
    /* The separator (0xFF, never in UTF-8) pairs with nothing, whatever the merge list says:
       the replay finds byte pairs in the packed bytes, separators included. */
    for (int b = 0; b < FIRST_NEW_ID; b++)
        self->byte_rank[SEPARATOR << 8 | b] = self->byte_rank[b << 8 | SEPARATOR] = -1;
    /* Partner lists, by counting sort: each merge (x, y) is in x's list as the left id and in
       y's as the right id; lists sorted by partner, a repeated pair keeping its first rank. */
    size_t n_ids = (size_t)(n + FIRST_NEW_ID);
    self->as_left = calloc(n_ids + 1, sizeof(uint32_t));
    self->as_right = calloc(n_ids + 1, sizeof(uint32_t));
    self->partners = malloc((2 * (size_t)n + 1) * sizeof(Partner));
    if (!self->as_left || !self->as_right || !self->partners) { PyErr_NoMemory(); goto done; }
    for (Py_ssize_t k = 0; k < n; k++) {
        self->as_left[self->lefts[k] + 1]++;
        self->as_right[self->rights[k] + 1]++;
    }
    for (size_t i = 0; i < n_ids; i++) self->as_left[i + 1] += self->as_left[i];
    self->as_right[0] = self->as_left[n_ids];
    for (size_t i = 0; i < n_ids; i++) self->as_right[i + 1] += self->as_right[i];
    uint32_t *fill = malloc(2 * n_ids * sizeof(uint32_t));
    if (!fill) { PyErr_NoMemory(); goto done; }
    memcpy(fill, self->as_left, n_ids * sizeof(uint32_t));
    memcpy(fill + n_ids, self->as_right, n_ids * sizeof(uint32_t));
    for (Py_ssize_t k = 0; k < n; k++) { /* ranks ascending: a list is filled in rank order */
        self->partners[fill[self->lefts[k]]++] = (Partner){self->rights[k], (int32_t)k};
        self->partners[fill[n_ids + self->rights[k]]++] = (Partner){self->lefts[k], (int32_t)k};
    }
    free(fill);
    for (size_t i = 0; i < 2 * n_ids; i++) {
        uint32_t from = i < n_ids ? self->as_left[i] : self->as_right[i - n_ids];
        uint32_t to = i < n_ids ? self->as_left[i + 1] : self->as_right[i - n_ids + 1];
        if (to - from > 1) qsort(self->partners + from, to - from, sizeof(Partner), partner_order);
    }
    /* Hash tables for the long lists: a partner's first rank (the sorted list has it first). */
    self->hash_at = malloc((2 * n_ids + 1) * sizeof(uint32_t));
    if (!self->hash_at) { PyErr_NoMemory(); goto done; }
    size_t hashed = 0;
    for (size_t i = 0; i < 2 * n_ids; i++) {
        uint32_t from = i < n_ids ? self->as_left[i] : self->as_right[i - n_ids];
        uint32_t to = i < n_ids ? self->as_left[i + 1] : self->as_right[i - n_ids + 1];
        self->hash_at[i] = (uint32_t)hashed;
        if (to - from > SHORT_LIST) {
            size_t slots = 16;
            while (slots < 2 * (size_t)(to - from)) slots *= 2;
            hashed += slots;
        }
    }
    self->hash_at[2 * n_ids] = (uint32_t)hashed;
    self->hashed = malloc((hashed + 1) * sizeof(Partner));
    if (!self->hashed) { PyErr_NoMemory(); goto done; }
    for (size_t k = 0; k < hashed; k++) self->hashed[k] = (Partner){-1, -1};
    for (size_t i = 0; i < 2 * n_ids; i++) {
        uint32_t from = i < n_ids ? self->as_left[i] : self->as_right[i - n_ids];
        uint32_t to = i < n_ids ? self->as_left[i + 1] : self->as_right[i - n_ids + 1];
        if (to - from <= SHORT_LIST) continue;
        Partner *table = self->hashed + self->hash_at[i];
        size_t mask = (size_t)(self->hash_at[i + 1] - self->hash_at[i]) - 1;
        for (uint32_t k = from; k < to; k++) {
            Partner entry = self->partners[k];
            size_t slot = partner_slot(entry.partner, mask);
            while (table[slot].partner >= 0 && table[slot].partner != entry.partner) slot = (slot + 1) & mask;
            if (table[slot].partner < 0) table[slot] = entry; /* else a later rank of the same pair */
        }
    }
    status = 0;
done:
    PyBuffer_Release(&lefts);
    PyBuffer_Release(&rights);
    return status;
}

/* The UTF-8 bytes of texts[index], appended to `batch` (a growing buffer); -1 with an exception
   (TypeError for a non-str, ValueError naming the text and character for a lone surrogate). */
static int append_text(PyObject *texts, Py_ssize_t index, uint8_t **batch, size_t *used, size_t *capacity,
                       Status *status) {
    PyObject *text = PyList_GET_ITEM(texts, index);
    if (!PyUnicode_Check(text)) {
        PyErr_Format(PyExc_TypeError, "text %zd is %s, not str", index, Py_TYPE(text)->tp_name);
        return -1;
    }
    const char *data;
    Py_ssize_t size;
    PyObject *encoded = NULL;
    if (PyUnicode_IS_COMPACT_ASCII(text)) { /* ASCII is its own UTF-8: no copy, no cache */
        data = (const char *)PyUnicode_DATA(text);
        size = PyUnicode_GET_LENGTH(text);
    } else {
        encoded = PyUnicode_AsUTF8String(text); /* a temporary, not cached in the str */
        if (!encoded) {
            if (PyErr_ExceptionMatches(PyExc_UnicodeEncodeError)) {
                PyObject *type, *value, *traceback;
                PyErr_Fetch(&type, &value, &traceback);
                Py_ssize_t at = 0;
                PyUnicodeEncodeError_GetStart(value, &at);
                Py_XDECREF(type);
                Py_XDECREF(value);
                Py_XDECREF(traceback);
                PyErr_Format(PyExc_ValueError, "text %zd, character %zd: '\\u%04x' is not valid Unicode "
                             "(a lone surrogate) and has no UTF-8 encoding", index, at,
                             (unsigned)PyUnicode_ReadChar(text, at));
            }
            return -1;
        }
        data = PyBytes_AS_STRING(encoded);
        size = PyBytes_GET_SIZE(encoded);
    }
    *batch = grow(status, *batch, capacity, *used + (size_t)size + 1, 1);
    if (status->failed) { Py_XDECREF(encoded); PyErr_NoMemory(); return -1; }
    memcpy(*batch + *used, data, (size_t)size);
    *used += (size_t)size;
    (*batch)[(*used)++] = SEPARATOR;
    Py_XDECREF(encoded);
    return 0;
}

/* The counts of whole texts from those of their chunks: out[s][k] = sum of counts[s][c] for
   the chunks c of text k (chunk_ids[offsets[k]..offsets[k + 1])). */
static PyObject *sum_by_text(PyObject *self, PyObject *args) {
    Py_buffer counts_view, ids_view, offsets_view;
    if (!PyArg_ParseTuple(args, "y*y*y*", &counts_view, &ids_view, &offsets_view)) return NULL;
    PyObject *result = NULL;
    const uint32_t *counts = counts_view.buf, *ids = ids_view.buf;
    const int64_t *offsets = offsets_view.buf;
    size_t n_chunks = (size_t)counts_view.len / 4, n_ids = (size_t)ids_view.len / 4;
    Py_ssize_t n_texts = offsets_view.len / 8 - 1;
    int valid = offsets_view.len >= 8 && offsets[0] == 0 && (size_t)offsets[n_texts] == n_ids;
    for (Py_ssize_t k = 0; valid && k < n_texts; k++) valid = offsets[k] <= offsets[k + 1];
    for (size_t i = 0; valid && i < n_ids; i++) valid = ids[i] < n_chunks;
    if (!valid) {
        PyErr_SetString(PyExc_ValueError, "sum_by_text: offsets or chunk ids out of range");
        goto done;
    }
    result = PyBytes_FromStringAndSize(NULL, n_texts * 4);
    if (result) {
        uint32_t *out = (uint32_t *)PyBytes_AS_STRING(result);
        for (Py_ssize_t k = 0; k < n_texts; k++) {
            uint32_t total = 0;
            for (int64_t i = offsets[k]; i < offsets[k + 1]; i++) total += counts[ids[i]];
            out[k] = total;
        }
    }
done:
    PyBuffer_Release(&counts_view);
    PyBuffer_Release(&ids_view);
    PyBuffer_Release(&offsets_view);
    return result;
}

/* count_texts(texts, snapshots, group_starts=None, roundtrip=False) -> (list of bytes, one per
   snapshot rank, each a uint32 per text: its tokens just before that merge; bytes of int64,
   merge x group: each merge's replacements in each group of texts, or None; with roundtrip,
   whether every text's final tokens spell it, else None). `texts` is a list of str, encoded a
   batch at a time (the whole corpus is never copied); group g is the texts from
   group_starts[g] (a text index) on. */
static PyObject *Replayer_count_texts(Replayer *self, PyObject *args, PyObject *kwargs) {
    static char *keywords[] = {"texts", "snapshots", "group_starts", "roundtrip", "histograms", NULL};
    Py_buffer snapshots_view, groups_view = {0};
    PyObject *texts, *snapshots_object, *groups_object = Py_None;
    int roundtrip = 0, want_histograms = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O!O|Opp", keywords, &PyList_Type, &texts,
                                     &snapshots_object, &groups_object, &roundtrip, &want_histograms))
        return NULL;
    PyObject *result = NULL;
    int have_snapshots = 0, have_groups = 0;
    uint32_t *counts = NULL;
    int64_t *replaced = NULL, *local_starts = NULL, *histograms = NULL;
    int32_t *group_of = NULL;
    uint8_t *batch = NULL;
    size_t batch_capacity = 0;
    Work w = {0};
    int work_ready = 0;
    Py_INCREF(texts); /* the list is read batch by batch, with the GIL given up between */
    if (read_int64s(snapshots_object, &snapshots_view, "snapshots") < 0) goto done;
    have_snapshots = 1;
    Py_ssize_t n_groups = 0;
    if (groups_object != Py_None) {
        if (read_int64s(groups_object, &groups_view, "group_starts") < 0) goto done;
        have_groups = 1;
        n_groups = groups_view.len / 8;
    }
    Py_ssize_t n_texts = PyList_GET_SIZE(texts), n_snapshots = snapshots_view.len / 8;
    const int64_t *snapshots = snapshots_view.buf;
    const int64_t *group_starts = have_groups ? groups_view.buf : NULL;
    Py_ssize_t limit = n_snapshots ? snapshots[n_snapshots - 1] : self->n_merges;
    for (Py_ssize_t s = 0; s < n_snapshots; s++) {
        if (snapshots[s] < 0 || snapshots[s] > self->n_merges || (s && snapshots[s] < snapshots[s - 1])) {
            PyErr_SetString(PyExc_ValueError, "snapshots must be ascending ranks within the merge list");
            goto done;
        }
    }
    counts = malloc(((size_t)n_snapshots * (size_t)n_texts + 1) * sizeof(uint32_t));
    if (!counts) { PyErr_NoMemory(); goto done; }
    size_t n_ids = FIRST_NEW_ID + (size_t)limit; /* the ids the replay can make */
    if (want_histograms) {
        /* Each group's token histogram after the replay: how often each id occurs. */
        histograms = calloc((size_t)(n_groups ? n_groups : 1) * n_ids, sizeof(int64_t));
        if (!histograms) { PyErr_NoMemory(); goto done; }
    }
    if (n_groups) {
        replaced = calloc((size_t)limit * (size_t)n_groups + 1, sizeof(int64_t));
        group_of = malloc(((size_t)n_texts + 1) * sizeof(int32_t));
        if (!replaced || !group_of) { PyErr_NoMemory(); goto done; }
        Py_ssize_t group = 0;
        for (Py_ssize_t k = 0; k < n_texts; k++) {
            while (group + 1 < n_groups && group_starts[group + 1] <= k) group++;
            group_of[k] = (int32_t)group;
        }
    }
    local_starts = malloc((BATCH_TEXTS + 1) * sizeof(int64_t));
    if (!local_starts || work_init(self, &w) < 0) { work_ready = 1; PyErr_NoMemory(); goto done; }
    work_ready = 1;
    int roundtrip_ok = 1;
    /* Batches of whole texts: about REPLAY_BATCH bytes, or one text that is larger. */
    for (Py_ssize_t first = 0; first < n_texts;) {
        size_t used = 0;
        batch = grow(&w.status, batch, &batch_capacity, 1, 1);
        if (w.status.failed) { PyErr_NoMemory(); goto done; }
        batch[used++] = SEPARATOR;
        Py_ssize_t last = first;
        while (last < n_texts && last - first < BATCH_TEXTS && (last == first || used <= REPLAY_BATCH)) {
            local_starts[last - first] = (int64_t)used;
            if (append_text(texts, last, &batch, &used, &batch_capacity, &w.status) < 0) goto done;
            last++;
        }
        if (used >= (size_t)INT32_MAX) {
            PyErr_SetString(PyExc_ValueError, "the compiled engine counts texts of less than 2 GiB");
            goto done;
        }
        Py_BEGIN_ALLOW_THREADS
        replay_batch(self, &w, batch, used, limit, local_starts, last - first, snapshots, n_snapshots,
                     counts + first, (size_t)n_texts, replaced, (size_t)n_groups,
                     group_of ? group_of + first : NULL);
        for (Py_ssize_t k = first; roundtrip && k < last && roundtrip_ok && !w.status.failed; k++)
            roundtrip_ok = spells(self, &w, batch, (size_t)local_starts[k - first]);
        if (histograms && !w.status.failed) {
            /* A token is stored at its first byte; every other slot is negative. */
            for (size_t p = 0; p < used; p++) {
                int32_t id = w.tok[p];
                if (id < 0) continue;
                size_t group = group_of ? (size_t)group_of[first + w.text_of[p]] : 0;
                histograms[group * n_ids + (size_t)id]++;
            }
        }
        Py_END_ALLOW_THREADS
        if (w.status.failed) { PyErr_NoMemory(); goto done; }
        first = last;
    }
    PyObject *snapshots_out = PyList_New(n_snapshots);
    if (!snapshots_out) goto done;
    for (Py_ssize_t s = 0; s < n_snapshots; s++) {
        PyObject *per_text = PyBytes_FromStringAndSize((char *)(counts + (size_t)s * (size_t)n_texts),
                                                       n_texts * 4);
        if (!per_text) { Py_DECREF(snapshots_out); goto done; }
        PyList_SET_ITEM(snapshots_out, s, per_text);
    }
    PyObject *replaced_out = Py_None;
    if (replaced) {
        replaced_out = PyBytes_FromStringAndSize((char *)replaced, (Py_ssize_t)(limit * n_groups * 8));
        if (!replaced_out) { Py_DECREF(snapshots_out); goto done; }
    } else {
        Py_INCREF(Py_None);
    }
    if (histograms) {
        PyObject *histograms_out = PyBytes_FromStringAndSize(
            (char *)histograms, (Py_ssize_t)((size_t)(n_groups ? n_groups : 1) * n_ids * 8));
        if (!histograms_out) { Py_DECREF(snapshots_out); Py_DECREF(replaced_out); goto done; }
        result = Py_BuildValue("(NNON)", snapshots_out, replaced_out,
                               !roundtrip ? Py_None : roundtrip_ok ? Py_True : Py_False, histograms_out);
    } else {
        result = Py_BuildValue("(NNO)", snapshots_out, replaced_out,
                               !roundtrip ? Py_None : roundtrip_ok ? Py_True : Py_False);
    }
done:
    if (work_ready) work_free(&w);
    free(batch);
    free(counts);
    free(replaced);
    free(histograms);
    free(local_starts);
    free(group_of);
    if (have_groups) PyBuffer_Release(&groups_view);
    if (have_snapshots) PyBuffer_Release(&snapshots_view);
    Py_DECREF(texts);
    return result;
}

/* encode(buffer) -> bytes (int32 ids): the ids of one packed text (0xFF, its bytes, 0xFF). */
static PyObject *Replayer_encode(Replayer *self, PyObject *args) {
    Py_buffer buffer;
    if (!PyArg_ParseTuple(args, "y*", &buffer)) return NULL;
    PyObject *result = NULL;
    Work w;
    int32_t *ids = NULL;
    size_t n_ids = 0, size = (size_t)buffer.len;
    const uint8_t *bytes = buffer.buf;
    if (size < 2 || bytes[0] != SEPARATOR || bytes[size - 1] != SEPARATOR || size >= (size_t)INT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "encode takes one packed text of less than 2 GiB");
        PyBuffer_Release(&buffer);
        return NULL;
    }
    if (work_init(self, &w) < 0) { PyErr_NoMemory(); goto done; }
    int64_t start = 1;
    Py_BEGIN_ALLOW_THREADS
    replay_batch(self, &w, bytes, size, self->n_merges, &start, 1, NULL, 0, NULL, 0, NULL, 0, NULL);
    ids = malloc(size * sizeof(int32_t));
    if (ids && !w.status.failed) {
        for (size_t i = 1; w.tok[i] >= 0; i += (size_t)self->length[w.tok[i]]) ids[n_ids++] = w.tok[i];
    }
    Py_END_ALLOW_THREADS
    if (w.status.failed || !ids) PyErr_NoMemory();
    else result = PyBytes_FromStringAndSize((char *)ids, (Py_ssize_t)(n_ids * 4));
done:
    work_free(&w);
    free(ids);
    PyBuffer_Release(&buffer);
    return result;
}

/* decode_bytes(ids) -> bytes: the bytes the ids stand for (ValueError for an unknown id). */
static PyObject *Replayer_decode_bytes(Replayer *self, PyObject *ids_object) {
    PyObject *sequence = PySequence_Fast(ids_object, "ids must be a sequence of ints");
    if (!sequence) return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(sequence);
    PyObject **items = PySequence_Fast_ITEMS(sequence);
    size_t total = 0;
    Py_ssize_t size = FIRST_NEW_ID + self->n_merges;
    for (Py_ssize_t k = 0; k < n; k++) {
        long long id = PyLong_Check(items[k]) ? PyLong_AsLongLong(items[k]) : -2;
        if (id == -1 && PyErr_Occurred()) PyErr_Clear(), id = -2;
        if (id < 0 || id >= size) {
            PyObject *shown = PyObject_Repr(items[k]);
            if (shown) {
                PyErr_Format(PyExc_ValueError, "unknown token id %U: neither a byte nor a learned id", shown);
                Py_DECREF(shown);
            }
            Py_DECREF(sequence);
            return NULL;
        }
        total += (size_t)self->length[id];
    }
    PyObject *result = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)total);
    if (result) {
        char *cursor = PyBytes_AS_STRING(result);
        for (Py_ssize_t k = 0; k < n; k++) {
            long long id = PyLong_AsLongLong(items[k]);
            memcpy(cursor, self->piece[id], (size_t)self->length[id]);
            cursor += self->length[id];
        }
    }
    Py_DECREF(sequence);
    return result;
}

/* piece(id) -> bytes */
static PyObject *Replayer_piece(Replayer *self, PyObject *id_object) {
    long long id = PyLong_AsLongLong(id_object);
    if (id == -1 && PyErr_Occurred()) return NULL;
    if (id < 0 || id >= FIRST_NEW_ID + self->n_merges) {
        PyErr_Format(PyExc_ValueError, "unknown token id %lld: neither a byte nor a learned id", id);
        return NULL;
    }
    return PyBytes_FromStringAndSize((char *)self->piece[id], self->length[id]);
}

static PyMethodDef Replayer_methods[] = {
    {"count_texts", (PyCFunction)(void (*)(void))Replayer_count_texts, METH_VARARGS | METH_KEYWORDS,
     "count_texts(texts, snapshots, group_starts=None, roundtrip=False): token counts per text at "
     "each snapshot rank, replacements per merge and group, and whether every text round-trips."},
    {"encode", (PyCFunction)Replayer_encode, METH_VARARGS, "encode(buffer): ids of one packed text"},
    {"decode_bytes", (PyCFunction)Replayer_decode_bytes, METH_O, "decode_bytes(ids): their bytes"},
    {"piece", (PyCFunction)Replayer_piece, METH_O, "piece(id): the bytes of one id"},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject ReplayerType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "analyzer.bpe._engine.Replayer",
    .tp_basicsize = sizeof(Replayer),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A merge list prepared for replay: encode, decode and count.",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Replayer_init,
    .tp_dealloc = (destructor)Replayer_dealloc,
    .tp_methods = Replayer_methods,
};

static PyMethodDef engine_methods[] = {
    {"train", (PyCFunction)(void (*)(void))engine_train, METH_VARARGS | METH_KEYWORDS,
     "train(buffer, starts, weights, vocab_size, min_pair_count, first, progress, progress_every)"},
    {"sum_by_text", sum_by_text, METH_VARARGS,
     "sum_by_text(counts, chunk_ids, offsets): each text's total from its chunks' counts"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef engine_module = {
    PyModuleDef_HEAD_INIT, "_engine", "The compiled BPE engine (see analyzer/bpe/_engine.c).", -1,
    engine_methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__engine(void) {
    if (PyType_Ready(&ReplayerType) < 0) return NULL;
    PyObject *module = PyModule_Create(&engine_module);
    if (!module) return NULL;
    Py_INCREF(&ReplayerType);
    if (PyModule_AddObject(module, "Replayer", (PyObject *)&ReplayerType) < 0) {
        Py_DECREF(&ReplayerType);
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
