/*
 * Replay: encode and count with a merge list, exactly as analyzer.bpe.reference.encode does
 * (each merge applied once, in learned order, left to right without overlap).
 *
 * Texts are replayed in batches of about REPLAY_BATCH bytes, so that a batch's token array
 * and lists stay in the cache. In a batch, as in training: the ranks of the merges whose pair
 * is present wait in a set; each rank's occurrences are recorded when its pair appears (all
 * at once: a pair appears when the later of its two tokens is made) and checked lazily
 * against `tok`; each merge is applied once, in rank order. A batch costs a step per rank
 * present, not per merge of the list. Token counts just before a rank are the counts at size
 * 256 + rank, so one replay counts every size.
 */

#include "engine.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SHORT_LIST 8 /* lists this long or shorter are scanned; longer ones get a hash table */

/* ---------------------------------------------------------------------------------------- */
/* The merge list, prepared                                                                  */

/* Partners in order, and a repeated pair's first rank before its later ones. */
static int partner_order(const void *a, const void *b) {
    const Partner *x = a, *y = b;
    if (x->partner != y->partner) return x->partner < y->partner ? -1 : 1;
    return (x->rank > y->rank) - (x->rank < y->rank);
}

static inline size_t partner_slot(int32_t partner, size_t mask) {
    return (size_t)((uint32_t)partner * 2654435761u) & mask;
}

/* The bounds of list i of the partner lists (as_left lists, then as_right ones). */
static inline void list_bounds(const MergeList *m, size_t n_ids, size_t i, uint32_t *from, uint32_t *to) {
    *from = i < n_ids ? m->as_left[i] : m->as_right[i - n_ids];
    *to = i < n_ids ? m->as_left[i + 1] : m->as_right[i - n_ids + 1];
}

/* Every id's bytes, from the merges in order. */
static const char *build_pieces(MergeList *m) {
    size_t n = m->n_merges, total = FIRST_NEW_ID;
    for (int b = 0; b < FIRST_NEW_ID; b++) m->length[b] = 1;
    for (size_t k = 0; k < n; k++) {
        int32_t a = m->lefts[k], b = m->rights[k];
        if (a < 0 || b < 0 || (size_t)a >= FIRST_NEW_ID + k || (size_t)b >= FIRST_NEW_ID + k) {
            snprintf(m->problem, sizeof(m->problem), "merge %zu uses an id that does not exist "
                     "before it", k);
            return m->problem;
        }
        int64_t length = (int64_t)m->length[a] + m->length[b];
        if (length > INT32_MAX / 2) {
            snprintf(m->problem, sizeof(m->problem), "merge %zu makes a token too long", k);
            return m->problem;
        }
        m->length[FIRST_NEW_ID + k] = (int32_t)length;
        total += (size_t)length;
    }
    m->pieces = malloc(total);
    if (!m->pieces) return "out of memory";
    uint8_t *cursor = m->pieces;
    for (int b = 0; b < FIRST_NEW_ID; b++) { m->piece[b] = cursor; *cursor++ = (uint8_t)b; }
    for (size_t k = 0; k < n; k++) {
        int32_t a = m->lefts[k], b = m->rights[k];
        m->piece[FIRST_NEW_ID + k] = cursor;
        memcpy(cursor, m->piece[a], (size_t)m->length[a]);
        memcpy(cursor + m->length[a], m->piece[b], (size_t)m->length[b]);
        cursor += m->length[FIRST_NEW_ID + k];
    }
    return NULL;
}

/* The first rank of each byte pair. */
static const char *build_byte_ranks(MergeList *m) {
    m->byte_rank = malloc((1 << 16) * sizeof(int32_t));
    if (!m->byte_rank) return "out of memory";
    memset(m->byte_rank, 0xFF, (1 << 16) * sizeof(int32_t));
    for (size_t k = 0; k < m->n_merges; k++) {
        /* a pair listed twice acts at its first rank: later, none of it is left to merge */
        int32_t left = m->lefts[k], right = m->rights[k];
        if (left < FIRST_NEW_ID && right < FIRST_NEW_ID && m->byte_rank[left << 8 | right] < 0)
            m->byte_rank[left << 8 | right] = (int32_t)k;
    }
    /* The separator (0xFF, never in UTF-8) pairs with nothing, whatever the merge list says:
       the replay finds byte pairs in the packed bytes, separators included. */
    for (int b = 0; b < FIRST_NEW_ID; b++)
        m->byte_rank[SEPARATOR << 8 | b] = m->byte_rank[b << 8 | SEPARATOR] = -1;
    return NULL;
}

/* Partner lists, by counting sort: each merge (x, y) is in x's list as the left id and in
   y's as the right id; lists sorted by partner, a repeated pair keeping its first rank. */
static const char *build_partners(MergeList *m) {
    size_t n = m->n_merges, n_ids = n + FIRST_NEW_ID;
    m->as_left = calloc(n_ids + 1, sizeof(uint32_t));
    m->as_right = calloc(n_ids + 1, sizeof(uint32_t));
    m->partners = malloc((2 * n + 1) * sizeof(Partner));
    if (!m->as_left || !m->as_right || !m->partners) return "out of memory";
    for (size_t k = 0; k < n; k++) {
        m->as_left[m->lefts[k] + 1]++;
        m->as_right[m->rights[k] + 1]++;
    }
    for (size_t i = 0; i < n_ids; i++) m->as_left[i + 1] += m->as_left[i];
    m->as_right[0] = m->as_left[n_ids];
    for (size_t i = 0; i < n_ids; i++) m->as_right[i + 1] += m->as_right[i];
    uint32_t *fill = malloc(2 * n_ids * sizeof(uint32_t));
    if (!fill) return "out of memory";
    memcpy(fill, m->as_left, n_ids * sizeof(uint32_t));
    memcpy(fill + n_ids, m->as_right, n_ids * sizeof(uint32_t));
    for (size_t k = 0; k < n; k++) { /* ranks ascending: a list is filled in rank order */
        m->partners[fill[m->lefts[k]]++] = (Partner){m->rights[k], (int32_t)k};
        m->partners[fill[n_ids + (size_t)m->rights[k]]++] = (Partner){m->lefts[k], (int32_t)k};
    }
    free(fill);
    for (size_t i = 0; i < 2 * n_ids; i++) {
        uint32_t from, to;
        list_bounds(m, n_ids, i, &from, &to);
        if (to - from > 1) qsort(m->partners + from, to - from, sizeof(Partner), partner_order);
    }
    return NULL;
}

/* Hash tables for the long lists: a partner's first rank (the sorted list has it first). */
static const char *build_hashes(MergeList *m) {
    size_t n_ids = m->n_merges + FIRST_NEW_ID;
    m->hash_at = malloc((2 * n_ids + 1) * sizeof(uint32_t));
    if (!m->hash_at) return "out of memory";
    size_t hashed = 0;
    for (size_t i = 0; i < 2 * n_ids; i++) {
        uint32_t from, to;
        list_bounds(m, n_ids, i, &from, &to);
        m->hash_at[i] = (uint32_t)hashed;
        if (to - from > SHORT_LIST) {
            size_t slots = 16;
            while (slots < 2 * (size_t)(to - from)) slots *= 2;
            hashed += slots;
        }
    }
    m->hash_at[2 * n_ids] = (uint32_t)hashed;
    m->hashed = malloc((hashed + 1) * sizeof(Partner));
    if (!m->hashed) return "out of memory";
    for (size_t k = 0; k < hashed; k++) m->hashed[k] = (Partner){-1, -1};
    for (size_t i = 0; i < 2 * n_ids; i++) {
        uint32_t from, to;
        list_bounds(m, n_ids, i, &from, &to);
        if (to - from <= SHORT_LIST) continue;
        Partner *table = m->hashed + m->hash_at[i];
        size_t mask = (size_t)(m->hash_at[i + 1] - m->hash_at[i]) - 1;
        for (uint32_t k = from; k < to; k++) {
            Partner entry = m->partners[k];
            size_t slot = partner_slot(entry.partner, mask);
            while (table[slot].partner >= 0 && table[slot].partner != entry.partner) slot = (slot + 1) & mask;
            if (table[slot].partner < 0) table[slot] = entry; /* else a later rank of the same pair */
        }
    }
    return NULL;
}

const char *merge_list_init(MergeList *m, const int32_t *lefts, const int32_t *rights, size_t n) {
    memset(m, 0, sizeof(*m));
    if (n + FIRST_NEW_ID > MAX_IDS) return "too many merges";
    m->n_merges = n;
    m->lefts = malloc((n + 1) * sizeof(int32_t));
    m->rights = malloc((n + 1) * sizeof(int32_t));
    m->length = malloc((n + FIRST_NEW_ID) * sizeof(int32_t));
    m->piece = malloc((n + FIRST_NEW_ID) * sizeof(uint8_t *));
    if (!m->lefts || !m->rights || !m->length || !m->piece) return "out of memory";
    memcpy(m->lefts, lefts, n * sizeof(int32_t));
    memcpy(m->rights, rights, n * sizeof(int32_t));
    const char *problem = build_pieces(m);
    if (!problem) problem = build_byte_ranks(m);
    if (!problem) problem = build_partners(m);
    if (!problem) problem = build_hashes(m);
    return problem;
}

void merge_list_free(MergeList *m) {
    free(m->lefts);
    free(m->rights);
    free(m->length);
    free(m->piece);
    free(m->pieces);
    free(m->byte_rank);
    free(m->as_left);
    free(m->as_right);
    free(m->partners);
    free(m->hash_at);
    free(m->hashed);
    memset(m, 0, sizeof(*m));
}

/* ---------------------------------------------------------------------------------------- */
/* Finding the merges a new id takes part in                                                 */

/* The first rank (below `limit`) of the merge of `partner` in list `list` (`n` entries, or a
   hash table for a long list), or -1. These lookups are many and their outcomes irregular: a
   short list is scanned without data-dependent branches, a long one hashed. */
static inline int32_t find_partner(const MergeList *m, size_t list, const Partner *entries, size_t n,
                                   int32_t partner, size_t limit) {
    int32_t rank = -1;
    if (n <= SHORT_LIST) {
        for (size_t k = n; k-- > 0;) rank = entries[k].partner == partner ? entries[k].rank : rank;
    } else {
        const Partner *table = m->hashed + m->hash_at[list];
        size_t mask = (size_t)(m->hash_at[list + 1] - m->hash_at[list]) - 1;
        for (size_t slot = partner_slot(partner, mask);; slot = (slot + 1) & mask) {
            if (table[slot].partner == partner) { rank = table[slot].rank; break; }
            if (table[slot].partner < 0) break;
        }
    }
    return rank >= 0 && (size_t)rank < limit ? rank : -1;
}

/* The rank of pair (x, z) where z is new: among z's merges as the right id. */
static inline int32_t rank_with_left(const MergeList *m, int32_t x, int32_t z, size_t limit) {
    size_t n_ids = m->n_merges + FIRST_NEW_ID;
    return find_partner(m, n_ids + (size_t)z, m->partners + m->as_right[z],
                        m->as_right[z + 1] - m->as_right[z], x, limit);
}

/* The rank of pair (z, y) where z is new: among z's merges as the left id. */
static inline int32_t rank_with_right(const MergeList *m, int32_t z, int32_t y, size_t limit) {
    return find_partner(m, (size_t)z, m->partners + m->as_left[z], m->as_left[z + 1] - m->as_left[z],
                        y, limit);
}

/* ---------------------------------------------------------------------------------------- */
/* The waiting ranks, and their lists                                                        */

/* Ranks only come after the one being applied (a new pair's merge uses the new id), so the
   next waiting rank is found by scanning the bit set forward. */
static inline void rank_push(Work *w, int32_t rank) {
    w->waiting[(size_t)rank >> 6] |= 1ull << (rank & 63);
}

/* The smallest waiting rank at or after word `*word`, taken out of the set; -1 when none. */
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

int work_init(const MergeList *m, Work *w) {
    memset(w, 0, sizeof(*w));
    size_t n = m->n_merges + 1;
    w->list_start = malloc(n * sizeof(uint32_t));
    w->list_n = calloc(n, sizeof(uint32_t));
    w->touched = malloc(n * sizeof(int32_t));
    w->tokens = malloc(BATCH_TEXTS * sizeof(uint32_t));
    w->n_words = n / 64 + 1;
    w->waiting = calloc(w->n_words, sizeof(uint64_t));
    return w->list_start && w->list_n && w->touched && w->tokens && w->waiting ? 0 : -1;
}

void work_free(Work *w) {
    free(w->tok);
    free(w->text_of);
    free(w->tokens);
    free(w->list_start);
    free(w->list_n);
    free(w->touched);
    free(w->records);
    free(w->arena);
    free(w->waiting);
    memset(w, 0, sizeof(*w));
}

/* ---------------------------------------------------------------------------------------- */
/* One batch                                                                                 */

/* The batch's tokens (its bytes), each position's text, each text's token count. */
static int start_batch(Work *w, const uint8_t *bytes, size_t size, const int64_t *text_starts,
                       size_t n_texts) {
    if (size > w->tok_capacity) {
        free(w->tok);
        free(w->text_of);
        w->tok = malloc(size * sizeof(int32_t));
        w->text_of = malloc(size * sizeof(uint16_t));
        w->tok_capacity = w->tok && w->text_of ? size : 0;
        if (!w->tok_capacity) { w->status.failed = 1; return -1; }
    }
    for (size_t i = 0; i < size; i++) w->tok[i] = bytes[i] == SEPARATOR ? GAP : bytes[i];
    for (size_t k = 0; k < n_texts; k++) {
        size_t from = (size_t)text_starts[k], to = k + 1 < n_texts ? (size_t)text_starts[k + 1] : size;
        for (size_t i = from; i < to; i++) w->text_of[i] = (uint16_t)k;
        w->tokens[k] = (uint32_t)(to - from - 1); /* its bytes: all but the separator after it */
    }
    return 0;
}

/* The byte pairs' lists, by counting sort straight from the bytes. */
static void list_byte_pairs(const MergeList *m, Work *w, const uint8_t *bytes, size_t size, size_t limit) {
    w->arena_used = 0;
    w->n_records = 0;
    w->n_touched = 0;
    for (size_t i = 0; i + 1 < size; i++) {
        int32_t rank = m->byte_rank[bytes[i] << 8 | bytes[i + 1]]; /* -1 for the separator's pairs */
        if (rank >= 0 && (size_t)rank < limit && w->list_n[rank]++ == 0) w->touched[w->n_touched++] = rank;
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
        int32_t rank = m->byte_rank[bytes[i] << 8 | bytes[i + 1]];
        if (rank >= 0 && (size_t)rank < limit) w->arena[w->list_start[rank] + w->list_n[rank]++] = (uint32_t)i;
    }
}

/* Apply the merge of `rank` to every current occurrence in its list, recording the pairs of
   later ranks it makes. */
static void apply_rank(const MergeList *m, Work *w, int32_t rank, size_t limit, const Tally *tally) {
    int32_t *tok = w->tok;
    uint16_t *text_of = w->text_of;
    int32_t a = m->lefts[rank], b = m->rights[rank], z = FIRST_NEW_ID + rank;
    int32_t la = m->length[a], lb = m->length[b];
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
        size_t end = replace_at(tok, i, a, la, b, lb, z);
        if (!end) continue; /* stale */
        uint16_t text = text_of[i];
        w->tokens[text]--;
        if (tally->replaced)
            tally->replaced[(size_t)rank * tally->replaced_stride + (size_t)tally->group_of[text]]++;
        int32_t x = tok[i - 1];
        if (x != GAP) {
            size_t start = i - 1;
            if (x < 0) { start = (size_t)~x; x = tok[start]; }
            int32_t new_rank = rank_with_left(m, x, z, limit);
            if (new_rank >= 0) replay_record(w, new_rank, start);
        }
        int32_t y = tok[end];
        if (y >= 0) {
            int32_t new_rank = rank_with_right(m, z, y, limit);
            if (new_rank >= 0) replay_record(w, new_rank, i);
        }
    }
}

/* Replay the merges of rank < limit on one batch: `size` bytes of packed texts (0xFF before,
   between and after them) whose texts start at text_starts[0..n_texts) (batch offsets), with
   what `tally` asks counted along the way. */
void replay_batch(const MergeList *m, Work *w, const uint8_t *bytes, size_t size, size_t limit,
                  const int64_t *text_starts, size_t n_texts, const Tally *tally) {
    if (start_batch(w, bytes, size, text_starts, n_texts) < 0) return;
    list_byte_pairs(m, w, bytes, size, limit);
    size_t s = 0, word = 0;
    for (int32_t rank; !w->status.failed && (rank = rank_pop(w, &word)) >= 0;) {
        for (; s < tally->n_snapshots && tally->snapshot[s] <= rank; s++)
            memcpy(tally->counts + s * tally->stride, w->tokens, n_texts * sizeof(uint32_t));
        apply_rank(m, w, rank, limit, tally);
        replay_lists(w);
    }
    for (; s < tally->n_snapshots; s++)
        memcpy(tally->counts + s * tally->stride, w->tokens, n_texts * sizeof(uint32_t));
}

/* Whether the tokens of the batch's text at `start` spell its bytes again. */
int spells(const MergeList *m, const Work *w, const uint8_t *bytes, size_t start) {
    size_t position = start;
    while (w->tok[position] >= 0) {
        int32_t id = w->tok[position];
        if (memcmp(m->piece[id], bytes + position, (size_t)m->length[id])) return 0;
        position += (size_t)m->length[id];
    }
    return bytes[position] == SEPARATOR;
}
