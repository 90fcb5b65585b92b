/*
 * The compiled BPE engine's shared definitions: ids and pair keys, the data structures
 * (structures.c), the trainer (train.c, and groups.c for texts in groups: languages), and the
 * replay (replay.c). None of these files knows Python; module.c is the only one that does,
 * turning Python's arguments into these structures and results back into Python objects.
 *
 * The packed buffer: texts one after another, separated (and surrounded) by the byte 0xFF,
 * which UTF-8 never uses. Both the trainer and the replay keep `tok`, one int32 per byte: a
 * token's id at its first byte, ~start (<= -2) at its last byte (so the left neighbour of
 * position i is found from tok[i - 1]), and GAP (-1) everywhere else (separators and the
 * inside of tokens).
 */

#ifndef ANALYZER_BPE_ENGINE_H
#define ANALYZER_BPE_ENGINE_H

#include <stddef.h>
#include <stdint.h>

#define GAP (-1)
#define SEPARATOR 0xFF
#define FIRST_NEW_ID 256
#define MAX_IDS (1 << 24) /* analyzer.bpe.MAX_VOCAB_SIZE: ids fit in 24 bits */
#define NO_LIST UINT32_MAX
#define MAX_GROUPS (1 << 16) /* a group number fits in a Run's 16 bits */

/* ---------------------------------------------------------------------------------------- */
/* The token array's one edit                                                                */

/* Replace the pair (a, b) at position i by z, if it is still there: the training and the
   replay both merge through this. A recorded position goes stale when an overlapping
   occurrence to its left was merged first (`aaa`) or a neighbour changed; then nothing is
   done and 0 is returned. Otherwise z's first slot gets z, its last ~i, the slots between
   GAP, and the position just past z is returned (never 0: position 0 is a separator). */
static inline size_t replace_at(int32_t *tok, size_t i, int32_t a, int32_t la, int32_t b,
                                int32_t lb, int32_t z) {
    if (tok[i] != a) return 0;
    size_t j = i + (size_t)la;
    if (tok[j] != b) return 0;
    size_t end = j + (size_t)lb;
    tok[i] = z;
    tok[j] = GAP;
    tok[end - 1] = ~(int32_t)i;
    return end;
}

/* ---------------------------------------------------------------------------------------- */
/* Keys and hashing                                                                          */

typedef uint64_t Key; /* (left << 32) | right: ordering keys orders pairs lexicographically */

static inline Key pair_key(int32_t left, int32_t right) {
    return ((Key)(uint32_t)left << 32) | (uint32_t)right;
}
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

/* ---------------------------------------------------------------------------------------- */
/* structures.c: growable arrays, position blocks, the pair table, the candidate heap.       */
/* Every allocation failure sets `failed`, and the loops stop at their next check; nothing   */
/* is reported from here (module.c raises MemoryError once it has the GIL back).             */

typedef struct {
    int failed; /* an allocation failed */
} Status;

/* `data` grown (realloc) to hold at least `needed` items of `item` bytes; on failure the old
   array, with status->failed set. */
void *grow_to(Status *status, void *data, size_t *capacity, size_t needed, size_t item);
static inline void *grow(Status *status, void *data, size_t *capacity, size_t needed, size_t item) {
    /* inline for the usual case, room already there: it runs for every record of a merge */
    return needed <= *capacity ? data : grow_to(status, data, capacity, needed, item);
}

/* A pair's recorded positions are a list, contiguous inside one block: ascending, each
   written as its distance from the one before (from 0 for the first) in LEB128 (7 bits a
   byte, the high bit set on all but the last byte). They are only ever read in order, and a
   frequent pair's occurrences are near each other: one or two bytes each instead of four. */
typedef struct {
    uint8_t *data;
    size_t used, capacity; /* bytes */
    size_t live; /* lists in this block not yet dead */
    int closed;  /* no more lists will be added */
} Block;

typedef struct {
    Block *blocks;
    size_t n, capacity;
    size_t block_bytes; /* the usual size of a new block */
} Blocks;

uint32_t blocks_reserve(Status *status, Blocks *blocks, size_t count, size_t *offset);
void blocks_release(Blocks *blocks, uint32_t block_index, size_t offset, size_t count);
void blocks_free(Blocks *blocks);

/* Pairs: an open-addressing table from key to an entry. */
typedef struct {
    Key key;
    int64_t count;     /* weighted count of current occurrences; -1 once merged or forgotten */
    uint32_t groups_at; /* parity: where its counts within groups start (groups.c), */
    uint32_t n_groups; /* and how many there are */
    int64_t group_sum; /* parity: a merge's lost occurrences in the current group (groups.c) */
    uint32_t block;    /* where its positions are (NO_LIST: none recorded) */
    uint32_t bytes;    /* the bytes of its list (< 2^32: fewer than 2^31 positions, ascending) */
    uint32_t offset;   /* where its list starts inside the block (a block holds < 2^32 bytes) */
    uint32_t head;     /* "first" mode: where in its list the first position that may be valid
                          is; while the list is written: the bytes written */
    uint32_t head_at;  /* the position just before `head` (what its delta adds to); while the
                          list is written: the last position written */
} Pair;

typedef struct {
    Pair *pairs;
    size_t n, capacity;
    int32_t *slots; /* index into pairs, or -1 */
    size_t n_slots; /* a power of two, at least twice n */
} PairTable;

/* The entry of a key, or -1. Inline (here, not in structures.c): it runs for each neighbour
   of each replaced occurrence, in train.c and groups.c, and must not become a call. */
static inline int32_t table_find(const PairTable *table, Key key) {
    size_t mask = table->n_slots - 1;
    for (size_t slot = hash_key(key) & mask;; slot = (slot + 1) & mask) {
        int32_t index = table->slots[slot];
        if (index < 0 || table->pairs[index].key == key) return index;
    }
}

void table_rehash(Status *status, PairTable *table, size_t n_slots);
int32_t table_add(Status *status, PairTable *table, Key key, int64_t count);
void table_free(PairTable *table);

/* The heap of candidate pairs. Higher count first; then, in "first" mode, the earlier first
   occurrence; then the smaller key. An entry remembers the count (and first position) it was
   pushed with: when that is no longer the pair's, it is stale and ranks too high. */
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

void heap_push(Status *status, Heap *heap, Candidate item);
Candidate heap_pop(Heap *heap);

/* ---------------------------------------------------------------------------------------- */
/* train.c: the trainer                                                                      */

/* Scratch of one merge: the pairs it creates, with their positions and weights, in the order
   they are found (ascending for each key), aggregated once the merge is done; and the pairs
   an occurrence of which it destroyed. */
typedef struct {
    Key key;
    uint32_t position;
    uint32_t weight;
} Record;

typedef struct {
    Key key;
    int64_t count;
    size_t bytes;      /* of its list, when stored */
    uint32_t last;     /* its last record's position (while `bytes` is summed, then written) */
    uint32_t filled;   /* bytes of its list written */
    int32_t pair; /* the entry it became, or -1 when below the floor */
    int64_t group_sum;  /* parity: its records in the current group, summed (groups.c) */
    int32_t last_group; /* parity: the group of its last record seen (-1: none yet) */
    uint32_t n_groups;  /* parity: its sums kept (see group_made_record) */
} Made;

typedef struct {
    Record *records;
    size_t n, capacity;
    int32_t *record_made;   /* by record: its index in `made` (found once, used twice) */
    size_t record_made_capacity;
    Record *lost; /* pairs an occurrence of which this merge destroyed */
    size_t n_lost, lost_capacity;
    uint16_t *record_group, *lost_group; /* parity: by record and by lost record, its group */
    size_t record_group_capacity, lost_group_capacity;
    Made *made;
    size_t n_made, made_capacity;
    int32_t *slots; /* key -> index into made, reset after each merge */
    size_t n_slots;
} Scratch;

struct Groups;

#define TEXT_WINDOW_SHIFT 5 /* text_index: a text per 32 slots */

typedef struct {
    Status status;
    int32_t *tok;
    size_t size;             /* slots: bytes in the packed buffer, or ids in `ids` */
    const uint8_t *buffer;   /* the packed buffer (owned by the caller, kept alive), or NULL */
    const int32_t *ids;      /* or: texts already in tokens, one slot per id, GAP between
                                texts (continued training); NULL for bytes */
    uint32_t *text_weight;   /* per text (NULL: every text weighs 1): a position's is its
                                text's, found by text_at (a per-position array cost 4 bytes
                                per byte of text; this and text_index cost 4 per text and
                                1/8 per byte) */
    uint32_t *text_index;    /* by window of TEXT_WINDOW slots: the text of its first slot */
    const int64_t *starts;   /* each text's first position (the caller's, kept alive) */
    size_t n_texts;
    int32_t *length;         /* slots of each id (bytes, when training starts from bytes) */
    size_t n_ids, length_capacity;
    int64_t min_count, floor;
    int first_mode;
    PairTable table;
    Heap heap;
    Blocks blocks;
    Scratch scratch;
    struct Groups *groups;   /* NULL unless texts are in groups (languages) */
} Trainer;

/* The slots of text k of n (its tokens before any merge), texts laid out as packing.pack lays
   them out in `size` slots: from its start to the separator before the next one. */
static inline size_t text_slots(const int64_t *starts, size_t n, size_t k, size_t size) {
    size_t end = k + 1 < n ? (size_t)starts[k + 1] - 1 : size - 1;
    return end - (size_t)starts[k];
}

/* The text holding `position` (a position inside a text): the last text starting at or
   before it. `text_index` gives the text holding the first slot of each window of
   TEXT_WINDOW slots; from there a few steps forward through the starts (a window holds a
   couple of texts: chunks are short). Two reads, both near the last ones when the positions
   ascend, and prefetchable when they do not (replace_occurrences). */
static inline size_t text_at(const Trainer *t, size_t position) {
    size_t k = t->text_index[position >> TEXT_WINDOW_SHIFT];
    while (k + 1 < t->n_texts && (size_t)t->starts[k + 1] <= position) k++;
    return k;
}

static inline uint32_t weight_at(const Trainer *t, size_t position) {
    return t->text_weight ? t->text_weight[text_at(t, position)] : 1;
}

/* The bytes a position takes in a list, `delta` after the one before. */
static inline uint32_t delta_size(uint32_t delta) {
    return delta < (1u << 7) ? 1 : delta < (1u << 14) ? 2 : delta < (1u << 21) ? 3 : delta < (1u << 28) ? 4 : 5;
}

/* Write `position` at list[*written], after *last; both advanced. */
static inline void put_position(uint8_t *list, uint32_t *written, uint32_t *last, uint32_t position) {
    uint32_t delta = position - *last;
    uint8_t *at = list + *written;
    while (delta >= 0x80) {
        *at++ = (uint8_t)(delta | 0x80);
        delta >>= 7;
    }
    *at++ = (uint8_t)delta;
    *written = (uint32_t)(at - list);
    *last = position;
}

/* A pair's positions, read in order:
       Positions p = pair_positions(t, pair);
       while (next_position(&p)) { ... p.position ... }  */
typedef struct {
    const uint8_t *at, *end;
    uint32_t position; /* the last one read (0 before the first) */
} Positions;

static inline Positions pair_positions(const Trainer *t, const Pair *pair) {
    if (pair->block == NO_LIST) return (Positions){NULL, NULL, 0};
    const uint8_t *list = t->blocks.blocks[pair->block].data + pair->offset;
    return (Positions){list, list + pair->bytes, 0};
}

static inline int next_position(Positions *p) {
    if (p->at >= p->end) return 0;
    uint32_t delta = 0;
    unsigned shift = 0;
    uint8_t byte;
    do {
        byte = *p->at++;
        delta |= (uint32_t)(byte & 0x7F) << shift;
        shift += 7;
    } while (byte & 0x80);
    p->position += delta;
    return 1;
}

/* Every adjacent pair of the current tokens, left to right, inside texts:
       PairWalk walk = pair_walk(t);
       while (next_pair(&walk)) { ... walk.left, walk.right, walk.left_start ... }  */
typedef struct {
    const Trainer *t;
    size_t next;       /* the position of the token after the right one */
    int32_t left, right;
    size_t left_start, right_start;
} PairWalk;

static inline PairWalk pair_walk(const Trainer *t) {
    PairWalk walk = {t, 0, GAP, GAP, 0, 0};
    return walk;
}

static inline int next_pair(PairWalk *walk) {
    const Trainer *t = walk->t;
    int32_t previous = walk->right;
    size_t previous_start = walk->right_start;
    while (walk->next < t->size) {
        size_t p = walk->next;
        int32_t token = t->tok[p];
        if (token < 0) { /* a separator (GAP): no pair spans it */
            previous = GAP;
            walk->next = p + 1;
            continue;
        }
        walk->next = p + (size_t)t->length[token];
        walk->right = token;
        walk->right_start = p;
        if (previous >= 0) {
            walk->left = previous;
            walk->left_start = previous_start;
            return 1;
        }
        previous = token;
        previous_start = p;
    }
    walk->right = GAP;
    return 0;
}

/* The training as a whole: set up (trainer_start), then one merge at a time (trainer_next,
   trainer_merge), then trainer_free. */
void trainer_start(Trainer *t, int64_t forced_floor);
int32_t best_pair(Trainer *t);
void push_pair(Trainer *t, int32_t index);
void retire(Trainer *t, Pair *pair);
void rescan(Trainer *t, int start);
int64_t trainer_merge(Trainer *t, int32_t index, int32_t z);
int64_t initial_floor(size_t size, int64_t min_count, const uint32_t *weight);
void trainer_free(Trainer *t);

/* ---------------------------------------------------------------------------------------- */
/* groups.c: texts in groups (languages)                                                     */

/* A pair's count within one group. Each stored pair has a list of them, in ascending group
   order, one for each group where its count reached min_count when it was counted (a missing
   group reads as 0), or, for a pair in many groups, one for every group (a full list, read
   at the group's index); the lists lie end to end in one array (`GroupCounts`), the pair's
   found by its `groups_at` and `n_groups`. A list is written once, when its pair is counted,
   so a pair's counts sit together and are reached from its entry, with no hashing: these
   lookups run for each occurrence a merge makes or destroys. */
typedef struct {
    int64_t count;
    uint32_t group;
} GroupCount;

typedef struct {
    GroupCount *entries;
    size_t n, capacity; /* lists of pairs merged or forgotten stay until the next recount */
} GroupCounts;


/* Consecutive texts of one group and one multiplicity form a run: texts laid out language by
   language make a few runs, so finding a position's group is a search in a small array that
   stays in cache (a per-position array cost a cache miss per occurrence). */
typedef struct {
    size_t start;            /* the first position of the run's first text */
    uint32_t multiplicity;   /* its texts' weight in the group's token count */
    uint16_t group;
} Run;

/* Each merge's replacements counted per group, and, for parity-aware training (Foroutan et
   al. 2025), each pair's count within each group and a heap per group, so that the group
   with the most tokens can take its own best pair. Pair counts and positions stay global (a
   merge applies to every group); only the choice is per group. A text of weight 0 is
   measured only: its pairs count for nothing, merges still apply to it. */
typedef struct Groups {
    Run *runs;
    size_t n_runs;
    size_t cursor;           /* the run found last: positions asked for mostly increase */
    int64_t *tokens;         /* per group: current tokens (multiplicities applied) */
    int64_t *replaced;       /* per group: the current merge's replacements (weights applied) */
    int32_t n;
    int parity;
    int multiplicity_is_weight; /* each text's multiplicity is its weight (weight_at) */
    int global_phase;        /* the next merge is chosen over all groups (the global heap) */
    GroupCounts counts;      /* parity: each stored pair's counts within groups */
    Heap *heaps;             /* parity: one per group; candidates carry the plain pair key */
    Heap *waiting;           /* parity: per group, candidates below its heap_floor, in no order */
    int64_t *heap_floor;     /* parity: per group, the count a candidate needs to enter its heap */
    struct MadeSum *made_sums; /* parity: the current merge's made pairs' sums by group */
    size_t n_made_sums, made_sums_capacity;
    int32_t *pending;        /* scratch: the pairs with lost occurrences summed in */
    size_t n_pending, pending_capacity; /* group_sum, not yet taken off their counts, */
    int32_t summing;         /* in this group (-1: none) */
    uint8_t *exhausted;      /* parity: by group, 1 once it has no pair reaching min_count */
} Groups;

/* The run holding `position` (a position inside a text): the last run starting at or
   before it. */
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

/* Set up from one group per text (and, for parity-aware training, one multiplicity per text:
   its weight in its group's token count); NULL, or what is wrong (nothing to free then but
   with groups_free). */
const char *groups_init(Groups *groups, const Trainer *t, const int64_t *starts, size_t n_texts,
                        const int64_t *group_of_text, const int64_t *multiplicities, int parity);
void groups_free(Groups *groups);
void push_group(Trainer *t, uint32_t group, int32_t index, int64_t count);
int64_t group_count(const Trainer *t, int32_t index, int32_t group); /* 0 if not kept */
void group_recount(Trainer *t, int start);
void group_flush_lost(Trainer *t);
void group_add_pending(Trainer *t, int32_t index);

/* An occurrence of the stored pair of entry `index` that the current merge destroyed, in
   group g, summed in the pair's entry (just touched to lower its count). The records come in
   position order, so those of one group come together: summed per pair first, they reach
   the pair's list once per group (group_flush_lost, when the group changes, and once the
   records are done), not once per record. Only live stored pairs matter: a merged pair's
   group counts are never read again. */
static inline void group_lost_record(Trainer *t, int32_t index, int32_t g, uint32_t weight) {
    Groups *groups = t->groups;
    if (!weight || index < 0 || t->table.pairs[index].count < 0) return;
    if (g != groups->summing) {
        if (groups->summing >= 0) group_flush_lost(t);
        groups->summing = g;
    }
    Pair *pair = &t->table.pairs[index];
    if (!pair->group_sum) group_add_pending(t, index);
    pair->group_sum += weight;
}
void group_count_made(Trainer *t);
void group_keep_sum(Trainer *t, Made *made);

/* A record of a pair the current merge made, in group g, summed in the pair's Made entry.
   The records come in position order, so each pair's in ascending groups: when a pair's group
   changes, its sum in the group before is whole, and kept (group_keep_sum) for
   group_count_made. Called from store_made, which finds each record's pair anyway. */
static inline void group_made_record(Trainer *t, Made *made, int32_t g, uint32_t weight) {
    if (made->last_group != g) {
        if (made->last_group >= 0) group_keep_sum(t, made);
        made->last_group = g;
    }
    made->group_sum += weight;
}
int32_t best_pair_parity(Trainer *t, int32_t *chosen);
uint32_t group_first_occurrence(Trainer *t, Pair *pair, uint16_t group);

/* ---------------------------------------------------------------------------------------- */
/* counter.c: distinct chunks with their counts, gathered from batches                       */

typedef struct {
    uint64_t offset; /* of its bytes, in the arena; a chunk of up to 8 bytes holds them here */
    uint32_t length;
    uint32_t hash;   /* of its bytes: where its slot is, and a check before the bytes are */
    int64_t count;
    int64_t first;   /* the smallest order key it was given: its first occurrence's */
} CountedChunk;

typedef struct {
    Status status;
    uint8_t *bytes;  /* the bytes of every chunk longer than INLINE_CHUNK, end to end */
    size_t used, bytes_capacity;
    size_t total_bytes; /* of every chunk */
    CountedChunk *chunks;
    size_t n, chunks_capacity;
    uint32_t *slots; /* open addressing: a chunk's index + 1, 0 empty */
    size_t n_slots;
} ChunkCounter;

#define INLINE_CHUNK 8 /* bytes a chunk may have to be held in its entry, not in the arena */

/* A counted chunk's bytes, wherever they are held. */
static inline const uint8_t *counted_bytes(const ChunkCounter *c, const CountedChunk *chunk) {
    return chunk->length <= INLINE_CHUNK ? (const uint8_t *)&chunk->offset : c->bytes + chunk->offset;
}

/* Count `count` more occurrences of the chunk (its first occurrence's key `first`, if it is
   smaller than the one it has); 0, or -1 when memory ran out (the counter is left whole). */
int counter_add(ChunkCounter *c, const uint8_t *data, size_t length, int64_t count, int64_t first);
/* The chunks put in order of their first occurrence; 0, or -1 when memory ran out. */
int counter_sort(ChunkCounter *c);
/* The chunks put in order of their first occurrence, and the slots freed: to be listed only,
   never counted into again (its memory then is about its table's). */
void counter_order(ChunkCounter *c);
void counter_free(ChunkCounter *c);

/* ---------------------------------------------------------------------------------------- */
/* train.c: a training session, as the binding (module.c) runs it                            */

/* What to train on and how, in plain C: the binding fills it from its arguments. */
typedef struct {
    const uint8_t *buffer;          /* the texts' bytes, end to end; NULL when `ids` is set */
    const int32_t *ids;             /* or the texts as ids of a base, GAP between texts */
    size_t n_slots;                 /* positions: bytes, or ids */
    const int64_t *starts;          /* each text's first position */
    size_t n_texts;
    const int64_t *weights;         /* each text's weight, or NULL: every text once */
    const int64_t *groups;          /* each text's group (language), or NULL */
    const int64_t *multiplicities;  /* each text's count in its group's measure, or NULL */
    int parity;                     /* parity-aware (needs groups) */
    int first;                      /* tie-break by first occurrence, not lexicographic */
    long long global_merges;        /* parity-aware: the first merges chosen over all groups */
    long long min_pair_count, floor;
    int32_t first_id;               /* the first new id: 256, or a base's size */
    long long n_merges;             /* how many merges to learn, at most */
} TrainInput;

/* What a training learns, merge by merge. */
typedef struct {
    int32_t *lefts, *rights, *chosen;
    int64_t *counts, *replaced, *replaced_by_group; /* replaced_by_group: a row of groups per merge */
    long long learned;
    long long n_tokens; /* before any merge, weights applied */
} Learned;

/* Set a training up; NULL, or why it cannot be (a message starting "out of memory" when
   memory ran out; any other is the input's fault). The caller frees t, groups and l whatever
   it returns. */
const char *training_setup(const TrainInput *in, Trainer *t, Groups *groups, Learned *l);
/* Learn one merge: 1, or 0 when there is none left (training stops) or memory ran out
   (t->status.failed). Needs no interpreter: the binding calls it without the GIL. */
int training_step(const TrainInput *in, Trainer *t, Learned *l);
void learned_free(Learned *l);

/* ---------------------------------------------------------------------------------------- */
/* replay.c: encode and count with a merge list                                              */

/* The merges an id takes part in, as one side, sorted by the id on the other side. */
typedef struct {
    int32_t partner;
    int32_t rank;
} Partner;

/* A merge list prepared for replay. */
typedef struct {
    size_t n_merges;
    int32_t *lefts, *rights; /* by rank */
    int32_t *length;         /* bytes of each id */
    uint8_t **piece;         /* the bytes of each id (pointers into `pieces`) */
    uint8_t *pieces;
    int32_t *byte_rank;      /* (left << 8 | right) -> first rank of that byte pair, or -1 */
    uint32_t *as_left;       /* id -> where its merges as the left id start in `partners`; */
    uint32_t *as_right;      /* the lists of id i end where those of id i + 1 begin */
    Partner *partners;       /* right partners (for as_left), then left partners (as_right) */
    uint32_t *hash_at;       /* by list (as_left lists, then as_right ones): its hash table's */
    Partner *hashed;         /* start in `hashed` (a long list: 2 x length slots, a power of
                                two, empty slots with partner -1); short lists have none */
    char problem[128];       /* what merge_list_init found wrong */
} MergeList;

typedef struct {
    uint32_t position;
    int32_t rank;
} RankRecord;

/* The working memory of a replay, reused batch after batch. */
typedef struct {
    Status status;
    int32_t *tok;              /* the batch, as in training */
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
    uint64_t *waiting;         /* a bit per rank whose list waits */
    size_t n_words;
} Work;

#define REPLAY_BATCH (1 << 18) /* bytes of texts replayed together: their lists stay in cache */
#define BATCH_TEXTS 65535      /* texts in a batch: a position's text fits in 16 bits */

/* NULL, or what is wrong with the merge list (`n` merges, merge r making id 256 + r). */
const char *merge_list_init(MergeList *m, const int32_t *lefts, const int32_t *rights, size_t n);
void merge_list_free(MergeList *m);
int work_init(const MergeList *m, Work *w);
void work_free(Work *w);

/* What a replay of one batch counts (any of these may be NULL or 0). */
typedef struct {
    const int64_t *snapshot;  /* ascending ranks: counts are taken just before each */
    size_t n_snapshots;
    uint32_t *counts;         /* counts[s * stride + k]: text k's tokens at snapshot s */
    size_t stride;
    int64_t *replaced;        /* replaced[rank * replaced_stride + group_of[k]] */
    size_t replaced_stride;
    const int32_t *group_of;  /* each text's group */
} Tally;

void replay_batch(const MergeList *m, Work *w, const uint8_t *bytes, size_t size, size_t limit,
                  const int64_t *text_starts, size_t n_texts, const Tally *tally);
int spells(const MergeList *m, const Work *w, const uint8_t *bytes, size_t start);

/* ---------------------------------------------------------------------------------------- */
/* split.c: the built-in pre-tokenizers, and the table of distinct chunks                     */

/* The patterns, numbered as analyzer/bpe/native_split.py numbers them. */
enum { SPLIT_WORDS, SPLIT_GPT2, SPLIT_CL100K, SPLIT_O200K, SPLIT_LLAMA3, SPLIT_SUPERBPE,
       /* the production tokenizers' own (analyzer/external/engine_models.py) */
       SPLIT_QWEN, SPLIT_TEKKEN, SPLIT_DIGITS, SPLIT_NUMBERS, SPLIT_KANA_HAN, SPLIT_DEEPSEEK,
       SPLIT_METASPACE,
       SPLIT_PATTERNS };

/* A code point's classes, one byte per code point (U+0000..U+10FFFF). */
#define CLASS_SPACE 1     /* \s */
#define CLASS_LETTER 2    /* \p{L} */
#define CLASS_NUMBER 4    /* \p{N} */
#define CLASS_UPPERISH 8  /* [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}] (o200k) */
#define CLASS_LOWERISH 16 /* [\p{Ll}\p{Lm}\p{Lo}\p{M}] (o200k) */
#define CLASS_PUNCT 32    /* \p{P} (deepseek) */
#define CLASS_SYMBOL 64   /* \p{S} (deepseek) */
#define CLASS_MARK 128    /* \p{M} (deepseek) */
#define CODE_POINTS 0x110000

typedef struct {
    const uint8_t *classes;    /* CODE_POINTS bytes of CLASS_* bits */
    const uint32_t *fold_from; /* the code points (?i) matches to a contraction letter... */
    const uint32_t *fold_to;   /* ...and that letter, lower-case ASCII */
    size_t n_folds;
    const uint8_t *digits;     /* SPLIT_DIGITS' digits, a bit per code point, when they are not
                                  CLASS_NUMBER's (Hugging Face's Digits follows Rust's Unicode
                                  version, its regular expressions Oniguruma's); else NULL */
} SplitTables;

/* A text as Python holds it: `kind` bytes per code point (1, 2 or 4). */
typedef struct {
    int kind;
    const void *data;
    size_t length;
} SplitText;

/* Cut a text into chunks: each chunk's end into `ends` (room for t->length), the number of
   chunks returned; *lost set when findall would have dropped a character (no built-in pattern
   does: every character starts some match). */
size_t split_text(int pattern, const SplitTables *tables, const SplitText *t, uint32_t *ends,
                  int *lost);

/* One step of a production tokenizer's pre-tokenizer: a pattern, and whether the text between
   its matches is kept as chunks (`around`: Hugging Face's Split(behavior="isolated")) or
   dropped (tiktoken's findall). */
typedef struct {
    int pattern;
    int around;
} SplitStep;

#define MAX_SPLIT_STEPS 8

/* Cut [0, t->length) by each step in turn, every later step cutting each piece the one before
   made as a text of its own (its lookarounds see the piece's ends). Each chunk's start and end
   go to `starts` and `ends`, `scratch` holding as much: room for t->length + 1 each. The number
   of chunks is returned; a findall step's dropped text is in no chunk. */
size_t split_steps(const SplitStep *steps, int n_steps, const SplitTables *tables,
                   const SplitText *t, uint32_t *starts, uint32_t *ends, uint32_t *scratch_starts,
                   uint32_t *scratch_ends);

/* A distinct chunk: where it first occurs and how often it occurs (weights applied). */
typedef struct {
    uint64_t hash;
    int64_t count;
    uint32_t text, start, length;
} ChunkEntry;

/* The distinct chunks, in order of first appearance. */
typedef struct {
    uint32_t *slots; /* open addressing: a chunk's id + 1, 0 for an empty slot */
    size_t mask;
    ChunkEntry *entries;
    size_t n, capacity;
} ChunkTable;

/* The hash of text[start, start + length), the same whatever the text's kind. */
uint64_t chunk_hash(const SplitText *t, size_t start, size_t length);
/* Whether a[a_start, +length) and b[b_start, +length) hold the same code points. */
int same_chunk(const SplitText *a, size_t a_start, const SplitText *b, size_t b_start,
               size_t length);

/* The id of the chunk texts[k][start, start + length) (its hash given), added if new; its
   count raised by `weight`. UINT32_MAX when memory ran out (status->failed). */
uint32_t chunk_add(Status *status, ChunkTable *table, const SplitText *texts, uint32_t k,
                   size_t start, size_t length, uint64_t hash, int64_t weight);
void chunk_table_free(ChunkTable *table);

/* Threads for gathering (POSIX threads where there are; elsewhere one, the same result). */
#ifndef ENGINE_THREADS
#if defined(__unix__) || defined(__APPLE__)
#define ENGINE_THREADS 1
#else
#define ENGINE_THREADS 0
#endif
#endif
#define MAX_SPLIT_THREADS 64

/* What chunk_gather gives: the distinct chunks, and, when `offsets` was given (room for
   n_texts + 1), each occurrence's id (`ids`, n_ids of them, malloc'd) and where each text's
   ids start; `lost` the first text a pattern would lose a character of, or -1. */
typedef struct {
    ChunkTable table;
    uint32_t *ids;
    size_t n_ids;
    int64_t *offsets;
    ptrdiff_t lost;
} Gathered;

/* Split every text and gather the distinct chunks, the texts cut into `n_threads` runs of
   about equal length, one thread each, and the threads' tables then merged in order: the
   result is the same for any number of threads. 0, or -1 when memory ran out. */
int chunk_gather(int pattern, const SplitTables *tables, const SplitText *texts, size_t n_texts,
                 const int64_t *weights, int n_threads, Gathered *out);

/* counter.c, fed by split.c: a gathering's chunks counted in UTF-8 (what the counting pass
   over a training source does with each batch, with no Python string made per chunk). */

/* The UTF-8 bytes of code points [start, start + length) of a text: their number, or
   SIZE_MAX when one is a lone surrogate (which UTF-8 cannot hold); written to `out` (room
   for 4 per code point) unless it is NULL. */
size_t utf8_of(const SplitText *t, size_t start, size_t length, uint8_t *out);
/* Each distinct chunk of `gathered` (over `texts`) counted, its order key `first` + its id:
   0; -1 when memory ran out; -2 when a chunk holds a lone surrogate (nothing is counted). */
int counter_add_gathered(ChunkCounter *c, const Gathered *gathered, const SplitText *texts,
                         int64_t first);


/* A chunk counter in parts, which several threads count into at once (the counting pass over
   a training source): each distinct chunk lives in the part its hash picks, so the parts hold
   no chunk twice and are never merged; a part is locked while a thread adds to it. */
typedef struct {
    ChunkCounter *parts;
    void *locks; /* a mutex per part */
    int n;
} PartedCounter;

/* 0, or -1 when memory ran out (nothing to free then). At most MAX_SPLIT_THREADS parts. */
int parted_init(PartedCounter *p, int n_parts);
void parted_free(PartedCounter *p);
/* counter_add, into the chunk's part (locked). */
int parted_add(PartedCounter *p, const uint8_t *data, size_t length, int64_t count,
               int64_t first);
/* counter_add_gathered, each chunk into its part, the parts taken from `start` on (callers
   start at different parts, so that they seldom wait for each other). */
int parted_add_gathered(PartedCounter *p, const Gathered *gathered, const SplitText *texts,
                        int64_t first, int start);
size_t parted_len(const PartedCounter *p);
/* With every part sorted (counter_sort or counter_order) and at[k] the next chunk of part k: the part whose
   next chunk came first, or -1 when every part is done. */
int parted_next(const PartedCounter *p, const size_t *at);

/* lines.c: lines of UTF-8 read in compiled code                                             */

/* The documents of a block of whole lines (streams._plain_lines's): their number, each its
   bytes [starts[k], ends[k]) (room for one per line break), and their code points in all;
   -1 when the block is not strict UTF-8. */
ptrdiff_t utf8_lines(const uint8_t *data, size_t n, int64_t *starts, int64_t *ends,
                     size_t *characters);
/* The widest code point of strict UTF-8 bytes, and their number (`points`); UINT32_MAX when
   the bytes are not UTF-8. */
uint32_t utf8_widest(const uint8_t *data, size_t n, size_t *points);
/* Bytes utf8_widest found UTF-8 decoded into `out`, `kind` (1, 2 or 4) bytes a code point,
   wide enough for the widest. */
void utf8_decode_kind(const uint8_t *data, size_t n, int kind, void *out);

/* ---------------------------------------------------------------------------------------- */
/* ranked.c: production tokenizers' BPE (merges by rank, one pair at a time), and counting     */

/* A slot of the token table: an id + 1 (0: empty) and 32 bits of its bytes' hash, so that a
   probe compares bytes only where the hashes agree. */
typedef struct {
    uint32_t id;
    uint32_t hash;
} TokenSlot;

/* A slot of the merge table, the pair and what it makes side by side: one cache line read per
   lookup. An empty slot's key is EMPTY_PAIR (no pair of ids >= 0 is). */
typedef struct {
    Key key;
    uint32_t rank;
    int32_t made;
} MergeSlot;

#define EMPTY_PAIR UINT64_MAX
#define FILTER_BITS (1u << 22)

/* The merge of two bytes' symbols, if any (made -1: none). */
typedef struct {
    uint32_t rank;
    int32_t made;
} BytePair;

/* A production tokenizer's model (analyzer.bpe.ranked.RankedModel). */
typedef struct {
    size_t n_ids;
    uint8_t *pieces;       /* every token's bytes, end to end */
    uint64_t *piece_start; /* n_ids + 1: where token i's bytes start */
    TokenSlot *token_slots; /* bytes -> id */
    size_t token_mask;
    MergeSlot *merge_slots; /* (left, right) -> (rank, made) */
    size_t n_merges, merge_mask;
    BytePair *byte_pairs;   /* 65536: the merge of byte_ids[a] and byte_ids[b], at a << 8 | b */
    uint64_t *token_filter; /* a bit per hash of every token's bytes (FILTER_BITS of them) */
    uint64_t *merge_filter; /* and of every merge's pair: most lookups that would miss a big
                               table stop at a filter that stays in cache */
    int32_t byte_ids[256]; /* each byte's symbol (bytes), or fallback token (characters) */
    int characters;        /* a chunk starts as characters (else as bytes) */
    int whole_first;       /* a chunk that is a token is that token */
} RankedModel;

/* Build a model: token i's bytes are pieces[starts[i], starts[i + 1]); `merges` holds
   (left, right, rank, made) per merge, or with `derive` the merges come from the tokens (each
   cut of a token into two tokens, at the token's id: tiktoken's ranks). NULL, or what is
   wrong (ranked_free frees what was made either way). */
const char *ranked_build(RankedModel *m, const uint8_t *pieces, const int64_t *starts,
                         size_t n_ids, const int32_t *merges, size_t n_merges, int derive,
                         const int32_t *byte_ids, int characters, int whole_first);
void ranked_free(RankedModel *m);
/* The id of the token with these bytes, or -1. */
int32_t ranked_token(const RankedModel *m, const uint8_t *data, size_t length);

/* One encoding's working arrays, grown as chunks need. */
typedef struct {
    int32_t *ids, *next, *prev;
    uint32_t *size;
    void *heap;
    size_t capacity;
} RankedScratch;

int ranked_scratch_reserve(RankedScratch *s, size_t length);
void ranked_scratch_free(RankedScratch *s);

/* A chunk's tokens (into `out`, when given) and where each starts in its bytes (into
   `token_starts`, when given): their number. `s` must have room for `length` (reserve). */
size_t ranked_encode(const RankedModel *m, const uint8_t *data, size_t length,
                     RankedScratch *s, int32_t *out, uint32_t *token_starts);

/* Whitespace, as words are cut at it (Python's str.isspace): a bitset of the code points below
   WORD_SPACE_LIMIT (every whitespace character is). */
#define WORD_SPACE_LIMIT 0x3001

/* Each text's tokens into counts[k], and (when `split_words` is given) how many of its words
   a token starts inside; on `n_threads` threads, each chunk encoded once a thread. 0; -1 when
   memory ran out; -2 when a text holds a lone surrogate. */
int ranked_count(const RankedModel *m, const SplitStep *steps, int n_steps,
                 const SplitTables *tables, const uint8_t *spaces, const SplitText *texts,
                 size_t n_texts, int n_threads, int64_t *counts, int64_t *split_words);

/* The words of a text its tokens split, the tokens given by their ids (`ids`, n of them) and
   each id's bytes (pieces[starts[id], starts[id + 1])): analyzer.external.vocabulary's
   split_words, for a library's tokens. -1 when they do not spell the text (nor a space and the
   text, SentencePiece's dummy prefix); -2 when an id has no bytes in the table. `buffer` has
   room for the spelled bytes (their total) and `text_bytes` for the text's UTF-8 (4 a
   character), `marks` for one bit per spelled byte and one more. */
int64_t words_split_by_ids(const SplitText *text, const int32_t *ids, size_t n,
                           const uint8_t *pieces, const int64_t *starts, size_t n_ids,
                           const uint8_t *spaces, uint8_t *buffer, uint8_t *text_bytes,
                           uint8_t *marks);

#endif
