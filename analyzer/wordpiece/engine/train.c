/* The training: analyzer/wordpiece/reference.py's `train`, step for step.

   The chunks become ids in one flat array, each chunk a record: its length now, its count
   (two words), then its ids, shrinking in place as merges join them. A chunk is known by
   where its record starts (a queue entry's chunks are an array of those, each once): a visit
   reads one place in memory, not an offset, a length and a count in three tables. The first
   pair counts are taken in a dense 512 x 512 table (every first id is a byte symbol), on two
   threads when the chunks are many, then kept in the pair table.

   A step merging (left, right) into `token` changes four kinds of pairs only: (x, left) loses
   what (x, token) gains, x the symbol before an occurrence, and (right, y) loses what
   (token, y) gains, y the one after. So the step sums the amounts by x and by y in two dense
   tables (`Side`) and looks each pair up once at the end, not once an occurrence (tens of
   thousands of them in the first steps). The sums are the same in any order; the notes
   (which chunks each gaining pair gained in) are kept in the order made, every chunk's
   together, as the reference's.

   Where the time goes (NTREX, 32,768): visiting chunks, most of it waiting for memory (a
   record is asked for a few visits ahead, and searched four places at a time); then the
   pair lookups and the queue. */

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "wordpiece.h"

#ifdef __SSE2__
#include <emmintrin.h>
#endif
#define OUT_OF_MEMORY "out of memory"

/* One side's changes in a step: per id (the x before, or the y after), the amount so far
   (lost by (x, left) and gained by (x, token), or lost by (right, y) and gained by (token, y)),
   the last chunk noted, and, at the end, the gaining pair's place in `touched`; the ids
   changed, in order. */
typedef struct {
    int64_t *amount;  /* 0: not changed in this step (every amount is a positive count) */
    uint32_t *last;
    uint32_t *pair;
    List ids;
} Side;

enum { BEFORE, AFTER, SIDES };
#define NOT_PUSHED SIZE_MAX
#define AFTER_BIT 0x80000000u  /* a note's id with this bit: a y after, else an x before */

/* The state of one training. */
typedef struct {
    const Chunks *chunks;
    uint32_t *records;   /* every chunk's record: length, count (2 words), ids */
    Vocab *vocab;
    Pairs pairs;
    Queue queue;
    uint32_t step;       /* steps that merged, from 1 */
    Side side[SIDES];
    size_t side_room;    /* ids each side has room for */
    List touched;        /* the pairs that gained in this step, in the order they first did */
    List note_id, note_chunk;  /* this step's notes: (side's id, chunk), each once */
    /* Per pair in `touched`: the last chunk noted for it, the chunks noted, and its part of
       the step's block (from begin, filled up to fill; NOT_PUSHED: none). */
    uint32_t *last, *noted;
    size_t *begin, *fill;
    size_t touched_room;
    uint64_t work;       /* steps taken: symbols read, pairs applied, notes, queue operations */
} Training;

#define HEADER 3     /* a record's words before its ids */
#define PREFETCH 16  /* visits ahead a chunk's record is asked for */
#define LOOKAHEAD 4  /* side ids ahead their pairs are asked for */

static inline int64_t record_count(const uint32_t *record) {
    int64_t count;
    memcpy(&count, record + 1, sizeof count);
    return count;
}

/* The 512 byte symbols: byte b is id b, and "##" b is 256 + b. */
static int byte_symbols(Vocab *v) {
    uint8_t s[3] = {'#', '#', 0};
    for (int byte = 0; byte < BYTE_SYMBOLS; byte++) {
        s[0] = (uint8_t)byte;
        if (vocab_add(v, s, 1, hash_bytes(s, 1)) < 0) return -1;
    }
    s[0] = '#';
    for (int byte = 0; byte < BYTE_SYMBOLS; byte++) {
        s[2] = (uint8_t)byte;
        if (vocab_add(v, s, 3, hash_bytes(s, 3)) < 0) return -1;
    }
    return 0;
}

/* The first pairs are counted in a dense table of cells, left * ALPHABET + right (every first
   id is a byte symbol), over the chunks in two parts on two threads when they are many: each
   part's records, counts and chunk lists are its own, and the lists are joined in chunk order
   (part one's before part two's). */
#define CELLS ((size_t)ALPHABET * ALPHABET)
#define TWO_PARTS 65536  /* chunks from which a second thread counts half of them */

typedef struct {
    const Chunks *chunks;
    uint32_t *records;
    size_t from, to;    /* its chunks */
    uint32_t at;        /* its first record's start */
    int64_t *count;     /* per cell: occurrences times the chunks' counts */
    uint32_t *holders;  /* per cell: its chunks holding the pair (each once) */
    uint32_t *last;     /* per cell: the last chunk (record start) counted in */
    size_t *fill;       /* per cell: where its next chunk goes in `listed` */
    uint32_t *listed;   /* the block's chunks */
} Part;

/* Write the part's records (ids: byte b begins a chunk as b, continues it as 256 + b) and
   count their pairs. */
static void *part_count(void *arg) {
    Part *part = arg;
    const Chunks *c = part->chunks;
    uint32_t at = part->at;
    for (size_t k = part->from; k < part->to; k++) {
        const uint8_t *bytes = c->data + c->offsets[k];
        uint32_t n = (uint32_t)(c->offsets[k + 1] - c->offsets[k]);
        uint32_t *record = part->records + at, *s = record + HEADER;
        record[0] = n;
        memcpy(record + 1, &c->counts[k], sizeof c->counts[k]);
        for (uint32_t i = 0; i < n; i++) s[i] = i == 0 ? bytes[0] : BYTE_SYMBOLS + bytes[i];
        for (uint32_t i = 0; i + 1 < n; i++) {
            size_t cell = (size_t)s[i] * ALPHABET + s[i + 1];
            part->count[cell] += c->counts[k];
            if (part->last[cell] != at) {
                part->last[cell] = at;
                part->holders[cell]++;
            }
        }
        at += HEADER + n;
    }
    return NULL;
}

/* List each of the part's chunks under the pairs it holds (in chunk order, each once). */
static void *part_list(void *arg) {
    Part *part = arg;
    memset(part->last, 0xff, CELLS * sizeof *part->last);
    uint32_t at = part->at;
    for (size_t k = part->from; k < part->to; k++) {
        const uint32_t *record = part->records + at, *s = record + HEADER;
        for (uint32_t i = 0; i + 1 < record[0]; i++) {
            size_t cell = (size_t)s[i] * ALPHABET + s[i + 1];
            if (part->last[cell] != at) {
                part->last[cell] = at;
                part->listed[part->fill[cell]++] = at;
            }
        }
        at += HEADER + record[0];
    }
    return NULL;
}

/* Run `work` on each part: the second on a thread of its own (or after the first, when no
   thread can be made). */
static void on_each(void *(*work)(void *), Part *parts, int n) {
    pthread_t second;
    int threaded = n == 2 && pthread_create(&second, NULL, work, &parts[1]) == 0;
    work(&parts[0]);
    if (threaded) pthread_join(second, NULL);
    else if (n == 2) work(&parts[1]);
}

/* The chunks as ids, every adjacent pair counted and queued with the chunks it occurs in. */
static const char *first_pairs(Training *t, uint32_t size) {
    const Chunks *c = t->chunks;
    Part parts[2] = {{0}};
    int n_parts = c->n >= TWO_PARTS ? 2 : 1;
    size_t *start = malloc(CELLS * sizeof *start);  /* each pair's part of the block */
    Block *block = NULL;
    const char *problem = OUT_OF_MEMORY;
    if (!start) goto done;
    /* The second part begins at the chunk where half the bytes are behind. */
    size_t middle = c->n, bytes = (size_t)(c->offsets[c->n] - c->offsets[0]);
    if (n_parts == 2)
        for (middle = 0; middle < c->n && (size_t)(c->offsets[middle] - c->offsets[0]) < bytes / 2;)
            middle++;
    for (int i = 0; i < n_parts; i++) {
        Part *part = &parts[i];
        part->chunks = c;
        part->records = t->records;
        part->from = i == 0 ? 0 : middle;
        part->to = i == 0 ? middle : c->n;
        part->at = (uint32_t)(c->offsets[part->from] - c->offsets[0] + HEADER * part->from);
        part->count = calloc(CELLS, sizeof *part->count);
        part->holders = calloc(CELLS, sizeof *part->holders);
        part->last = malloc(CELLS * sizeof *part->last);
        part->fill = malloc(CELLS * sizeof *part->fill);
        if (!part->count || !part->holders || !part->last || !part->fill) goto done;
        memset(part->last, 0xff, CELLS * sizeof *part->last);
    }
    on_each(part_count, parts, n_parts);
    size_t total = 0, distinct = 0;
    for (size_t cell = 0; cell < CELLS; cell++) {
        start[cell] = total;
        for (int i = 0; i < n_parts; i++) {
            parts[i].fill[cell] = total;
            total += parts[i].holders[cell];
        }
        distinct += total > start[cell];
    }
    if (!(block = block_new(total))) goto done;
    for (int i = 0; i < n_parts; i++) parts[i].listed = block->chunks;
    on_each(part_list, parts, n_parts);
    /* The pair table grows as merges make pairs (each growth a pass over all of it): start it
       where a training usually ends, 30 to 70 pairs a merge and not past a pair every 10
       bytes of distinct chunks (NTREX at 32,768: 0.7 to 1 million), up to 2^20 pairs (48 MB). */
    size_t expected = bytes / 10 < 64 * (size_t)size ? bytes / 10 : 64 * (size_t)size;
    if (expected > (size_t)1 << 20) expected = (size_t)1 << 20;
    if (pairs_init(&t->pairs, expected > 4 * distinct ? expected : 4 * distinct) < 0) goto done;
    for (size_t cell = 0; cell < CELLS; cell++) {
        int64_t count = parts[0].count[cell] + (n_parts == 2 ? parts[1].count[cell] : 0);
        size_t holders = (cell + 1 < CELLS ? start[cell + 1] : total) - start[cell];
        if (!holders) continue;
        uint32_t left = (uint32_t)(cell / ALPHABET), right = (uint32_t)(cell % ALPHABET);
        uint32_t pair = pairs_slot(&t->pairs, left, right);
        if (pair == NO_SLOT) goto done;
        t->pairs.at[pair].count = count;
        /* Every count is positive (a chunk's count is at least 1). */
        if (queue_push(&t->queue, count, (uint64_t)left << 32 | right, block->chunks + start[cell],
                       block, (uint32_t)holders) < 0) goto done;
    }
    problem = NULL;
done:
    block_release(block);  /* the queue's entries hold it now */
    free(start);
    for (int i = 0; i < 2; i++) {
        free(parts[i].count);
        free(parts[i].holders);
        free(parts[i].last);
        free(parts[i].fill);
    }
    return problem;
}

/* Room in every side for the ids 0..n-1. */
static int sides_fit(Training *t, size_t n) {
    if (n <= t->side_room) return 0;
    size_t room = t->side_room ? t->side_room : 1024;
    while (room < n) room *= 2;
    for (int kind = 0; kind < SIDES; kind++) {
        Side *side = &t->side[kind];
        int64_t *amount = realloc(side->amount, room * sizeof *amount);
        if (!amount) return -1;
        side->amount = amount;
        uint32_t *last = realloc(side->last, room * sizeof *last);
        if (!last) return -1;
        side->last = last;
        uint32_t *pair = realloc(side->pair, room * sizeof *pair);
        if (!pair) return -1;
        side->pair = pair;
        memset(amount + t->side_room, 0, (room - t->side_room) * sizeof *amount);
        memset(last + t->side_room, 0xff, (room - t->side_room) * sizeof *last);
    }
    t->side_room = room;
    return 0;
}

/* A change of `amount` on one side, at id, in `chunk` (noted once). */
static inline int change(Training *t, int kind, uint32_t id, int64_t amount, uint32_t chunk) {
    Side *side = &t->side[kind];
    if (side->amount[id] == 0 && list_add(&side->ids, id) < 0) return -1;
    side->amount[id] += amount;
    if (side->last[id] != chunk) {
        side->last[id] = chunk;
        uint32_t note = kind == AFTER ? id | AFTER_BIT : id;
        if (list_add(&t->note_id, note) < 0 || list_add(&t->note_chunk, chunk) < 0) return -1;
    }
    return 0;
}

/* Room for n pairs in `touched`'s tables. */
static int touched_fit(Training *t, size_t n) {
    if (n <= t->touched_room) return 0;
    size_t room = t->touched_room ? t->touched_room : 1024;
    while (room < n) room *= 2;
    uint32_t *last = realloc(t->last, room * sizeof *last);
    if (!last) return -1;
    t->last = last;
    uint32_t *noted = realloc(t->noted, room * sizeof *noted);
    if (!noted) return -1;
    t->noted = noted;
    size_t *begin = realloc(t->begin, room * sizeof *begin);
    if (!begin) return -1;
    t->begin = begin;
    size_t *fill = realloc(t->fill, room * sizeof *fill);
    if (!fill) return -1;
    t->fill = fill;
    t->touched_room = room;
    return 0;
}

/* The step's sums into the pair table; each gaining pair into `touched` (once). */
static int apply_sides(Training *t, uint32_t left, uint32_t right, uint32_t token) {
    Pairs *p = &t->pairs;
    size_t more = 2 * (t->side[BEFORE].ids.n + t->side[AFTER].ids.n);  /* pairs it may add */
    t->work += more;
    if (pairs_reserve(p, more) < 0
        || touched_fit(t, t->side[BEFORE].ids.n + t->side[AFTER].ids.n) < 0)
        return -1;
    for (int kind = 0; kind < SIDES; kind++) {
        Side *side = &t->side[kind];
        for (size_t i = 0; i < side->ids.n; i++) {
            uint32_t id = side->ids.at[i];
            if (i + LOOKAHEAD < side->ids.n) {  /* the lookups a few ids ahead, asked for now */
                uint32_t ahead = side->ids.at[i + LOOKAHEAD];
                pairs_prefetch(p, kind == BEFORE ? ahead : right, kind == BEFORE ? left : ahead);
                pairs_prefetch(p, kind == BEFORE ? ahead : token, kind == BEFORE ? token : ahead);
            }
            uint32_t lose = kind == BEFORE ? pairs_slot(p, id, left) : pairs_slot(p, right, id);
            uint32_t gain = kind == BEFORE ? pairs_slot(p, id, token) : pairs_slot(p, token, id);
            if (lose == NO_SLOT || gain == NO_SLOT) return -1;
            p->at[lose].count -= side->amount[id];
            Pair *at = &p->at[gain];
            at->count += side->amount[id];
            if (at->step != t->step) {  /* its first gain in this step */
                at->step = t->step;
                at->mark = (uint32_t)t->touched.n;
                t->last[at->mark] = NO_SLOT;
                t->noted[at->mark] = 0;
                if (list_add(&t->touched, gain) < 0) return -1;
            }
            side->pair[id] = at->mark;
            side->last[id] = NO_SLOT;
            side->amount[id] = 0;
        }
        side->ids.n = 0;
    }
    return 0;
}

/* The first place p >= at with s[p] == left and s[p + 1] == right (p + 1 < n), or n. Most of
   a training's time is spent looking for pairs in chunks (long ones: a script without spaces
   makes a chunk of a line); SSE2 compares four places at once. */
static inline uint32_t find_pair(const uint32_t *s, uint32_t at, uint32_t n, uint32_t left,
                                 uint32_t right) {
#ifdef __SSE2__
    __m128i lefts = _mm_set1_epi32((int)left), rights = _mm_set1_epi32((int)right);
    for (; at + 4 < n; at += 4) {  /* places at..at+3, their next symbols up to at+4 < n */
        __m128i here = _mm_loadu_si128((const __m128i *)(s + at));
        __m128i next = _mm_loadu_si128((const __m128i *)(s + at + 1));
        __m128i hit = _mm_and_si128(_mm_cmpeq_epi32(here, lefts), _mm_cmpeq_epi32(next, rights));
        int mask = _mm_movemask_ps(_mm_castsi128_ps(hit));
        if (mask) return at + (uint32_t)__builtin_ctz((unsigned)mask);
    }
#endif
    for (; at + 1 < n; at++)
        if (s[at] == left && s[at + 1] == right) return at;
    return n;
}

/* Merge (left, right) into `token` in the chunk whose record starts at k, as Hugging Face's
   Word::merge does: left to right, not overlapping, the symbol before being the output so far
   (a token merged just before counts as the token), the one after the next symbol not yet
   read. Between occurrences the symbols move down in one block. */
static int merge_chunk(Training *t, uint32_t k, uint32_t left, uint32_t right, uint32_t token) {
    uint32_t *record = t->records + k, *s = record + HEADER;
    uint32_t n = record[0];
    t->work += n;  /* every symbol is read (found, or moved down) */
    uint32_t read = find_pair(s, 0, n, left, right);  /* (a chunk visited may hold none now) */
    if (read == n) return 0;
    uint32_t out = read;
    int64_t amount = record_count(record);
    while (read < n) {
        /* an occurrence at read: (x, left) loses, (x, token) gains; (right, y) loses, (token,
           y) gains */
        if (out > 0 && change(t, BEFORE, s[out - 1], amount, k) < 0) return -1;
        if (read + 2 < n && change(t, AFTER, s[read + 2], amount, k) < 0) return -1;
        s[out++] = token;
        read += 2;
        uint32_t next = find_pair(s, read, n, left, right);
        memmove(s + out, s + read, (size_t)(next - read) * sizeof *s);
        out += next - read;
        read = next;
    }
    record[0] = out;
    return 0;
}

/* After a step: each pair that gained, if its count is positive, is pushed as a new entry
   holding the chunks it was noted in (in the order they were merged). A pair can be noted
   from two sides for one chunk ((token, token) is both (x, token) and (token, y)): the
   chunk's notes are together, so the pair's last chunk says whether it has it already. */
static int push_noted(Training *t) {
    Pairs *p = &t->pairs;
    size_t n = t->touched.n;
    t->work += n + t->note_id.n;
    for (size_t i = 0; i < t->note_id.n; i++) {  /* each note's pair, or NO_SLOT: a repeat */
        uint32_t id = t->note_id.at[i], chunk = t->note_chunk.at[i];
        uint32_t j = id & AFTER_BIT ? t->side[AFTER].pair[id & ~AFTER_BIT] : t->side[BEFORE].pair[id];
        if (t->last[j] == chunk) {
            t->note_id.at[i] = NO_SLOT;
        } else {
            t->last[j] = chunk;
            t->noted[j]++;
            t->note_id.at[i] = j;
        }
    }
    size_t total = 0;  /* chunks noted for the pairs that will be pushed */
    for (size_t j = 0; j < n; j++) {
        int pushed = p->at[t->touched.at[j]].count > 0;
        t->begin[j] = pushed ? total : NOT_PUSHED;
        t->fill[j] = total;
        if (pushed) total += t->noted[j];
    }
    if (total > 0) {
        Block *block = block_new(total);
        if (!block) return -1;
        for (size_t i = 0; i < t->note_id.n; i++) {
            uint32_t j = t->note_id.at[i];
            if (j != NO_SLOT && t->begin[j] != NOT_PUSHED)
                block->chunks[t->fill[j]++] = t->note_chunk.at[i];
        }
        int failed = 0;
        for (size_t j = 0; j < n && !failed; j++) {
            if (t->begin[j] == NOT_PUSHED) continue;
            const Pair *at = &p->at[t->touched.at[j]];
            failed = queue_push(&t->queue, at->count, at->key, block->chunks + t->begin[j], block,
                                (uint32_t)(t->fill[j] - t->begin[j])) < 0;
        }
        block_release(block);  /* the entries' now */
        if (failed) return -1;
    }
    t->touched.n = t->note_id.n = t->note_chunk.n = 0;
    return 0;
}

/* The string a merge makes: the left's, then the right's without its leading "##", into a
   buffer of the caller's (grown as needed); its length, or -1 when out of memory. */
static int64_t joined(const Vocab *v, uint32_t left, uint32_t right, uint8_t **buffer,
                      size_t *room) {
    const uint8_t *a = v->bytes + v->start[left], *b = v->bytes + v->start[right];
    size_t na = v->length[left], nb = v->length[right];
    if (nb >= 2 && b[0] == '#' && b[1] == '#') {
        b += 2;
        nb -= 2;
    }
    if (na + nb > UINT32_MAX) return -1;
    if (na + nb > *room) {
        size_t fresh = 2 * (na + nb);
        uint8_t *grown = realloc(*buffer, fresh);
        if (!grown) return -1;
        *buffer = grown;
        *room = fresh;
    }
    memcpy(*buffer, a, na);
    memcpy(*buffer + na, b, nb);
    return (int64_t)(na + nb);
}

const char *train(const Chunks *chunks, uint32_t size, size_t let_in, const Interrupt *interrupt,
                  Vocab *vocab, uint64_t *work) {
    Training t = {0};
    int failed = 0;  /* the queue could not let entries into its heap */
    t.chunks = chunks;
    t.vocab = vocab;
    uint8_t *piece = NULL;
    size_t piece_room = 0;
    const char *problem = OUT_OF_MEMORY;
    size_t n_symbols = chunks->n ? (size_t)(chunks->offsets[chunks->n] - chunks->offsets[0]) : 0;
    size_t words = n_symbols + HEADER * chunks->n;  /* the records' */
    if (queue_init(&t.queue, let_in) < 0 || vocab_init(vocab) < 0 || byte_symbols(vocab) < 0)
        goto done;
    if (words >= NO_SLOT) {  /* a record's start is a uint32, and NO_SLOT means none */
        problem = "the chunks are too many or too long: their bytes and 3 a chunk must stay "
                  "under 2^32";
        goto done;
    }
    t.records = malloc((words ? words : 1) * sizeof *t.records);
    if (!t.records) goto done;
    if ((problem = first_pairs(&t, size))) goto done;
    t.work += n_symbols + chunks->n;
    problem = OUT_OF_MEMORY;
    const Item *top;
    while (vocab->n < size && (top = queue_top(&t.queue, &failed))) {
        t.work++;  /* each entry the queue gives (its heap's log: a constant's worth below 2^32) */
        uint32_t left = (uint32_t)(top->key >> 32), right = (uint32_t)top->key;
        uint32_t pair = pairs_slot(&t.pairs, left, right);  /* there: it was counted */
        if (pair == NO_SLOT) goto done;
        int64_t now = t.pairs.at[pair].count;
        if (top->count != now) {  /* stale: back with today's count, as a new push */
            if (queue_renew_top(&t.queue, now) < 0) goto done;
            continue;
        }
        if (now < 1) break;
        uint64_t key;
        uint32_t *merge_in, n_merge_in;
        Block *block;
        queue_take(&t.queue, &key, &merge_in, &block, &n_merge_in);
        int64_t length = joined(vocab, left, right, &piece, &piece_room);
        if (length < 0) {
            block_release(block);
            goto done;
        }
        uint64_t hash = hash_bytes(piece, (size_t)length);
        uint32_t token = vocab_find(vocab, piece, (uint32_t)length, hash);
        if (token == NO_SLOT) {  /* else a collision: the string's id again, no new entry */
            token = vocab->n;
            if (vocab_add(vocab, piece, (uint32_t)length, hash) < 0) {
                block_release(block);
                goto done;
            }
        }
        t.step++;
        if (sides_fit(&t, vocab->n) < 0) {
            block_release(block);
            goto done;
        }
        for (uint32_t i = 0; i < n_merge_in; i++) {
            /* The chunks are all over memory: ask for one a few visits ahead, so that its
               record is there when its turn comes (each visit is short). */
            if (i + PREFETCH < n_merge_in) {  /* its first two lines: records are long */
                __builtin_prefetch(t.records + merge_in[i + PREFETCH]);
                __builtin_prefetch(t.records + merge_in[i + PREFETCH] + 16);
            }
            if (merge_chunk(&t, merge_in[i], left, right, token) < 0) {
                block_release(block);
                goto done;
            }
        }
        block_release(block);
        if (apply_sides(&t, left, right, token) < 0 || push_noted(&t) < 0) goto done;
        if (interrupt->stop(interrupt->context)) {
            problem = INTERRUPTED;
            goto done;
        }
    }
    if (failed) goto done;
    problem = NULL;
done:
    *work += t.work;
    free(piece);
    free(t.records);
    for (int kind = 0; kind < SIDES; kind++) {
        free(t.side[kind].amount);
        free(t.side[kind].last);
        free(t.side[kind].pair);
        free(t.side[kind].ids.at);
    }
    free(t.touched.at);
    free(t.note_id.at);
    free(t.note_chunk.at);
    free(t.last);
    free(t.noted);
    free(t.begin);
    free(t.fill);
    pairs_free(&t.pairs);
    queue_free(&t.queue);
    return problem;
}
