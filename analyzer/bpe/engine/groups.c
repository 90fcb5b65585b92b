/*
 * Texts in groups (languages): each merge's replacements counted per group, and parity-aware
 * training (Foroutan et al. 2025, as analyzer.bpe.reference.train_parity defines it), where
 * each merge is the most frequent pair, within its own texts, of the group whose texts take
 * the most tokens so far (ties: the lower group). The pure engine's counterpart is the
 * `Groups` of analyzer/bpe/trainer.py.
 *
 * Pair counts and positions stay the trainer's (a merge applies to every group). What groups
 * add is, per group, the current token count (each text counted `multiplicity` times), and,
 * for parity-aware training, each stored pair's count within each group (a list per pair, in
 * `counts`) with a heap per group, invalidated lazily like the trainer's own, and a list of
 * the candidates too rare to matter yet (below the group's heap floor).
 *
 * A merge's records (the occurrences it destroyed and made) are summed per pair and group as
 * the trainer's own passes over them go (group_lost_record, group_made_record): each record
 * knows its group (noted when it was made), and the records of one group come together.
 */

#include "engine.h"

#include <stdlib.h>
#include <string.h>

/* A group's first heap floor (see push_group). */
#define FIRST_HEAP_FLOOR 256

/* ---------------------------------------------------------------------------------------- */
/* Pair counts within groups                                                                 */

/* The entry of group g in a pair's list, or NULL. Most pairs are in a few groups (a script's
   pairs, in its languages), and their lists are short: scanned, or searched by halves (the
   groups ascend) down to a short scan. A pair in many groups (byte pairs, spaces, digits) has
   a full list, an entry for every group (0 where it has none), read at its index: these are
   the pairs most often looked up. */
static inline GroupCount *find_count(const Groups *groups, const Pair *pair, uint32_t g) {
    if (!pair->n_groups) return NULL;
    GroupCount *list = groups->counts.entries + pair->groups_at;
    if (pair->n_groups == (uint32_t)groups->n) return &list[g]; /* full */
    uint32_t lo = 0, hi = pair->n_groups; /* the entry, if any, is in [lo, hi) */
    while (hi - lo > 8) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (list[mid].group <= g) lo = mid; else hi = mid;
    }
    for (uint32_t k = lo; k < hi && list[k].group <= g; k++)
        if (list[k].group == g) return &list[k];
    return NULL;
}

int64_t group_count(const Trainer *t, int32_t index, int32_t group) {
    const GroupCount *entry = find_count(t->groups, &t->table.pairs[index], (uint32_t)group);
    return entry ? entry->count : 0;
}

/* Room for n more entries at the end of the lists; where it starts (lists are addressed by
   32 bits), or UINT32_MAX when memory ran out. The entries may move: address them by offset. */
static uint32_t reserve_counts(Trainer *t, size_t n) {
    GroupCounts *counts = &t->groups->counts;
    if (counts->n + n >= UINT32_MAX) t->status.failed = 1;
    else counts->entries = grow(&t->status, counts->entries, &counts->capacity, counts->n + n,
                                sizeof(GroupCount));
    if (t->status.failed) return UINT32_MAX;
    uint32_t at = (uint32_t)counts->n;
    counts->n += n;
    return at;
}

const char *groups_init(Groups *groups, const Trainer *t, const int64_t *starts, size_t n_texts,
                        const int64_t *group_of_text, const int64_t *multiplicities, int parity) {
    int64_t largest = -1;
    for (size_t k = 0; k < n_texts; k++) {
        if (group_of_text[k] < 0 || group_of_text[k] >= MAX_GROUPS) return "groups must be from 0 to 65535";
        /* contract.GROUP_ORDER: a group's texts lie together (run_at, and each group's pairs
           flushed once, depend on it) */
        if (k && group_of_text[k] < group_of_text[k - 1])
            return "groups must be numbers from 0, in non-decreasing order";
        if (group_of_text[k] > largest) largest = group_of_text[k];
        if (multiplicities && (multiplicities[k] < 0 || multiplicities[k] > UINT32_MAX))
            return "multiplicities must be from 0 to 2**32 - 1";
    }
    groups->n = (int32_t)(largest + 1);
    groups->parity = parity;
    groups->summing = -1;
    groups->runs = malloc((n_texts + 1) * sizeof(Run));
    groups->tokens = calloc((size_t)groups->n + 1, sizeof(int64_t));
    groups->replaced = calloc((size_t)groups->n + 1, sizeof(int64_t));
    groups->exhausted = calloc((size_t)groups->n + 1, 1);
    if (parity) {
        groups->heaps = calloc((size_t)groups->n + 1, sizeof(Heap));
        groups->waiting = calloc((size_t)groups->n + 1, sizeof(Heap));
        groups->heap_floor = malloc(((size_t)groups->n + 1) * sizeof(int64_t));
    }
    if (!groups->runs || !groups->tokens || !groups->replaced || !groups->exhausted
        || (parity && (!groups->heaps || !groups->waiting || !groups->heap_floor)))
        return "out of memory";
    for (int32_t g = 0; parity && g < groups->n; g++) groups->heap_floor[g] = FIRST_HEAP_FLOOR;
    /* Without dev texts a text's multiplicity is its weight (its chunk's count): then the
       trainer's weight of the text gives it, and the runs need only follow the groups, a
       few dozen, instead of one per distinct chunk (a search over millions of runs). */
    groups->multiplicity_is_weight = multiplicities != NULL;
    for (size_t k = 0; k < n_texts && groups->multiplicity_is_weight; k++) {
        uint32_t weight = t->text_weight ? t->text_weight[k] : 1;
        if ((uint64_t)multiplicities[k] != weight) groups->multiplicity_is_weight = 0;
    }
    for (size_t k = 0; k < n_texts; k++) {
        size_t from = (size_t)starts[k];
        uint16_t group = (uint16_t)group_of_text[k];
        /* Only parity-aware training follows a group's tokens (by default each text once);
           otherwise 0 everywhere keeps the runs long. */
        uint32_t m = multiplicities ? (uint32_t)multiplicities[k] : (parity ? 1 : 0);
        uint32_t run_m = groups->multiplicity_is_weight ? 0 : m;
        Run *last = groups->n_runs ? &groups->runs[groups->n_runs - 1] : NULL;
        if (!last || last->group != group || last->multiplicity != run_m)
            groups->runs[groups->n_runs++] = (Run){k ? from : 0, run_m, group};
        groups->tokens[group] += (int64_t)m * (int64_t)text_slots(starts, n_texts, k, t->size);
    }
    return NULL;
}

void groups_free(Groups *groups) {
    free(groups->runs);
    free(groups->tokens);
    free(groups->replaced);
    free(groups->exhausted);
    free(groups->counts.entries);
    free(groups->pending);
    free(groups->made_sums);
    for (int32_t g = 0; g < groups->n; g++) {
        if (groups->heaps) free(groups->heaps[g].items);
        if (groups->waiting) free(groups->waiting[g].items);
    }
    free(groups->heaps);
    free(groups->waiting);
    free(groups->heap_floor);
    memset(groups, 0, sizeof(*groups));
}

/* The first current occurrence of a pair in one group's trained texts (no resumption: it is
   only needed in "first" mode with groups). */
uint32_t group_first_occurrence(Trainer *t, Pair *pair, uint16_t group) {
    int32_t left = key_left(pair->key), right = key_right(pair->key);
    Positions p = pair_positions(t, pair);
    p.at += pair->head;
    p.position = pair->head_at;
    while (next_position(&p)) {
        uint32_t i = p.position;
        if (group_at(t->groups, i) == group && t->tok[i] == left && t->tok[i + t->length[left]] == right
            && weight_at(t, i))
            return i;
    }
    return UINT32_MAX;
}

/* Push the pair of entry `index` on a group's heap, with its count there. The candidate
   carries the pair's key, so that ties fall as in the global heap, and its entry (valid until
   the next rescan, which rebuilds the heaps).

   Most pairs a merge makes are rare in their group (a count of a few), and a group chooses
   among its most frequent: those below the group's heap floor wait in a plain list instead
   (an append, where the heap, large and mostly out of cache, made each push and pop miss).
   A waiting candidate's count is below the floor, so the heap's best, when at or above it,
   beats them all; when not, the floor is lowered and those now above it join the heap
   (best_pair_group). */
void push_group(Trainer *t, uint32_t group, int32_t index, int64_t count) {
    Groups *groups = t->groups;
    Pair *pair = &t->table.pairs[index];
    Candidate candidate = {count, pair->key, 0, index};
    if (t->first_mode) candidate.first = group_first_occurrence(t, pair, (uint16_t)group);
    if (count >= groups->heap_floor[group]) {
        heap_push(&t->status, &groups->heaps[group], candidate);
        return;
    }
    Heap *waiting = &groups->waiting[group];
    waiting->items = grow(&t->status, waiting->items, &waiting->capacity, waiting->n + 1, sizeof(Candidate));
    if (!t->status.failed) waiting->items[waiting->n++] = candidate;
}

/* Lower a group's heap floor to `floor`: its waiting candidates that reach it join the heap.
   (A candidate's count, like any on the heap, may have fallen since: it is checked when it
   comes to the top.) */
static void lower_heap_floor(Trainer *t, int32_t group, int64_t floor) {
    Groups *groups = t->groups;
    Heap *waiting = &groups->waiting[group];
    size_t kept = 0;
    for (size_t k = 0; k < waiting->n && !t->status.failed; k++) {
        if (waiting->items[k].count >= floor) heap_push(&t->status, &groups->heaps[group], waiting->items[k]);
        else waiting->items[kept++] = waiting->items[k];
    }
    waiting->n = kept;
    groups->heap_floor[group] = floor;
}

/* ---------------------------------------------------------------------------------------- */
/* Recounting: at the start, and whenever the floor is lowered                               */

/* Whether a list of n entries is laid out full (see find_count): when it is long, and holds
   at least a quarter of the groups (so that it is at most four times as large). */
static inline int full_list(const Groups *groups, uint32_t n) {
    return n > 8 && 4 * (size_t)n >= (size_t)groups->n;
}

/* Room for a pair's list of n entries, to be written with put_count; a full list starts with
   a 0 for every group. */
static void start_list(Trainer *t, Pair *pair, uint32_t n) {
    Groups *groups = t->groups;
    int full = full_list(groups, n);
    pair->n_groups = 0;
    pair->groups_at = reserve_counts(t, full ? (size_t)groups->n : n);
    if (pair->groups_at == UINT32_MAX || !full) return;
    for (int32_t g = 0; g < groups->n; g++) groups->counts.entries[pair->groups_at + g] = (GroupCount){0, (uint32_t)g};
    pair->n_groups = (uint32_t)groups->n;
}

/* A pair's whole count in group g into its list, its groups given in ascending order. Only a
   count that reaches min_count is put: a count only falls once its pair is made (see
   train.c), so a pair below min_count in a group can never be that group's choice, and needs
   no entry (a missing entry reads as 0). */
static inline void put_count(Trainer *t, Pair *pair, uint32_t g, int64_t sum) {
    if (sum < t->min_count) return;
    GroupCount *list = t->groups->counts.entries + pair->groups_at;
    if (pair->n_groups == (uint32_t)t->groups->n) list[g].count = sum; /* full */
    else list[pair->n_groups++] = (GroupCount){sum, g};
}

/* A pair's whole count in group g onto the end of its list (the pair's list is the last one
   being written, its length not known in advance); see put_count. */
static void append_count(Trainer *t, Pair *pair, uint32_t g, int64_t sum) {
    if (sum < t->min_count) return;
    uint32_t at = reserve_counts(t, 1);
    if (at == UINT32_MAX) return;
    t->groups->counts.entries[at] = (GroupCount){sum, g};
    pair->n_groups++;
}

/* A list written by append_count, moved to a full list if it is long. */
static void end_list(Trainer *t, Pair *pair) {
    uint32_t n = pair->n_groups;
    if (!full_list(t->groups, n) || n == (uint32_t)t->groups->n) return;
    uint32_t from = pair->groups_at;
    start_list(t, pair, n);
    if (t->status.failed) return;
    for (uint32_t k = 0; k < n; k++) {
        GroupCount entry = t->groups->counts.entries[from + k];
        put_count(t, pair, entry.group, entry.count);
    }
}

/* At the start every token is a byte: each group's texts are walked in order, their pairs
   summed in a direct array (no lookup per occurrence). The sums of the pairs the trainer
   stored are kept as each group ends, group after group; then each pair's list is laid out,
   its groups in the order kept (ascending). */
static void recount_bytes(Trainer *t) {
    typedef struct {
        int32_t index;
        uint32_t group;
        int64_t sum;
    } Sum;
    Groups *groups = t->groups;
    int64_t *sums = calloc(1 << 16, sizeof(int64_t));
    uint16_t *seen = malloc((1 << 16) * sizeof(uint16_t)); /* the pairs with a sum, in order */
    Sum *kept = NULL;
    size_t n_seen = 0, n_kept = 0, kept_capacity = 0;
    if (!sums || !seen) t->status.failed = 1;
    for (size_t r = 0; r < groups->n_runs && !t->status.failed; r++) {
        size_t from = groups->runs[r].start;
        size_t to = r + 1 < groups->n_runs ? groups->runs[r + 1].start : t->size;
        for (size_t i = from; i + 1 < to; i++) {
            int32_t a = t->tok[i], b = t->tok[i + 1];
            if (a < 0 || b < 0) continue; /* a separator: no pair spans two texts */
            uint32_t w = weight_at(t, i);
            if (!w) continue; /* measured-only texts count for nothing */
            uint16_t pair = (uint16_t)(a << 8 | b);
            if (!sums[pair]) seen[n_seen++] = pair;
            sums[pair] += w;
        }
        if (r + 1 < groups->n_runs && groups->runs[r + 1].group == groups->runs[r].group) continue;
        for (size_t k = 0; k < n_seen && !t->status.failed; k++) {
            int64_t sum = sums[seen[k]];
            sums[seen[k]] = 0;
            int32_t index = table_find(&t->table, pair_key(seen[k] >> 8, seen[k] & 0xFF));
            if (index < 0 || sum < t->min_count) continue; /* see append_count */
            kept = grow(&t->status, kept, &kept_capacity, n_kept + 1, sizeof(Sum));
            if (t->status.failed) break;
            kept[n_kept++] = (Sum){index, groups->runs[r].group, sum};
            t->table.pairs[index].n_groups++;
        }
        n_seen = 0;
    }
    for (size_t index = 0; index < t->table.n && !t->status.failed; index++) /* each one's room */
        start_list(t, &t->table.pairs[index], t->table.pairs[index].n_groups);
    for (size_t k = 0; k < n_kept && !t->status.failed; k++)
        put_count(t, &t->table.pairs[kept[k].index], kept[k].group, kept[k].sum);
    free(sums);
    free(seen);
    free(kept);
}

/* Later (the floor lowered): `rescan` has just recorded every current occurrence of every
   stored pair, in ascending order, so each pair's positions, walked in order, give its count
   in each group in turn, with no lookup per occurrence: its list, written as it goes. */
static void recount_stored(Trainer *t) {
    Groups *groups = t->groups;
    for (size_t index = 0; index < t->table.n && !t->status.failed; index++) {
        Pair *pair = &t->table.pairs[index];
        if (pair->count < 0 || pair->block == NO_LIST) continue;
        pair->groups_at = (uint32_t)groups->counts.n; /* < UINT32_MAX: see reserve_counts */
        Positions p = pair_positions(t, pair);
        int32_t current = -1;
        int64_t sum = 0;
        while (next_position(&p)) {
            uint32_t w = weight_at(t, p.position);
            if (!w) continue; /* measured-only texts count for nothing */
            uint16_t g = group_at(groups, p.position);
            if (g != current) {
                if (current >= 0) append_count(t, pair, (uint32_t)current, sum);
                current = g;
                sum = 0;
            }
            sum += w;
        }
        if (current >= 0) append_count(t, pair, (uint32_t)current, sum);
        end_list(t, pair);
    }
}

/* Every stored pair's count in each group, recounted, and the groups' heaps rebuilt. */
void group_recount(Trainer *t, int start) {
    Groups *groups = t->groups;
    groups->counts.n = 0;
    for (int32_t g = 0; g < groups->n; g++) groups->heaps[g].n = groups->waiting[g].n = 0;
    for (size_t index = 0; index < t->table.n; index++) t->table.pairs[index].n_groups = 0;
    if (start) recount_bytes(t); /* the start from bytes (rescan(t, 1) only then) */
    else recount_stored(t);
    for (size_t index = 0; index < t->table.n && !t->status.failed; index++) {
        const Pair *pair = &t->table.pairs[index];
        for (uint32_t k = 0; k < pair->n_groups; k++) {
            GroupCount entry = groups->counts.entries[pair->groups_at + k];
            if (entry.count >= t->min_count) push_group(t, entry.group, (int32_t)index, entry.count);
        }
    }
}

/* ---------------------------------------------------------------------------------------- */
/* A merge's records within groups                                                          */

/* The losses summed in the current group taken off its counts (a count never goes below 0);
   see group_lost_record. */
void group_flush_lost(Trainer *t) {
    Groups *groups = t->groups;
    uint32_t g = (uint32_t)groups->summing;
    for (size_t k = 0; k < groups->n_pending; k++) {
        Pair *pair = &t->table.pairs[groups->pending[k]];
        GroupCount *entry = find_count(groups, pair, g);
        if (entry) entry->count = entry->count > pair->group_sum ? entry->count - pair->group_sum : 0;
        pair->group_sum = 0;
    }
    groups->n_pending = 0;
    groups->summing = -1;
}

/* A pair first summed in the current group: listed for group_flush_lost. */
void group_add_pending(Trainer *t, int32_t index) {
    Groups *groups = t->groups;
    groups->pending = grow(&t->status, groups->pending, &groups->pending_capacity,
                           groups->n_pending + 1, sizeof(int32_t));
    if (t->status.failed) return;
    groups->pending[groups->n_pending++] = index;
    /* group_flush_lost will search its list: fetched now, the miss overlaps the summing */
    const Pair *pair = &t->table.pairs[index];
    __builtin_prefetch(groups->counts.entries + pair->groups_at + pair->n_groups / 2);
}

/* A made pair's whole count in one group. */
typedef struct MadeSum {
    int32_t made; /* its index in the scratch's `made` */
    uint32_t group;
    int64_t sum;
} MadeSum;

/* A made pair's sum in its last group, kept if it reaches min_count (see append_count). */
void group_keep_sum(Trainer *t, Made *made) {
    Groups *groups = t->groups;
    if (made->group_sum >= t->min_count) {
        groups->made_sums = grow(&t->status, groups->made_sums, &groups->made_sums_capacity,
                                 groups->n_made_sums + 1, sizeof(MadeSum));
        if (t->status.failed) return;
        groups->made_sums[groups->n_made_sums++] =
            (MadeSum){(int32_t)(made - t->scratch.made), (uint32_t)made->last_group, made->group_sum};
        made->n_groups++;
    }
    made->group_sum = 0;
}

/* Each pair a merge made and the trainer kept: its sums by group (group_made_record) as its
   list, and on the groups' heaps. A pair's sums were kept in ascending groups. */
void group_count_made(Trainer *t) {
    Groups *groups = t->groups;
    Scratch *s = &t->scratch;
    for (size_t m = 0; m < s->n_made && !t->status.failed; m++) {
        Made *made = &s->made[m];
        if (made->pair < 0) continue; /* not kept */
        if (made->last_group >= 0) group_keep_sum(t, made); /* its last group's sum */
        if (made->n_groups) start_list(t, &t->table.pairs[made->pair], made->n_groups);
    }
    for (size_t k = 0; k < groups->n_made_sums && !t->status.failed; k++) {
        MadeSum kept = groups->made_sums[k];
        int32_t index = s->made[kept.made].pair;
        if (index < 0) continue;
        put_count(t, &t->table.pairs[index], kept.group, kept.sum);
        push_group(t, kept.group, index, kept.sum);
    }
    groups->n_made_sums = 0;
}

/* The best pair of one group, by its count there (the global entry's index); -1 when the
   group has none reaching min_count; -2 when the floor must be lowered first (the group's
   best stored count is below it, or it has none stored while pairs were left out). */
static int32_t best_pair_group(Trainer *t, int32_t group) {
    Groups *groups = t->groups;
    Heap *heap = &groups->heaps[group];
    int64_t *heap_floor = &groups->heap_floor[group];
    while (!t->status.failed) {
        if (!heap->n) { /* the best, if any, is waiting */
            if (*heap_floor <= t->min_count) break;
            lower_heap_floor(t, group, *heap_floor / 4 > t->min_count ? *heap_floor / 4 : t->min_count);
            continue;
        }
        Candidate top = heap_pop(heap);
        int32_t index = top.pair;
        if (t->table.pairs[index].count < 0) continue; /* merged or forgotten */
        int64_t count = group_count(t, index, group);
        if (count < t->min_count) continue; /* counts only fall: not this group's any more */
        Candidate current = {count, top.key, 0, index};
        if (t->first_mode) current.first = group_first_occurrence(t, &t->table.pairs[index], (uint16_t)group);
        if (current.count != top.count || current.first != top.first) {
            heap_push(&t->status, heap, current); /* stale: rank it again */
            continue;
        }
        if (count < *heap_floor) { /* a waiting candidate may beat it */
            heap_push(&t->status, heap, current);
            int64_t lower = *heap_floor / 4 < count ? *heap_floor / 4 : count;
            lower_heap_floor(t, group, lower > t->min_count ? lower : t->min_count);
            continue;
        }
        if (count >= t->floor) return index;
        heap_push(&t->status, heap, current);
        return -2;
    }
    return t->floor > t->min_count ? -2 : -1;
}

/* The pair of the group with the most tokens that has one (ties: the lower group); *chosen
   says which group. -1 when no group has a pair reaching min_count; -2 when pairs below the
   floor may beat that group's best (the caller lowers the floor, recounts with `rescan` and
   asks again: the groups stand below the training, which alone recounts).

   A group found without a pair reaching min_count (with the floor at min_count) never has one
   again: each occurrence a later merge makes in it, (x, z) or (z, y), stands where an
   occurrence of (x, a) or (b, y) of the same text was destroyed, one for one, so no new pair's
   count there exceeds an old one's. Such a group is marked `exhausted` and passed over, as the
   reference's scan of the groups in order passes over it each time. */
int32_t best_pair_parity(Trainer *t, int32_t *chosen) {
    Groups *groups = t->groups;
    for (;;) {
        int32_t worst = -1;
        for (int32_t g = 0; g < groups->n; g++)
            if (!groups->exhausted[g] && (worst < 0 || groups->tokens[g] > groups->tokens[worst]))
                worst = g;
        if (worst < 0 || t->status.failed) return -1;
        int32_t index = best_pair_group(t, worst);
        if (index >= 0) {
            *chosen = worst;
            return index;
        }
        if (index == -1) {
            groups->exhausted[worst] = 1;
            continue;
        }
        return -2; /* pairs below the floor may beat this group's best: the caller recounts */
    }
}
