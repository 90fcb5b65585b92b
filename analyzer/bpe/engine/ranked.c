/*
 * Ranked BPE: production tokenizers counted as their own libraries count them
 * (analyzer/bpe/ranked.py is the definition, line for line; tests/test_bpe_ranked.py holds the
 * engine to it, and to the libraries themselves).
 *
 * Inside a chunk, the libraries merge one pair at a time: the adjacent pair of lowest rank,
 * the leftmost among equals. Here, as in Hugging Face's BPE model, the pairs that could merge
 * wait in a heap of (rank, position); one popped is merged only if its left symbol is still
 * there and pairs with its right neighbour into the same id (a neighbour may have merged
 * since it was pushed). A merge pushes the pairs it makes with its two neighbours. tiktoken's
 * ranks of byte strings come here as pairs too (ranked_build's `derive`: every way of cutting a
 * token into two tokens is a pair of that token's rank), so one loop counts both.
 *
 * Counting texts (ranked_count): each text is cut by the tokenizer's pre-tokenizer steps
 * (split.c), and each chunk is looked up in a table of the chunks this thread has met: a
 * chunk is encoded once, the first time, and its token count kept with what the words-split
 * metric needs of it (ChunkWords). A text's count is the sum of its chunks' counts.
 */

#define _DEFAULT_SOURCE /* POSIX threads, with -std=c11 */

#include "engine.h"

#include <stdlib.h>
#include <string.h>

#if ENGINE_THREADS
#include <pthread.h>
#endif

/* ---------------------------------------------------------------------------------------- */
/* The model                                                                                 */

/* A hash of bytes, the token table's key: eight bytes at a time (the tail zero-filled), each
   word multiplied in, then mixed. */
static uint64_t bytes_hash(const uint8_t *data, size_t length) {
    uint64_t h = 0x9E3779B97F4A7C15ull ^ length;
    size_t i = 0;
    for (; i + 8 <= length; i += 8) {
        uint64_t word;
        memcpy(&word, data + i, 8);
        h = (h ^ word) * 0xFF51AFD7ED558CCDull;
        h ^= h >> 29;
    }
    if (i < length) {
        uint64_t word = 0;
        memcpy(&word, data + i, length - i);
        h = (h ^ word) * 0xFF51AFD7ED558CCDull;
    }
    return hash_key(h);
}

static size_t table_size(size_t n) {
    size_t slots = 1024;
    while (slots < 2 * n + 2) slots *= 2;
    return slots;
}

/* A filter's bit for a hash (bits the tables' slots do not use). */
static inline int filter_has(const uint64_t *filter, uint64_t hash) {
    uint32_t bit = (uint32_t)(hash >> 40) & (FILTER_BITS - 1);
    return (filter[bit >> 6] >> (bit & 63)) & 1;
}

static inline void filter_add(uint64_t *filter, uint64_t hash) {
    uint32_t bit = (uint32_t)(hash >> 40) & (FILTER_BITS - 1);
    filter[bit >> 6] |= (uint64_t)1 << (bit & 63);
}

int32_t ranked_token(const RankedModel *m, const uint8_t *data, size_t length) {
    uint64_t hash = bytes_hash(data, length);
    if (!filter_has(m->token_filter, hash)) return -1;
    uint32_t check = (uint32_t)(hash >> 32);
    for (size_t s = hash & m->token_mask;; s = (s + 1) & m->token_mask) {
        TokenSlot slot = m->token_slots[s];
        if (!slot.id) return -1;
        if (slot.hash != check) continue;
        int32_t id = (int32_t)(slot.id - 1);
        size_t start = (size_t)m->piece_start[id], end = (size_t)m->piece_start[id + 1];
        if (end - start == length && memcmp(m->pieces + start, data, length) == 0) return id;
    }
}

/* The slot of the pair `key` (its hash given): the merge's, or the empty one it would take. */
static inline MergeSlot *merge_slot(const RankedModel *m, Key key, uint64_t hash) {
    for (size_t s = hash & m->merge_mask;; s = (s + 1) & m->merge_mask) {
        MergeSlot *slot = &m->merge_slots[s];
        if (slot->key == key || slot->key == EMPTY_PAIR) return slot;
    }
}

static const MergeSlot NO_MERGE = {EMPTY_PAIR, 0, -1};

/* The merge of (left, right): its rank and what it makes; its key EMPTY_PAIR when none. */
static inline const MergeSlot *merge_find(const RankedModel *m, int32_t left, int32_t right) {
    Key key = pair_key(left, right);
    uint64_t hash = hash_key(key);
    if (!filter_has(m->merge_filter, hash)) return &NO_MERGE;
    return merge_slot(m, key, hash);
}

/* Add a merge; a pair given twice keeps its last (Hugging Face's map is filled in order). */
static void merge_add(RankedModel *m, int32_t left, int32_t right, uint32_t rank, int32_t made) {
    Key key = pair_key(left, right);
    MergeSlot *slot = merge_slot(m, key, hash_key(key));
    if (slot->key == EMPTY_PAIR) m->n_merges++;
    *slot = (MergeSlot){key, rank, made};
}

const char *ranked_build(RankedModel *m, const uint8_t *pieces, const int64_t *starts,
                         size_t n_ids, const int32_t *merges, size_t n_merges, int derive,
                         const int32_t *byte_ids, int characters, int whole_first) {
    memset(m, 0, sizeof *m);
    m->n_ids = n_ids;
    m->characters = characters;
    m->whole_first = whole_first;
    for (int b = 0; b < 256; b++) {
        if (byte_ids[b] < 0 || (size_t)byte_ids[b] >= n_ids) return "a byte has no token";
        m->byte_ids[b] = byte_ids[b];
    }
    size_t total = (size_t)starts[n_ids];
    m->byte_pairs = malloc(65536 * sizeof *m->byte_pairs);
    m->pieces = malloc(total ? total : 1);
    m->piece_start = malloc((n_ids + 1) * sizeof *m->piece_start);
    if (!m->pieces || !m->piece_start || !m->byte_pairs) return "out of memory";
    memcpy(m->pieces, pieces, total);
    for (size_t i = 0; i <= n_ids; i++) {
        if (starts[i] < 0 || (size_t)starts[i] > total || (i && starts[i] < starts[i - 1]))
            return "piece offsets out of order";
        m->piece_start[i] = (uint64_t)starts[i];
    }
    /* Every token's bytes, found by hash; the first id of bytes held twice keeps them. An
       empty piece (an id with no bytes: a special token) is never looked up. */
    size_t n_slots = table_size(n_ids);
    m->token_slots = calloc(n_slots, sizeof *m->token_slots);
    m->token_filter = calloc(FILTER_BITS / 64, sizeof *m->token_filter);
    m->merge_filter = calloc(FILTER_BITS / 64, sizeof *m->merge_filter);
    if (!m->token_slots || !m->token_filter || !m->merge_filter) return "out of memory";
    m->token_mask = n_slots - 1;
    for (size_t id = 0; id < n_ids; id++) {
        size_t length = (size_t)(starts[id + 1] - starts[id]);
        if (!length || ranked_token(m, pieces + starts[id], length) >= 0) continue;
        uint64_t hash = bytes_hash(pieces + starts[id], length);
        size_t s = hash & m->token_mask;
        while (m->token_slots[s].id) s = (s + 1) & m->token_mask;
        m->token_slots[s] = (TokenSlot){(uint32_t)id + 1, (uint32_t)(hash >> 32)};
        filter_add(m->token_filter, hash);
    }
    /* The merges: given, or derived from the tokens' bytes (tiktoken's ranks: each token of
       two or more bytes is made by every pair of tokens that spells it, at its own id). */
    size_t capacity = n_merges;
    if (derive) {
        capacity = 0;
        for (size_t id = 0; id < n_ids; id++) {
            size_t length = (size_t)(starts[id + 1] - starts[id]);
            if (length > 1) capacity += length - 1;
        }
    }
    n_slots = table_size(capacity);
    m->merge_slots = malloc(n_slots * sizeof *m->merge_slots);
    if (!m->merge_slots) return "out of memory";
    for (size_t s = 0; s < n_slots; s++) m->merge_slots[s].key = EMPTY_PAIR;
    m->merge_mask = n_slots - 1;
    if (derive) {
        for (size_t id = 0; id < n_ids; id++) {
            const uint8_t *token = pieces + starts[id];
            size_t length = (size_t)(starts[id + 1] - starts[id]);
            if (ranked_token(m, token, length) != (int32_t)id) continue; /* bytes held twice */
            for (size_t cut = 1; cut < length; cut++) {
                int32_t left = ranked_token(m, token, cut);
                int32_t right = ranked_token(m, token + cut, length - cut);
                if (left >= 0 && right >= 0) merge_add(m, left, right, (uint32_t)id, (int32_t)id);
            }
        }
    } else {
        for (size_t k = 0; k < n_merges; k++) {
            const int32_t *merge = merges + 4 * k; /* left, right, rank, made */
            for (int j = 0; j < 4; j++)
                if (merge[j] < 0 || (j != 2 && (size_t)merge[j] >= n_ids))
                    return "a merge names an id the vocabulary does not have";
            merge_add(m, merge[0], merge[1], (uint32_t)merge[2], merge[3]);
        }
    }
    /* The table made again at the size its merges need (derived, it was sized for every cut of
       every token): a lookup is a cache miss in it, and fewer pages miss fewer. */
    if (table_size(m->n_merges) < n_slots) {
        MergeSlot *old = m->merge_slots;
        size_t old_slots = n_slots;
        n_slots = table_size(m->n_merges);
        m->merge_slots = malloc(n_slots * sizeof *m->merge_slots);
        if (!m->merge_slots) {
            m->merge_slots = old;
            return "out of memory";
        }
        for (size_t k = 0; k < n_slots; k++) m->merge_slots[k].key = EMPTY_PAIR;
        m->merge_mask = n_slots - 1;
        m->n_merges = 0;
        for (size_t k = 0; k < old_slots; k++)
            if (old[k].key != EMPTY_PAIR)
                merge_add(m, key_left(old[k].key), key_right(old[k].key), old[k].rank, old[k].made);
        free(old);
    }
    /* Every merge's bit in the filter, now that the table is whole. */
    for (size_t k = 0; k <= m->merge_mask; k++)
        if (m->merge_slots[k].key != EMPTY_PAIR) filter_add(m->merge_filter, hash_key(m->merge_slots[k].key));
    /* The merges of two bytes, in a table of their own (a byte-level chunk's first pairs are
       all bytes: no hashing, a table that stays in cache). */
    for (int a = 0; a < 256; a++)
        for (int b = 0; b < 256; b++) {
            const MergeSlot *found = merge_find(m, m->byte_ids[a], m->byte_ids[b]);
            m->byte_pairs[a << 8 | b] = found->key == EMPTY_PAIR
                ? (BytePair){UINT32_MAX, -1} : (BytePair){found->rank, found->made};
        }
    return NULL;
}

void ranked_free(RankedModel *m) {
    free(m->byte_pairs);
    free(m->token_filter);
    free(m->merge_filter);
    free(m->pieces);
    free(m->piece_start);
    free(m->token_slots);
    free(m->merge_slots);
    memset(m, 0, sizeof *m);
}

/* ---------------------------------------------------------------------------------------- */
/* Encoding one chunk                                                                        */

/* A candidate: (rank, position) as one key, lowest first; the id it makes, and the pair it
   was found for (still there when popped, it is still the merge: no lookup to check it). */
typedef struct {
    uint64_t key;
    int32_t made, left, right;
} Candidate64;

static void candidates_push(Candidate64 *heap, size_t *n, Candidate64 item) {
    size_t i = (*n)++;
    while (i) {
        size_t parent = (i - 1) / 2;
        if (heap[parent].key <= item.key) break;
        heap[i] = heap[parent];
        i = parent;
    }
    heap[i] = item;
}

static Candidate64 candidates_pop(Candidate64 *heap, size_t *n) {
    Candidate64 top = heap[0], last = heap[--*n];
    size_t i = 0;
    for (;;) {
        size_t child = 2 * i + 1;
        if (child >= *n) break;
        if (child + 1 < *n && heap[child + 1].key < heap[child].key) child++;
        if (last.key <= heap[child].key) break;
        heap[i] = heap[child];
        i = child;
    }
    if (*n) heap[i] = last;
    return top;
}

/* Room for a chunk of `length` bytes (a symbol per byte at most, a candidate per pair and two
   per merge). 0, or -1 when memory ran out. */
int ranked_scratch_reserve(RankedScratch *s, size_t length) {
    if (length + 1 <= s->capacity) return 0;
    size_t capacity = 64;
    while (capacity < length + 1) capacity *= 2;
    int32_t *ids = realloc(s->ids, capacity * sizeof *ids);
    if (ids) s->ids = ids;
    int32_t *next = realloc(s->next, capacity * sizeof *next);
    if (next) s->next = next;
    int32_t *prev = realloc(s->prev, capacity * sizeof *prev);
    if (prev) s->prev = prev;
    uint32_t *size = realloc(s->size, capacity * sizeof *size);
    if (size) s->size = size;
    Candidate64 *heap = realloc(s->heap, 3 * capacity * sizeof *heap);
    if (heap) s->heap = heap;
    if (!ids || !next || !prev || !size || !heap) return -1;
    s->capacity = capacity;
    return 0;
}

void ranked_scratch_free(RankedScratch *s) {
    free(s->ids);
    free(s->next);
    free(s->prev);
    free(s->size);
    free(s->heap);
    memset(s, 0, sizeof *s);
}

/* The bytes of the UTF-8 character that starts with `lead`. */
static inline size_t utf8_width(uint8_t lead) {
    return lead < 0x80 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4;
}

/* A chunk of up to SHORT_SYMBOLS symbols (most words) is merged as tiktoken merges: each
   pair's rank in an array, the lowest found by a scan (the leftmost among equals, so the same
   merge as the heap's), the two symbols joined in place, and the two pairs beside the join
   looked up again. For so few symbols a scan and a move cost less than the heap's pushes,
   pops and stale candidates; the result is the same rule's, which the tests hold to the
   reference on chunks of every length. */
#define SHORT_SYMBOLS 48

/* The merge of symbols i and i + 1: its rank (UINT32_MAX when none) and what it makes. */
static inline void short_pair(const RankedModel *m, const int32_t *ids, size_t i, uint32_t *rank,
                              int32_t *made) {
    const MergeSlot *found = merge_find(m, ids[i], ids[i + 1]);
    rank[i] = found->key == EMPTY_PAIR ? UINT32_MAX : found->rank;
    made[i] = found->made;
}

static size_t encode_short(const RankedModel *m, const uint8_t *data, int32_t *ids,
                           uint32_t *size, size_t n, int32_t *out, uint32_t *token_starts) {
    uint32_t rank[SHORT_SYMBOLS];
    int32_t made[SHORT_SYMBOLS];
    for (size_t i = 0; i + 1 < n; i++) {
        if (m->characters) {
            short_pair(m, ids, i, rank, made);
        } else { /* every symbol a byte: the table of byte pairs */
            BytePair found = m->byte_pairs[data[i] << 8 | data[i + 1]];
            rank[i] = found.made >= 0 ? found.rank : UINT32_MAX;
            made[i] = found.made;
        }
    }
    while (n > 1) {
        uint32_t best = UINT32_MAX;
        size_t at = 0;
        for (size_t i = 0; i + 1 < n; i++)
            if (rank[i] < best) best = rank[i], at = i;
        if (best == UINT32_MAX) break;
        ids[at] = made[at];
        size[at] += size[at + 1];
        /* symbols after the join move down one; so do the pairs after the two it changed */
        memmove(ids + at + 1, ids + at + 2, (n - at - 2) * sizeof *ids);
        memmove(size + at + 1, size + at + 2, (n - at - 2) * sizeof *size);
        if (n >= at + 3) {
            memmove(rank + at + 1, rank + at + 2, (n - at - 3) * sizeof *rank);
            memmove(made + at + 1, made + at + 2, (n - at - 3) * sizeof *made);
        }
        n--;
        if (at > 0) short_pair(m, ids, at - 1, rank, made);
        if (at + 1 < n) short_pair(m, ids, at, rank, made);
    }
    uint32_t start = 0;
    for (size_t i = 0; i < n; i++) {
        if (out) out[i] = ids[i];
        if (token_starts) token_starts[i] = start;
        start += size[i];
    }
    return n;
}

size_t ranked_encode(const RankedModel *m, const uint8_t *data, size_t length,
                     RankedScratch *s, int32_t *out, uint32_t *token_starts) {
    if (!length) return 0;
    if (m->whole_first) {
        int32_t whole = ranked_token(m, data, length);
        if (whole >= 0) {
            if (out) out[0] = whole;
            if (token_starts) token_starts[0] = 0;
            return 1;
        }
    }
    /* The symbols: one per byte, or one per character that is a token (else its bytes' ids,
       the byte fallback). `size` is each symbol's bytes; a merged-away symbol has size 0. */
    size_t n = 0;
    for (size_t i = 0; i < length;) {
        size_t width = m->characters ? utf8_width(data[i]) : 1;
        if (i + width > length) width = length - i;
        int32_t token = width > 1 || m->characters ? ranked_token(m, data + i, width) : -1;
        if (token >= 0) {
            s->ids[n] = token;
            s->size[n++] = (uint32_t)width;
        } else {
            for (size_t b = i; b < i + width; b++) {
                s->ids[n] = m->byte_ids[data[b]];
                s->size[n++] = 1;
            }
        }
        i += width;
    }
    if (n <= SHORT_SYMBOLS) return encode_short(m, data, s->ids, s->size, n, out, token_starts);
    for (size_t i = 0; i < n; i++) {
        s->prev[i] = (int32_t)i - 1;
        s->next[i] = i + 1 < n ? (int32_t)i + 1 : -1;
    }
    size_t queued = 0;
    if (!m->characters) { /* every symbol a byte: its pairs from the table of byte pairs */
        for (size_t i = 0; i + 1 < n; i++) {
            BytePair found = m->byte_pairs[data[i] << 8 | data[i + 1]];
            if (found.made >= 0)
                candidates_push(s->heap, &queued, (Candidate64){(uint64_t)found.rank << 32 | i,
                                found.made, s->ids[i], s->ids[i + 1]});
        }
    } else {
        for (size_t i = 0; i + 1 < n; i++) {
            const MergeSlot *found = merge_find(m, s->ids[i], s->ids[i + 1]);
            if (found->key != EMPTY_PAIR)
                candidates_push(s->heap, &queued, (Candidate64){(uint64_t)found->rank << 32 | i,
                                found->made, s->ids[i], s->ids[i + 1]});
        }
    }
    while (queued) {
        Candidate64 top = candidates_pop(s->heap, &queued);
        size_t i = (size_t)(top.key & 0xFFFFFFFFu);
        if (!s->size[i] || s->next[i] < 0) continue;
        size_t right = (size_t)s->next[i];
        if (s->ids[i] != top.left || s->ids[right] != top.right) continue; /* stale */
        const MergeSlot *found;
        s->ids[i] = top.made;
        s->size[i] += s->size[right];
        s->size[right] = 0;
        s->next[i] = s->next[right];
        if (s->next[i] >= 0) s->prev[s->next[i]] = (int32_t)i;
        if (s->prev[i] >= 0) {
            size_t left = (size_t)s->prev[i];
            found = merge_find(m, s->ids[left], top.made);
            if (found->key != EMPTY_PAIR)
                candidates_push(s->heap, &queued, (Candidate64){(uint64_t)found->rank << 32 | left,
                                                                found->made, s->ids[left], top.made});
        }
        if (s->next[i] >= 0) {
            found = merge_find(m, top.made, s->ids[s->next[i]]);
            if (found->key != EMPTY_PAIR)
                candidates_push(s->heap, &queued, (Candidate64){(uint64_t)found->rank << 32 | i,
                                                                found->made, top.made,
                                                                s->ids[s->next[i]]});
        }
    }
    size_t tokens = 0, at = 0;
    for (size_t i = 0; i < n; i++) {
        if (!s->size[i]) continue;
        if (out) out[tokens] = s->ids[i];
        if (token_starts) token_starts[tokens] = (uint32_t)at;
        tokens++;
        at += s->size[i];
    }
    return tokens;
}

/* ---------------------------------------------------------------------------------------- */
/* What the words-split metric needs of a chunk                                              */

/* A word is a run of characters between whitespace (Python's str.isspace, as the corpus
   counts words); it is split when a token starts strictly inside it. A text's chunks are
   met in order, and of each only this is kept: whether it starts and ends with whitespace,
   whether it is all one run of non-space (then the word goes on into the next chunk), whether
   a token starts inside its first and inside its last run, and how many of the words wholly
   inside it are split. */
enum { FIRST_SPACE = 1, LAST_SPACE = 2, ALL_WORD = 4, LEAD_CUT = 8, TAIL_CUT = 16 };

typedef struct {
    uint32_t flags;
    uint32_t inner_cut; /* words with whitespace on both sides, inside the chunk, split */
} ChunkWords;

static inline int is_word_space(const uint8_t *spaces, uint32_t c) {
    return c < WORD_SPACE_LIMIT && (spaces[c >> 3] >> (c & 7)) & 1;
}

/* The chunk's ChunkWords from its characters (`chars`, their byte offsets `offsets`, n + 1 of
   them) and its tokens' starts in bytes. `run` is scratch: a character's run of non-space
   (-1 for whitespace). */
static ChunkWords chunk_words(const uint8_t *spaces, const uint32_t *chars, const uint32_t *offsets,
                              size_t n, const uint32_t *token_starts, size_t tokens, int32_t *run,
                              uint8_t *cut) {
    int32_t runs = 0;
    for (size_t k = 0; k < n; k++) {
        if (is_word_space(spaces, chars[k])) run[k] = -1;
        else run[k] = k && run[k - 1] >= 0 ? run[k - 1] : runs++;
    }
    memset(cut, 0, (size_t)runs);
    size_t k = 0; /* the character holding the byte at the token start */
    for (size_t t = 1; t < tokens; t++) {
        uint32_t at = token_starts[t];
        while (offsets[k + 1] <= at) k++;
        if (offsets[k] == at) { /* between characters k - 1 and k */
            if (run[k] >= 0 && run[k - 1] == run[k]) cut[run[k]] = 1;
        } else if (run[k] >= 0) { /* inside character k */
            cut[run[k]] = 1;
        }
    }
    ChunkWords words = {0, 0};
    if (run[0] < 0) words.flags |= FIRST_SPACE;
    if (run[n - 1] < 0) words.flags |= LAST_SPACE;
    if (runs == 1 && run[0] >= 0 && run[n - 1] >= 0) words.flags |= ALL_WORD;
    int32_t lead = run[0], tail = run[n - 1];
    if (lead >= 0 && cut[lead]) words.flags |= LEAD_CUT;
    if (tail >= 0 && cut[tail]) words.flags |= TAIL_CUT;
    for (int32_t r = 0; r < runs; r++)
        if (cut[r] && r != lead && r != tail) words.inner_cut++;
    return words;
}

/* A text's split words so far, as its chunks come (see ChunkWords). */
typedef struct {
    int in_word, cut;
    int64_t split;
} WordState;

static inline void words_add(WordState *w, ChunkWords c) {
    if (!(c.flags & FIRST_SPACE)) {
        if (w->in_word) w->cut = 1; /* the chunk starts a token inside the word */
        else w->cut = 0, w->in_word = 1;
        if (c.flags & LEAD_CUT) w->cut = 1;
        if (c.flags & ALL_WORD) return;
        w->split += w->cut;
        w->in_word = 0;
    } else if (w->in_word) {
        w->split += w->cut;
        w->in_word = 0;
    }
    w->split += c.inner_cut;
    if (!(c.flags & LAST_SPACE)) {
        w->in_word = 1;
        w->cut = (c.flags & TAIL_CUT) != 0;
    }
}

static inline int64_t words_end(WordState *w) { return w->split + (w->in_word ? w->cut : 0); }

int64_t words_split_by_ids(const SplitText *text, const int32_t *ids, size_t n,
                           const uint8_t *pieces, const int64_t *starts, size_t n_ids,
                           const uint8_t *spaces, uint8_t *buffer, uint8_t *text_bytes,
                           uint8_t *marks) {
    size_t spelled = 0;
    for (size_t t = 0; t < n; t++) { /* the tokens' bytes end to end, each start marked */
        if (ids[t] < 0 || (size_t)ids[t] >= n_ids) return -2;
        size_t from = (size_t)starts[ids[t]], to = (size_t)starts[ids[t] + 1];
        marks[spelled >> 3] |= (uint8_t)(1u << (spelled & 7));
        memcpy(buffer + spelled, pieces + from, to - from);
        spelled += to - from;
    }
    size_t length = utf8_of(text, 0, text->length, text_bytes);
    if (length == SIZE_MAX) return -1;
    size_t shift = 0; /* SentencePiece's dummy prefix: a space before the text */
    if (spelled == length + 1 && buffer[0] == ' ' && memcmp(buffer + 1, text_bytes, length) == 0)
        shift = 1;
    else if (spelled != length || memcmp(buffer, text_bytes, length) != 0)
        return -1;
    int64_t split = 0;
    int in_word = 0, cut = 0;
    size_t at = shift; /* the byte where character i starts, in the spelled bytes */
    for (size_t i = 0; i < text->length; i++) {
        uint32_t c = text->kind == 1 ? ((const uint8_t *)text->data)[i]
                   : text->kind == 2 ? ((const uint16_t *)text->data)[i]
                                     : ((const uint32_t *)text->data)[i];
        size_t width = c < 0x80 ? 1 : c < 0x800 ? 2 : c < 0x10000 ? 3 : 4;
        if (is_word_space(spaces, c)) {
            split += in_word && cut;
            in_word = 0;
        } else {
            /* a token starting at this character's first byte cuts the word it continues; one
               starting inside it, the word it is in */
            if (in_word && (marks[at >> 3] >> (at & 7)) & 1) cut = 1;
            if (!in_word) in_word = 1, cut = 0;
            for (size_t b = at + 1; b < at + width; b++)
                if ((marks[b >> 3] >> (b & 7)) & 1) cut = 1;
        }
        at += width;
    }
    return split + (in_word && cut);
}

/* ---------------------------------------------------------------------------------------- */
/* Counting texts                                                                            */

/* A chunk met before, in a thread's table: where it first occurred, its tokens and words. */
typedef struct {
    uint64_t hash;
    uint32_t text, start, length, tokens;
    ChunkWords words;
} SeenChunk;

/* The chunks a thread keeps; past MAX_SEEN it starts again (a cache: counts are the same). */
#define MAX_SEEN (1u << 18)
/* How many chunks ahead of the one looked up its slot, its entry and its first occurrence's
   text are fetched. */
#define SEEN_SLOT_AHEAD 16
#define SEEN_ENTRY_AHEAD 8
#define SEEN_TEXT_AHEAD 4

typedef struct {
    const RankedModel *model;
    const SplitStep *steps;
    int n_steps;
    const SplitTables *tables;
    const uint8_t *spaces;
    const SplitText *texts;
    size_t first, last;
    int64_t *counts, *split_words;
    SeenChunk *seen;
    uint32_t *slots;
    size_t n_seen, seen_capacity, mask;
    Status status;
    int surrogate; /* a text held a lone surrogate */
} CountPart;

static int seen_reset(CountPart *p) {
    size_t n_slots = 1u << 16;
    free(p->slots);
    p->slots = calloc(n_slots, sizeof *p->slots);
    p->mask = n_slots - 1;
    p->n_seen = 0;
    return p->slots ? 0 : -1;
}

static int seen_grow(CountPart *p) {
    size_t n_slots = 2 * (p->mask + 1);
    uint32_t *slots = calloc(n_slots, sizeof *slots);
    if (!slots) return -1;
    for (size_t id = 0; id < p->n_seen; id++) {
        size_t s = p->seen[id].hash & (n_slots - 1);
        while (slots[s]) s = (s + 1) & (n_slots - 1);
        slots[s] = (uint32_t)id + 1;
    }
    free(p->slots);
    p->slots = slots;
    p->mask = n_slots - 1;
    return 0;
}

/* Encode the chunk texts[k][start, start + length): its token count and words. */
static SeenChunk encode_chunk(CountPart *p, RankedScratch *scratch, size_t k, size_t start,
                              size_t length, uint64_t hash, uint8_t **utf8, size_t *utf8_capacity,
                              uint32_t **chars, size_t *chars_capacity) {
    const SplitText *t = &p->texts[k];
    SeenChunk seen = {hash, (uint32_t)k, (uint32_t)start, (uint32_t)length, 0, {0, 0}};
    /* up to 4 bytes a character; characters, their offsets, runs and starts: length + 1 each */
    *utf8 = grow(&p->status, *utf8, utf8_capacity, 4 * length + 1, 1);
    *chars = grow(&p->status, *chars, chars_capacity, 5 * (length + 1) + 4 * length + 1,
                  sizeof **chars);
    if (p->status.failed || ranked_scratch_reserve(scratch, 4 * length)) {
        p->status.failed = 1;
        return seen;
    }
    uint32_t *codes = *chars, *offsets = codes + length + 1, *token_starts = offsets + length + 1;
    int32_t *run = (int32_t *)(token_starts + 4 * length + 1);
    uint8_t *cut = (uint8_t *)(run + length + 1);
    size_t bytes = utf8_of(t, start, length, *utf8);
    if (bytes == SIZE_MAX) { /* a lone surrogate: no UTF-8, no tokens */
        p->surrogate = 1;
        p->status.failed = 1;
        return seen;
    }
    size_t at = 0;
    for (size_t i = 0; i < length; i++) {
        codes[i] = t->kind == 1 ? ((const uint8_t *)t->data)[start + i]
                 : t->kind == 2 ? ((const uint16_t *)t->data)[start + i]
                                : ((const uint32_t *)t->data)[start + i];
        offsets[i] = (uint32_t)at;
        at += codes[i] < 0x80 ? 1 : codes[i] < 0x800 ? 2 : codes[i] < 0x10000 ? 3 : 4;
    }
    offsets[length] = (uint32_t)bytes;
    size_t tokens = ranked_encode(p->model, *utf8, bytes, scratch, NULL, token_starts);
    seen.tokens = (uint32_t)tokens;
    seen.words = chunk_words(p->spaces, codes, offsets, length, token_starts, tokens, run, cut);
    return seen;
}

static void *count_part(void *argument) {
    CountPart *p = argument;
    RankedScratch scratch = {0};
    uint8_t *utf8 = NULL;
    uint32_t *chars = NULL;
    size_t utf8_capacity = 0, chars_capacity = 0, longest = 0;
    for (size_t k = p->first; k < p->last; k++)
        if (p->texts[k].length > longest) longest = p->texts[k].length;
    uint32_t *cuts = malloc(4 * (longest + 1) * sizeof *cuts);
    uint64_t *hashes = malloc((longest + 1) * sizeof *hashes);
    if (!cuts || !hashes || seen_reset(p)) {
        p->status.failed = 1;
        free(cuts);
        free(hashes);
        return NULL;
    }
    uint32_t *starts = cuts, *ends = cuts + longest + 1;
    for (size_t k = p->first; k < p->last && !p->status.failed; k++) {
        const SplitText *t = &p->texts[k];
        size_t n = split_steps(p->steps, p->n_steps, p->tables, t, starts, ends,
                               cuts + 2 * (longest + 1), cuts + 3 * (longest + 1));
        for (size_t c = 0; c < n; c++) hashes[c] = chunk_hash(t, starts[c], ends[c] - starts[c]);
        int64_t total = 0;
        WordState words = {0, 0, 0};
        for (size_t c = 0; c < n; c++) {
            /* Fetch ahead what the lookups to come will read, as split.c's gathering does:
               a chunk's slot, its entry, and the text of its first occurrence (each a miss). */
            if (c + SEEN_SLOT_AHEAD < n) __builtin_prefetch(&p->slots[hashes[c + SEEN_SLOT_AHEAD] & p->mask]);
            if (c + SEEN_ENTRY_AHEAD < n) {
                uint32_t slot = p->slots[hashes[c + SEEN_ENTRY_AHEAD] & p->mask];
                if (slot) __builtin_prefetch(&p->seen[slot - 1]);
            }
            if (c + SEEN_TEXT_AHEAD < n) {
                uint32_t slot = p->slots[hashes[c + SEEN_TEXT_AHEAD] & p->mask];
                if (slot) {
                    const SeenChunk *entry = &p->seen[slot - 1];
                    const SplitText *first = &p->texts[entry->text];
                    __builtin_prefetch((const char *)first->data + (size_t)entry->start * (size_t)first->kind);
                }
            }
            size_t start = starts[c], length = ends[c] - start;
            uint64_t hash = hashes[c];
            size_t s = hash & p->mask;
            const SeenChunk *found = NULL;
            for (; p->slots[s]; s = (s + 1) & p->mask) {
                const SeenChunk *entry = &p->seen[p->slots[s] - 1];
                if (entry->hash == hash && entry->length == length
                    && same_chunk(&p->texts[entry->text], entry->start, t, start, length)) {
                    found = entry;
                    break;
                }
            }
            SeenChunk fresh;
            if (!found) {
                fresh = encode_chunk(p, &scratch, k, start, length, hash, &utf8, &utf8_capacity,
                                     &chars, &chars_capacity);
                if (p->status.failed) break;
                if (p->n_seen >= MAX_SEEN) {
                    if (seen_reset(p)) { p->status.failed = 1; break; }
                    s = hash & p->mask;
                }
                p->seen = grow(&p->status, p->seen, &p->seen_capacity, p->n_seen + 1, sizeof *p->seen);
                if (p->status.failed) break;
                p->seen[p->n_seen] = fresh;
                p->slots[s] = (uint32_t)++p->n_seen;
                if (2 * p->n_seen > p->mask && seen_grow(p)) { p->status.failed = 1; break; }
                found = &fresh;
            }
            total += found->tokens;
            words_add(&words, found->words);
        }
        p->counts[k] = total;
        if (p->split_words) p->split_words[k] = words_end(&words);
    }
    ranked_scratch_free(&scratch);
    free(utf8);
    free(chars);
    free(cuts);
    free(hashes);
    return NULL;
}

int ranked_count(const RankedModel *m, const SplitStep *steps, int n_steps,
                 const SplitTables *tables, const uint8_t *spaces, const SplitText *texts,
                 size_t n_texts, int n_threads, int64_t *counts, int64_t *split_words) {
    if (n_threads < 1) n_threads = 1;
    if (n_threads > MAX_SPLIT_THREADS) n_threads = MAX_SPLIT_THREADS;
    if ((size_t)n_threads > n_texts) n_threads = n_texts ? (int)n_texts : 1;
    CountPart *parts = calloc((size_t)n_threads, sizeof *parts);
    if (!parts) return -1;
    size_t total = 0, done = 0, k = 0;
    for (size_t j = 0; j < n_texts; j++) total += texts[j].length + 1;
    for (int i = 0; i < n_threads; i++) {
        CountPart *part = &parts[i];
        *part = (CountPart){.model = m, .steps = steps, .n_steps = n_steps, .tables = tables,
                            .spaces = spaces, .texts = texts, .counts = counts,
                            .split_words = split_words};
        size_t goal = total / (size_t)n_threads * (size_t)(i + 1);
        part->first = k;
        while (k < n_texts && (i == n_threads - 1 || done < goal)) done += texts[k++].length + 1;
        part->last = k;
    }
#if ENGINE_THREADS
    pthread_t threads[MAX_SPLIT_THREADS];
    int started[MAX_SPLIT_THREADS] = {0};
    for (int i = 1; i < n_threads; i++)
        started[i] = pthread_create(&threads[i], NULL, count_part, &parts[i]) == 0;
    count_part(&parts[0]);
    for (int i = 1; i < n_threads; i++) {
        if (started[i]) pthread_join(threads[i], NULL);
        else count_part(&parts[i]); /* no thread could be made: do it here */
    }
#else
    for (int i = 0; i < n_threads; i++) count_part(&parts[i]);
#endif
    int failed = 0, surrogate = 0;
    for (int i = 0; i < n_threads; i++) {
        failed |= parts[i].status.failed;
        surrogate |= parts[i].surrogate;
        free(parts[i].seen);
        free(parts[i].slots);
    }
    free(parts);
    return surrogate ? -2 : failed ? -1 : 0;
}
