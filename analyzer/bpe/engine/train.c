/*
 * Training: the merges of analyzer.bpe.reference.train_many, exactly (both tie-breaks, any
 * min_pair_count, texts weighted as w copies of themselves), with flat arrays instead of
 * Python objects. The algorithm is the pure engine's (analyzer/bpe/trainer.py), which the
 * comments there explain at more length:
 *
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
 *    a block that lives on are handed back to the OS page by page. A list holds its positions
 *    as LEB128 deltas (engine.h): one or two bytes each for a frequent pair, not four.
 *  - A weight per text, not per position: a position's text is found through a window index
 *    (text_at), so weighted texts (a source's distinct chunks) cost 4 bytes each, not 4 per
 *    byte. Issue 54 measured the whole: benchmarks/bench_sources.py, analyzer/runs/memory.py.
 *
 * Nothing here touches Python: module.c runs it without the GIL, a block of merges at a time.
 * Texts in groups (languages, parity-aware training) are groups.c's.
 */

#include "engine.h"

#include <stdlib.h>
#include <string.h>
#if defined(__GLIBC__)
#include <malloc.h> /* malloc_trim */
#endif

/* ---------------------------------------------------------------------------------------- */
/* Candidates                                                                                */

/* The first current occurrence of a pair ("first" mode rank); positions only move right. */
static uint32_t first_occurrence(Trainer *t, Pair *pair) {
    int32_t left = key_left(pair->key), right = key_right(pair->key);
    Positions p = pair_positions(t, pair);
    const uint8_t *list = p.at;
    p.at += pair->head;
    p.position = pair->head_at;
    for (;;) {
        const uint8_t *here = p.at;
        uint32_t before = p.position;
        if (!next_position(&p)) break;
        uint32_t i = p.position;
        if (t->tok[i] == left && t->tok[i + t->length[left]] == right && weight_at(t, i)) {
            pair->head = (uint32_t)(here - list);
            pair->head_at = before;
            return i;
        }
    }
    pair->head = pair->bytes;
    pair->head_at = p.position;
    return UINT32_MAX; /* none left: its count is 0 */
}

void push_pair(Trainer *t, int32_t index) {
    Pair *pair = &t->table.pairs[index];
    Candidate candidate = {pair->count, pair->key, 0, index};
    if (t->first_mode) candidate.first = first_occurrence(t, pair);
    heap_push(&t->status, &t->heap, candidate);
}

/* A pair that will never be merged (merged already, or forgotten): its positions go. */
void retire(Trainer *t, Pair *pair) {
    if (pair->block != NO_LIST) blocks_release(&t->blocks, pair->block, pair->offset, pair->bytes);
    pair->block = NO_LIST;
    pair->count = -1;
}

/* ---------------------------------------------------------------------------------------- */
/* Counting every pair: at the start, and whenever the floor is lowered                      */

/* A pair as counted (at the start, and by each rescan): its weighted count, the bytes its
   list would take, and the last position seen (then, once stored, its entry). 24 bytes: a
   rescan late in a training counts millions of distinct pairs, most of them rare, and this
   table was its peak. */
typedef struct {
    Key key;
    int64_t count;
    uint32_t bytes;
    uint32_t last; /* while counting: its last position; then its entry (UINT32_MAX: none) */
} Counted;

static inline void count_one(Counted *counted, uint32_t position, uint32_t weight) {
    counted->count += weight;
    counted->bytes += delta_size(position - counted->last);
    counted->last = position;
}

/* Store the pairs of `counted[0..n)` whose count reaches the floor: an entry each, room for
   their lists (offsets set, lists still empty); each one's `last` becomes its entry
   (UINT32_MAX: not stored). */
static void store_counted(Trainer *t, size_t n, Counted *counted) {
    Status *status = &t->status;
    for (size_t i = 0; i < n; i++) {
        Counted *c = &counted[i];
        c->last = UINT32_MAX;
        if (c->count < t->floor || !c->bytes || status->failed) continue;
        size_t offset = 0;
        uint32_t block = blocks_reserve(status, &t->blocks, c->bytes, &offset);
        int32_t index = status->failed ? -1 : table_add(status, &t->table, c->key, c->count);
        if (index < 0) return;
        Pair *pair = &t->table.pairs[index];
        pair->block = block;
        pair->offset = (uint32_t)offset;
        pair->bytes = c->bytes;
        t->blocks.blocks[block].live++;
        c->last = (uint32_t)index;
    }
}

/* The next position of a stored pair's list, while it is written (`head` and `head_at` hold
   where the writing is; finish_lists resets them). */
static inline void add_position(Trainer *t, uint32_t index, size_t position) {
    Pair *pair = &t->table.pairs[index];
    put_position(t->blocks.blocks[pair->block].data + pair->offset, &pair->head, &pair->head_at,
                 (uint32_t)position);
}

static void finish_lists(Trainer *t) {
    for (size_t i = 0; i < t->table.n; i++) t->table.pairs[i].head = t->table.pairs[i].head_at = 0;
}

/* The start: every pair is a byte pair, counted in a direct array (no hashing). */
static void count_byte_pairs(Trainer *t) {
    Status *status = &t->status;
    const size_t n = 1 << 16;
    Counted *counted = calloc(n, sizeof(Counted));
    if (!counted) {
        status->failed = 1;
        return;
    }
    for (size_t pair = 0; pair < n; pair++)
        counted[pair].key = pair_key((int32_t)(pair >> 8), (int32_t)(pair & 0xFF));
    for (size_t i = 0; i + 1 < t->size; i++) {
        if (t->tok[i] < 0 || t->tok[i + 1] < 0) continue;
        count_one(&counted[(size_t)t->tok[i] << 8 | (size_t)t->tok[i + 1]], (uint32_t)i, weight_at(t, i));
    }
    store_counted(t, n, counted);
    for (size_t i = 0; i + 1 < t->size && !status->failed; i++) {
        if (t->tok[i] < 0 || t->tok[i + 1] < 0) continue;
        uint32_t index = counted[(size_t)t->tok[i] << 8 | (size_t)t->tok[i + 1]].last;
        if (index != UINT32_MAX) add_position(t, index, i);
    }
    finish_lists(t);
    free(counted);
}

/* Later: the pairs of the current tokens, counted in a temporary table (Counted entries, and
   slots of 4 bytes) in one hashing pass that also notes each occurrence's pair; the slots go
   before the stored pairs are made, and the second pass (positions) needs no lookups. */
static void count_pairs(Trainer *t) {
    Status *status = &t->status;
    Counted *counted = NULL;
    size_t n = 0, counted_capacity = 0, n_pairs = 0, capacity = 0;
    size_t n_slots = 1 << 16;
    uint32_t *slots = calloc(n_slots, sizeof(uint32_t)); /* an entry's index + 1; 0: empty */
    uint32_t *pair_of = NULL; /* the pair of each adjacent pair occurrence, in walk order */
    if (!slots) status->failed = 1;
    PairWalk walk = pair_walk(t);
    while (!status->failed && next_pair(&walk)) {
        Key key = pair_key(walk.left, walk.right);
        size_t mask = n_slots - 1, slot = hash_key(key) & mask;
        while (slots[slot] && counted[slots[slot] - 1].key != key) slot = (slot + 1) & mask;
        if (!slots[slot]) {
            if (2 * (n + 1) > n_slots) { /* grow: the entries rehashed into twice the slots */
                uint32_t *wider = calloc(2 * n_slots, sizeof(uint32_t));
                if (!wider) { status->failed = 1; break; }
                free(slots);
                slots = wider;
                n_slots *= 2;
                mask = n_slots - 1;
                for (size_t e = 0; e < n; e++) {
                    size_t at = hash_key(counted[e].key) & mask;
                    while (slots[at]) at = (at + 1) & mask;
                    slots[at] = (uint32_t)(e + 1);
                }
                slot = hash_key(key) & mask;
                while (slots[slot]) slot = (slot + 1) & mask;
            }
            counted = grow(status, counted, &counted_capacity, n + 1, sizeof(Counted));
            if (status->failed) break;
            counted[n] = (Counted){key, 0, 0, 0};
            slots[slot] = (uint32_t)++n;
        }
        uint32_t index = slots[slot] - 1;
        pair_of = grow(status, pair_of, &capacity, n_pairs + 1, sizeof(uint32_t));
        if (status->failed) break;
        count_one(&counted[index], (uint32_t)walk.left_start, weight_at(t, walk.left_start));
        pair_of[n_pairs++] = index;
    }
    free(slots); /* its memory goes before the stored pairs' is taken */
    if (!status->failed) {
        store_counted(t, n, counted);
        size_t k = 0;
        walk = pair_walk(t);
        while (!status->failed && next_pair(&walk)) {
            uint32_t index = counted[pair_of[k++]].last;
            if (index != UINT32_MAX) add_position(t, index, walk.left_start);
        }
        finish_lists(t);
    }
    free(pair_of);
    free(counted);
}

/* Count every adjacent pair of the current tokens and store those at or above the floor:
   entries, positions (ascending: the walks go left to right) and the heap, all built afresh.
   Exact by construction, so it serves for the start and whenever the floor is lowered. */
void rescan(Trainer *t, int start) {
    for (size_t i = 0; i < t->table.n; i++) retire(t, &t->table.pairs[i]);
    table_free(&t->table);
    blocks_free(&t->blocks);
    t->heap.n = 0;
#if defined(__GLIBC__)
    /* What was freed goes back to the OS before the recount takes its own: glibc keeps freed
       blocks below its (rising) mmap threshold in the heap, and the recount's peak would come
       on top of them. */
    malloc_trim(0);
#endif
    table_rehash(&t->status, &t->table, 1024);
    if (start) count_byte_pairs(t);
    else count_pairs(t);
    if (t->blocks.n) t->blocks.blocks[t->blocks.n - 1].closed = 1;
    /* Parity-aware training past its global merges chooses from the groups' heaps only: the
       global heap would never be read. */
    int global_heap = !t->groups || !t->groups->parity || t->groups->global_phase;
    for (size_t i = 0; i < t->table.n && !t->status.failed && global_heap; i++) push_pair(t, (int32_t)i);
    if (t->groups && t->groups->parity) group_recount(t, start);
}

/* The first floor: pairs rarer than about one per 64 KiB of text are not stored at first. */
int64_t initial_floor(size_t size, int64_t min_count, const uint32_t *weight) {
    int64_t floor = (int64_t)(size >> 16);
    if (weight) floor = floor / 4; /* weighted texts are unique chunks: counts are larger */
    return floor > min_count ? floor : min_count;
}

/* The start of a training: `tok` from the buffer (or the ids), the first floor, every pair
   counted. The caller has set the buffer or the ids, weights, lengths of the first ids,
   min_count, the mode and the groups. `forced_floor` (tests): a higher floor, so that small
   texts exercise rescans. */
void trainer_start(Trainer *t, int64_t forced_floor) {
    if (t->ids) {
        memcpy(t->tok, t->ids, t->size * sizeof(int32_t));
    } else {
        const uint8_t *bytes = t->buffer;
        for (size_t p = 0; p < t->size; p++) t->tok[p] = bytes[p] == SEPARATOR ? GAP : bytes[p];
    }
    t->floor = initial_floor(t->size, t->min_count, t->text_weight);
    if (t->groups && t->groups->parity) {
        /* A group's counts are a share of the whole: a floor from the whole text would be
           above most of them, and each group's heap would soon run dry and ask for a rescan.
           So the floor follows the smallest group's share. */
        size_t smallest = t->size;
        for (int32_t g = 0; g < t->groups->n; g++) {
            size_t share = (size_t)t->groups->tokens[g];
            if (share && share < smallest) smallest = share;
        }
        t->floor = initial_floor(smallest, t->min_count, t->text_weight);
    }
    if (forced_floor > t->min_count) t->floor = forced_floor;
    rescan(t, t->ids == NULL); /* bytes: the direct-array count of byte pairs */
}

/* ---------------------------------------------------------------------------------------- */
/* The best pair                                                                             */

/* The best pair to merge now, or -1 when none reaches min_count. */
int32_t best_pair(Trainer *t) {
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

/* ---------------------------------------------------------------------------------------- */
/* A merge                                                                                   */

/* The entry of `key` among the pairs this merge made, added if new. */
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
    made->bytes = 0;
    made->last = made->filled = 0;
    made->pair = -1;
    made->group_sum = 0;
    made->last_group = -1;
    made->n_groups = 0;
    return made;
}

/* A pair this merge made, at `position`. */
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

/* The counts of the pairs a merge destroyed occurrences of, lowered in one pass (and, for
   parity, summed by group as they go: they come in position order). The table's slots and
   entries are fetched a few steps ahead: the lookups, which miss the cache when done one by
   one, overlap. */
static void apply_decrements(Trainer *t) {
    Scratch *s = &t->scratch;
    PairTable *table = &t->table;
    size_t mask = table->n_slots - 1, n = s->n_lost;
    const size_t ahead = 12;
    int parity = t->groups && t->groups->parity;
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
        if (parity) group_lost_record(t, index, s->lost_group[k], s->lost[k].weight);
    }
    if (parity && t->groups->summing >= 0) group_flush_lost(t);
    s->n_lost = 0;
}

/* Parity: the group of the records from `first_record` and the lost records from
   `first_lost` on, all made around one occurrence, so all in one text and one group (groups.c
   sums them by group). */
static void note_group(Trainer *t, size_t first_record, size_t first_lost, uint16_t group) {
    Scratch *s = &t->scratch;
    if (s->n > s->record_group_capacity)
        s->record_group = grow(&t->status, s->record_group, &s->record_group_capacity, s->n, sizeof(uint16_t));
    if (s->n_lost > s->lost_group_capacity)
        s->lost_group = grow(&t->status, s->lost_group, &s->lost_group_capacity, s->n_lost, sizeof(uint16_t));
    if (t->status.failed) return;
    for (size_t r = first_record; r < s->n; r++) s->record_group[r] = group;
    for (size_t r = first_lost; r < s->n_lost; r++) s->lost_group[r] = group;
}

/* Replace every current occurrence of the pair (a, b) by z, noting the pairs destroyed
   (decrement) and made (record) around each; the number of tokens replaced (weights
   applied). */
static int64_t replace_occurrences(Trainer *t, Pair *pair, int32_t z) {
    int32_t a = key_left(pair->key), b = key_right(pair->key);
    int32_t la = t->length[a], lb = t->length[b];
    int32_t *tok = t->tok;
    Scratch *s = &t->scratch;
    Groups *groups = t->groups;
    int parity = groups && groups->parity;
    int64_t replaced = 0;
    /* Fetch the tokens of later occurrences while this one is done, and their texts' weights
       (text_at's window, then the text's start and weight, in two steps): the list is read
       three times over, `ahead` and `ahead / 2` positions in front of the one replaced. */
    const uint32_t ahead = 16;
    Positions p = pair_positions(t, pair), fetch = p, soon = p;
    for (uint32_t k = 0; k < ahead && next_position(&fetch); k++) {
        __builtin_prefetch(&tok[fetch.position]);
        if (t->text_weight) __builtin_prefetch(&t->text_index[fetch.position >> TEXT_WINDOW_SHIFT]);
    }
    for (uint32_t k = 0; t->text_weight && k < ahead / 2; k++) next_position(&soon);
    while (next_position(&p)) {
        if (next_position(&fetch)) {
            __builtin_prefetch(&tok[fetch.position]);
            if (t->text_weight) __builtin_prefetch(&t->text_index[fetch.position >> TEXT_WINDOW_SHIFT]);
        }
        if (t->text_weight && next_position(&soon)) {
            uint32_t text = t->text_index[soon.position >> TEXT_WINDOW_SHIFT];
            __builtin_prefetch(&t->starts[text]);
            __builtin_prefetch(&t->text_weight[text]);
        }
        size_t i = p.position;
        size_t end = replace_at(tok, i, a, la, b, lb, z);
        if (!end) continue; /* stale */
        uint32_t w = weight_at(t, i);
        replaced += w;
        uint16_t group = 0;
        if (groups) {
            const Run *run = run_at(groups, i);
            group = run->group;
            groups->replaced[group] += w;
            groups->tokens[group] -= groups->multiplicity_is_weight ? w : run->multiplicity;
        }
        size_t first_record = s->n, first_lost = s->n_lost;
        int32_t x = tok[i - 1];
        if (x != GAP) {
            size_t start = i - 1;
            if (x < 0) { start = (size_t)~x; x = tok[start]; }
            if (x == z) {
                /* The replacement just before this one recorded (z, a) at its start; that a
                   is merged away now: the record is the last one made. */
                s->n--;
                first_record = s->n;
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
        if (parity) note_group(t, first_record, first_lost, group);
    }
    return replaced;
}

/* Room in the scratch's key slots for this merge's records (a power of two, empty). */
static int size_slots(Trainer *t) {
    Scratch *s = &t->scratch;
    size_t want = 2;
    while (want < 2 * s->n + 16) want *= 2;
    if (want > s->n_slots) {
        free(s->slots);
        s->slots = malloc(want * sizeof(int32_t));
        if (!s->slots) { t->status.failed = 1; s->n_slots = 0; return -1; }
        s->n_slots = want;
        memset(s->slots, 0xFF, want * sizeof(int32_t));
    }
    return 0;
}

/* The pairs this merge made: counted, stored when they reach the floor (their positions in
   one block, in the order found: ascending), pushed on the heap. */
static void store_made(Trainer *t) {
    Scratch *s = &t->scratch;
    s->n_made = 0;
    s->record_made = grow(&t->status, s->record_made, &s->record_made_capacity, s->n, sizeof(int32_t));
    if (t->status.failed) return;
    int parity = t->groups && t->groups->parity;
    for (size_t r = 0; r < s->n; r++) {
        Made *made = scratch_made(t, s->records[r].key);
        if (!made) return;
        made->count += s->records[r].weight;
        made->bytes += delta_size(s->records[r].position - made->last); /* ascending by pair */
        made->last = s->records[r].position;
        s->record_made[r] = (int32_t)(made - s->made);
        /* parity: summed by group here, where each record's pair is found (groups.c) */
        if (parity && s->records[r].weight) group_made_record(t, made, s->record_group[r], s->records[r].weight);
    }
    for (size_t m = 0; m < s->n_made && !t->status.failed; m++) {
        Made *made = &s->made[m];
        if (made->count < t->floor) continue;
        size_t offset = 0;
        uint32_t block = blocks_reserve(&t->status, &t->blocks, made->bytes, &offset);
        int32_t created = t->status.failed ? -1 : table_add(&t->status, &t->table, made->key, made->count);
        if (created < 0) return;
        Pair *stored = &t->table.pairs[created];
        stored->block = block;
        stored->offset = (uint32_t)offset;
        stored->bytes = (uint32_t)made->bytes;
        t->blocks.blocks[block].live++;
        made->pair = created;
        made->last = 0; /* now: the last position written */
    }
    for (size_t r = 0; r < s->n && !t->status.failed; r++) {
        Made *made = &s->made[s->record_made[r]];
        if (made->pair < 0) continue;
        Pair *stored = &t->table.pairs[made->pair];
        put_position(t->blocks.blocks[stored->block].data + stored->offset, &made->filled,
                     &made->last, s->records[r].position);
    }
    Groups *groups = t->groups;
    int global_heap = !groups || !groups->parity || groups->global_phase;
    for (size_t m = 0; m < s->n_made && !t->status.failed && global_heap; m++) {
        if (s->made[m].pair >= 0) push_pair(t, s->made[m].pair);
    }
}

/* Empty the key slots this merge used. */
static void reset_slots(Trainer *t) {
    Scratch *s = &t->scratch;
    size_t mask = s->n_slots - 1;
    for (size_t m = 0; m < s->n_made; m++) {
        size_t slot = hash_key(s->made[m].key) & mask;
        while (s->slots[slot] >= 0) { s->slots[slot] = -1; slot = (slot + 1) & mask; }
    }
}

/* Merge the pair of entry `index` into the new id z: every current occurrence replaced, the
   counts around them updated, the pairs made stored; the number of tokens replaced. */
int64_t trainer_merge(Trainer *t, int32_t index, int32_t z) {
    Pair *pair = &t->table.pairs[index];
    pair->count = -1; /* merged: decrements of the pair itself (runs like aaa) do nothing */
    Scratch *s = &t->scratch;
    s->n = 0;
    s->n_lost = 0;
    int64_t replaced = replace_occurrences(t, pair, z);
    retire(t, pair);
    apply_decrements(t);
    if (t->status.failed || size_slots(t) < 0) return replaced;
    store_made(t);
    if (t->groups && t->groups->parity && !t->status.failed) group_count_made(t);
    reset_slots(t);
    return replaced;
}

void trainer_free(Trainer *t) {
    free(t->tok);
    free(t->text_weight);
    free(t->text_index);
    free(t->length);
    table_free(&t->table);
    free(t->heap.items);
    blocks_free(&t->blocks);
    free(t->scratch.records);
    free(t->scratch.record_made);
    free(t->scratch.lost);
    free(t->scratch.record_group);
    free(t->scratch.lost_group);
    free(t->scratch.made);
    free(t->scratch.slots);
}

/* ---------------------------------------------------------------------------------------- */
/* A training session: set up from its input, then one merge at a time (the binding runs the
   steps without the GIL, a block at a time, reporting progress between blocks). */

/* Each text's weight, when some text weighs other than 1; NULL, or why not. */
static const char *set_weights(const TrainInput *in, Trainer *t) {
    int64_t lowest = in->groups ? 0 : 1; /* weight 0 (measured only) needs groups */
    int heavy = 0;
    for (size_t k = 0; k < in->n_texts; k++) {
        if (in->weights[k] < lowest || in->weights[k] > UINT32_MAX)
            return lowest ? "weights must be from 1 to 2**32 - 1" : "weights must be from 0 to 2**32 - 1";
        heavy |= in->weights[k] != 1;
    }
    if (!heavy) return NULL;
    size_t windows = (t->size >> TEXT_WINDOW_SHIFT) + 1;
    t->text_weight = malloc(in->n_texts * sizeof(uint32_t));
    t->text_index = malloc(windows * sizeof(uint32_t));
    if (!t->text_weight || !t->text_index) return "out of memory";
    for (size_t k = 0; k < in->n_texts; k++) t->text_weight[k] = (uint32_t)in->weights[k];
    size_t k = 0; /* the last text starting at or before the window's first slot (or 0) */
    for (size_t w = 0; w < windows; w++) {
        size_t first = w << TEXT_WINDOW_SHIFT;
        while (k + 1 < in->n_texts && (size_t)in->starts[k + 1] <= first) k++;
        t->text_index[w] = (uint32_t)k;
    }
    return NULL;
}

void learned_free(Learned *l) {
    free(l->lefts);
    free(l->rights);
    free(l->chosen);
    free(l->counts);
    free(l->replaced);
    free(l->replaced_by_group);
}

const char *training_setup(const TrainInput *in, Trainer *t, Groups *groups, Learned *l) {
    size_t n = (size_t)in->n_merges + 1;
    t->size = in->n_slots;
    t->buffer = in->buffer;
    t->starts = in->starts;
    t->n_texts = in->n_texts;
    t->ids = in->ids;
    t->min_count = in->min_pair_count;
    t->first_mode = in->first;
    t->tok = malloc(t->size * sizeof(int32_t) + 4);
    t->length_capacity = (size_t)in->first_id + 1024;
    t->length = malloc(t->length_capacity * sizeof(int32_t));
    l->lefts = malloc(n * sizeof(int32_t));
    l->rights = malloc(n * sizeof(int32_t));
    l->counts = malloc(n * sizeof(int64_t));
    l->replaced = malloc(n * sizeof(int64_t));
    if (!t->tok || !t->length || !l->lefts || !l->rights || !l->counts || !l->replaced)
        return "out of memory";
    if (in->weights) {
        const char *problem = set_weights(in, t);
        if (problem) return problem;
    }
    for (size_t k = 0; k < in->n_texts; k++)
        l->n_tokens += (long long)text_slots(in->starts, in->n_texts, k, t->size)
                       * (in->weights ? in->weights[k] : 1);
    if (in->groups) {
        const char *problem = groups_init(groups, t, in->starts, in->n_texts, in->groups,
                                          in->multiplicities, in->parity);
        if (problem) return problem;
        if ((size_t)groups->n * n > ((size_t)1 << 31)) return "too many groups times merges to report on";
        l->chosen = malloc(n * sizeof(int32_t));
        l->replaced_by_group = calloc((size_t)groups->n * n, sizeof(int64_t));
        if (!l->chosen || !l->replaced_by_group) return "out of memory";
        groups->global_phase = in->parity && in->global_merges > 0;
        t->groups = groups;
    }
    t->n_ids = (size_t)in->first_id;
    for (int32_t id = 0; id < in->first_id; id++) t->length[id] = 1;
    size_t block_bytes = t->size / 32;
    t->blocks.block_bytes = block_bytes > 16384 ? block_bytes : 16384;
    return NULL;
}

/* One merge: the best pair (the worst group's, parity-aware after the global merges), merged
   into the next id and noted. */
int training_step(const TrainInput *in, Trainer *t, Learned *l) {
    Groups *groups = t->groups;
    int32_t group = -1, index;
    if (in->parity && l->learned >= in->global_merges) {
        while ((index = best_pair_parity(t, &group)) == -2 && !t->status.failed) {
            t->floor = t->floor / 4 > t->min_count ? t->floor / 4 : t->min_count;
            rescan(t, 0);
        }
    } else {
        index = best_pair(t);
    }
    if (index < 0 || t->status.failed) return 0;
    Key key = t->table.pairs[index].key;
    int64_t count = t->table.pairs[index].count;
    if (group >= 0) { /* the count it was chosen on: the group's own */
        count = group_count(t, index, group);
    }
    int32_t z = (int32_t)(in->first_id + l->learned);
    t->length = grow(&t->status, t->length, &t->length_capacity, (size_t)z + 1, sizeof(int32_t));
    if (t->status.failed) return 0;
    t->length[z] = t->length[key_left(key)] + t->length[key_right(key)];
    t->n_ids = (size_t)z + 1;
    if (groups) {
        groups->global_phase = in->parity && l->learned + 1 < in->global_merges;
        memset(groups->replaced, 0, (size_t)groups->n * sizeof(int64_t));
    }
    int64_t replaced = trainer_merge(t, index, z);
    long long r = l->learned;
    l->lefts[r] = key_left(key);
    l->rights[r] = key_right(key);
    l->counts[r] = count;
    l->replaced[r] = replaced;
    if (groups) {
        l->chosen[r] = group;
        memcpy(l->replaced_by_group + (size_t)r * (size_t)groups->n, groups->replaced,
               (size_t)groups->n * sizeof(int64_t));
    }
    l->learned++;
    return 1;
}
