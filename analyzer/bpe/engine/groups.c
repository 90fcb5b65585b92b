/*
 * Texts in groups (languages): each merge's replacements counted per group, and parity-aware
 * training (Foroutan et al. 2025, as analyzer.bpe.reference.train_parity defines it), where
 * each merge is the most frequent pair, within its own texts, of the group whose texts take
 * the most tokens so far (ties: the lower group). The pure engine's counterpart is the
 * `Groups` of analyzer/bpe/trainer.py.
 *
 * Pair counts and positions stay the trainer's (a merge applies to every group). What groups
 * add is, per group, the current token count (each text counted `multiplicity` times), and,
 * for parity-aware training, each stored pair's count within the group (`counts`, keyed by
 * group_key) with a heap per group, invalidated lazily like the trainer's own.
 */

#include "engine.h"

#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------------------------------- */
/* Pair counts within groups                                                                 */

static void counts_rehash(Status *status, GroupCounts *counts, size_t n_slots) {
    GroupCount *slots = malloc(n_slots * sizeof *slots);
    if (!slots) {
        status->failed = 1;
        return;
    }
    for (size_t i = 0; i < n_slots; i++) slots[i].count = -1;
    size_t mask = n_slots - 1;
    for (size_t i = 0; i < counts->n_slots; i++) {
        if (counts->slots[i].count < 0) continue;
        size_t slot = hash_key(counts->slots[i].key) & mask;
        while (slots[slot].count >= 0) slot = (slot + 1) & mask;
        slots[slot] = counts->slots[i];
    }
    free(counts->slots);
    counts->slots = slots;
    counts->n_slots = n_slots;
}

/* The slot of a key, or NULL. */
static inline GroupCount *counts_find(const GroupCounts *counts, Key key) {
    size_t mask = counts->n_slots - 1;
    for (size_t slot = hash_key(key) & mask;; slot = (slot + 1) & mask) {
        GroupCount *found = &counts->slots[slot];
        if (found->count < 0) return NULL;
        if (found->key == key) return found;
    }
}

/* The slot of a key, added with count 0 if it is new (*added then set); NULL when memory ran
   out. */
static GroupCount *counts_add(Status *status, GroupCounts *counts, Key key, int *added) {
    *added = 0;
    if (2 * (counts->n + 1) > counts->n_slots) {
        counts_rehash(status, counts, counts->n_slots ? 2 * counts->n_slots : 1024);
        if (status->failed) return NULL;
    }
    size_t mask = counts->n_slots - 1;
    size_t slot = hash_key(key) & mask;
    for (; counts->slots[slot].count >= 0; slot = (slot + 1) & mask)
        if (counts->slots[slot].key == key) return &counts->slots[slot];
    counts->slots[slot] = (GroupCount){key, 0};
    counts->n++;
    *added = 1;
    return &counts->slots[slot];
}

int64_t group_count(const Groups *groups, int32_t group, Key key) {
    const GroupCount *entry = counts_find(&groups->counts, group_key((uint32_t)group, key));
    return entry ? entry->count : 0;
}

static void counts_free(GroupCounts *counts) {
    free(counts->slots);
    memset(counts, 0, sizeof *counts);
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
    groups->runs = malloc((n_texts + 1) * sizeof(Run));
    groups->tokens = calloc((size_t)groups->n + 1, sizeof(int64_t));
    groups->replaced = calloc((size_t)groups->n + 1, sizeof(int64_t));
    groups->exhausted = calloc((size_t)groups->n + 1, 1);
    if (parity) groups->heaps = calloc((size_t)groups->n + 1, sizeof(Heap));
    if (!groups->runs || !groups->tokens || !groups->replaced || !groups->exhausted
        || (parity && !groups->heaps))
        return "out of memory";
    /* Without dev texts a text's multiplicity is its weight (its chunk's count): then the
       trainer's per-position weight gives it, and the runs need only follow the groups, a
       few dozen, instead of one per distinct chunk (a search over millions of runs). */
    groups->multiplicity_is_weight = multiplicities != NULL;
    for (size_t k = 0; k < n_texts && groups->multiplicity_is_weight; k++) {
        uint32_t weight = t->weight ? t->weight[starts[k]] : 1;
        if ((uint64_t)multiplicities[k] != weight) groups->multiplicity_is_weight = 0;
    }
    for (size_t k = 0; k < n_texts; k++) {
        size_t from = (size_t)starts[k];
        size_t end = k + 1 < n_texts ? (size_t)starts[k + 1] - 1 : t->size - 1; /* its separator */
        uint16_t group = (uint16_t)group_of_text[k];
        /* Only parity-aware training follows a group's tokens (by default each text once);
           otherwise 0 everywhere keeps the runs long. */
        uint32_t m = multiplicities ? (uint32_t)multiplicities[k] : (parity ? 1 : 0);
        uint32_t run_m = groups->multiplicity_is_weight ? 0 : m;
        Run *last = groups->n_runs ? &groups->runs[groups->n_runs - 1] : NULL;
        if (!last || last->group != group || last->multiplicity != run_m)
            groups->runs[groups->n_runs++] = (Run){k ? from : 0, run_m, group};
        groups->tokens[group] += (int64_t)m * (int64_t)(end - from);
    }
    return NULL;
}

void groups_free(Groups *groups) {
    free(groups->runs);
    free(groups->tokens);
    free(groups->replaced);
    free(groups->exhausted);
    counts_free(&groups->counts);
    if (groups->heaps) {
        for (int32_t g = 0; g < groups->n; g++) free(groups->heaps[g].items);
        free(groups->heaps);
    }
    free(groups->pending);
    memset(groups, 0, sizeof(*groups));
}

/* The first current occurrence of a pair in one group's trained texts (no resumption: it is
   only needed in "first" mode with groups). */
uint32_t group_first_occurrence(Trainer *t, Pair *pair, uint16_t group) {
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

/* Push a pair on its group's heap (`counted`: its group key, `count`: its count there). The
   candidate carries the plain pair key, so that ties fall as in the global heap. */
void push_group(Trainer *t, Key counted, int64_t count) {
    Groups *groups = t->groups;
    uint16_t group = (uint16_t)(counted >> 48);
    Key key = pair_key((int32_t)(counted >> 24 & 0xFFFFFF), (int32_t)(counted & 0xFFFFFF));
    Candidate candidate = {count, key, 0, 0};
    if (t->first_mode) {
        int32_t index = table_find(&t->table, key);
        candidate.first = index < 0 ? UINT32_MAX : group_first_occurrence(t, &t->table.pairs[index], group);
    }
    heap_push(&t->status, &groups->heaps[group], candidate);
}

/* ---------------------------------------------------------------------------------------- */
/* Recounting: at the start, and whenever the floor is lowered                               */

/* A pair's whole count in group g into the group counts, if it reaches min_count: a count
   only falls once its pair is made (see train.c), so a pair below min_count in a group can
   never be that group's choice, and needs no entry (a missing entry reads as 0). */
static void count_in_group(Trainer *t, uint16_t g, Key key, int64_t sum) {
    if (sum < t->min_count) return;
    int added;
    GroupCount *entry = counts_add(&t->status, &t->groups->counts, group_key(g, key), &added);
    if (entry) entry->count += sum;
}

/* At the start every token is a byte: each group's texts are walked in order, their pairs
   summed in a direct array (no lookup per occurrence), and the sums of the pairs the trainer
   stored go into the group counts when the group ends. */
static void recount_bytes(Trainer *t) {
    Groups *groups = t->groups;
    int64_t *sums = calloc(1 << 16, sizeof(int64_t));
    uint16_t *seen = malloc((1 << 16) * sizeof(uint16_t)); /* the pairs with a sum, in order */
    size_t n_seen = 0;
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
        for (size_t k = 0; k < n_seen; k++) {
            Key key = pair_key(seen[k] >> 8, seen[k] & 0xFF);
            if (table_find(&t->table, key) >= 0) count_in_group(t, groups->runs[r].group, key, sums[seen[k]]);
            sums[seen[k]] = 0;
        }
        n_seen = 0;
    }
    free(sums);
    free(seen);
}

/* Later (the floor lowered): `rescan` has just recorded every current occurrence of every
   stored pair, in ascending order, so each pair's positions, walked in order, give its count
   in each group in turn, with no lookup per occurrence. */
static void recount_stored(Trainer *t) {
    Groups *groups = t->groups;
    for (size_t index = 0; index < t->table.n && !t->status.failed; index++) {
        const Pair *pair = &t->table.pairs[index];
        if (pair->count < 0 || pair->block == NO_LIST) continue;
        const uint32_t *positions = pair_positions(t, pair);
        int32_t current = -1;
        int64_t sum = 0;
        for (uint32_t k = 0; k < pair->n; k++) {
            uint32_t w = weight_at(t, positions[k]);
            if (!w) continue; /* measured-only texts count for nothing */
            uint16_t g = group_at(groups, positions[k]);
            if (g != current) {
                if (current >= 0) count_in_group(t, (uint16_t)current, pair->key, sum);
                current = g;
                sum = 0;
            }
            sum += w;
        }
        if (current >= 0) count_in_group(t, (uint16_t)current, pair->key, sum);
    }
}

/* Every stored pair's count in each group, recounted, and the groups' heaps rebuilt. */
void group_recount(Trainer *t, int start) {
    Groups *groups = t->groups;
    size_t wanted = 1024;
    while (wanted < 8 * t->table.n) wanted *= 2; /* room for a few groups per pair */
    counts_free(&groups->counts);
    counts_rehash(&t->status, &groups->counts, wanted);
    for (int32_t g = 0; g < groups->n; g++) groups->heaps[g].n = 0;
    if (start) recount_bytes(t); /* the start from bytes (rescan(t, 1) only then) */
    else recount_stored(t);
    for (size_t i = 0; i < groups->counts.n_slots && !t->status.failed; i++) {
        GroupCount entry = groups->counts.slots[i];
        if (entry.count >= 0) push_group(t, entry.key, entry.count); /* each >= min_count */
    }
}

/* ---------------------------------------------------------------------------------------- */
/* A merge's records, summed per pair within one group                                       */

/* A merge's records come in position order, and a group's texts lie together, so the records
   of one group come together: summed per pair first, they reach the group counts once per
   distinct pair of the group instead of once per occurrence. The sums are kept by index, not
   by key, so that summing is an array access, never a hash lookup: a lost record's sum in its
   pair's entry (found when the global count fell, and just touched), a made record's in its
   entry among the pairs the merge made. The entries with a sum are listed in `pending` until
   the group changes. */

static int add_pending(Trainer *t, int32_t index) {
    Groups *groups = t->groups;
    groups->pending = grow(&t->status, groups->pending, &groups->pending_capacity,
                           groups->n_pending + 1, sizeof(int32_t));
    if (t->status.failed) return -1;
    groups->pending[groups->n_pending++] = index;
    return 0;
}

/* Group g's summed losses taken off its counts (a count never goes below 0, which also keeps
   the table's empty mark, a count below 0, for empty slots). */
static void flush_lost(Trainer *t, uint16_t g) {
    Groups *groups = t->groups;
    for (size_t k = 0; k < groups->n_pending; k++) {
        Pair *pair = &t->table.pairs[groups->pending[k]];
        int64_t lost = pair->group_sum;
        pair->group_sum = 0;
        GroupCount *entry = counts_find(&groups->counts, group_key(g, pair->key));
        if (entry) entry->count = entry->count > lost ? entry->count - lost : 0;
    }
    groups->n_pending = 0;
}

/* Group g's summed made pairs into its counts: each is a new entry (its key holds the new id),
   and its count there is whole, so it goes on the group's heap at once if it reaches
   min_count (and needs no entry otherwise: see count_in_group). */
static void flush_made(Trainer *t, uint16_t g) {
    Groups *groups = t->groups;
    Made *made = t->scratch.made;
    for (size_t k = 0; k < groups->n_pending && !t->status.failed; k++) {
        Made *m = &made[groups->pending[k]];
        Key counted = group_key(g, m->key);
        int64_t count = m->group_sum;
        m->group_sum = 0;
        if (count < t->min_count) continue;
        int added;
        GroupCount *entry = counts_add(&t->status, &groups->counts, counted, &added);
        if (!entry) break;
        entry->count = count; /* a new entry */
        push_group(t, counted, count);
    }
    groups->n_pending = 0;
}

/* The pairs a merge destroyed occurrences of, lowered within each occurrence's group. Only
   live stored pairs matter: a merged pair's group counts are never read again. */
void group_decrements(Trainer *t, const Record *lost, const int32_t *lost_pair, size_t n) {
    Groups *groups = t->groups;
    groups->n_pending = 0;
    int32_t current = -1;
    for (size_t k = 0; k < n && !t->status.failed; k++) {
        int32_t index = lost_pair[k];
        if (!lost[k].weight || index < 0 || t->table.pairs[index].count < 0) continue;
        uint16_t g = group_at(groups, lost[k].position);
        if (g != current) {
            if (current >= 0) flush_lost(t, (uint16_t)current);
            current = g;
        }
        Pair *pair = &t->table.pairs[index];
        if (!pair->group_sum && add_pending(t, index) < 0) return;
        pair->group_sum += lost[k].weight;
    }
    if (current >= 0) flush_lost(t, (uint16_t)current);
}

/* Each pair a merge made and the trainer kept: its count in each group. */
void group_count_made(Trainer *t) {
    Groups *groups = t->groups;
    Scratch *s = &t->scratch;
    groups->n_pending = 0;
    int32_t current = -1;
    for (size_t r = 0; r < s->n && !t->status.failed; r++) {
        Made *made = &s->made[s->record_made[r]];
        if (!s->records[r].weight || made->pair < 0) continue; /* weight 0, or not kept */
        uint16_t g = group_at(groups, s->records[r].position);
        if (g != current) {
            if (current >= 0) flush_made(t, (uint16_t)current);
            current = g;
        }
        if (!made->group_sum && add_pending(t, s->record_made[r]) < 0) return;
        made->group_sum += s->records[r].weight;
    }
    if (current >= 0 && !t->status.failed) flush_made(t, (uint16_t)current);
}

/* The best pair of one group, by its count there (the global entry's index); -1 when the
   group has none reaching min_count; -2 when the floor must be lowered first (the group's
   best stored count is below it, or it has none stored while pairs were left out). */
static int32_t best_pair_group(Trainer *t, int32_t group) {
    Groups *groups = t->groups;
    Heap *heap = &groups->heaps[group];
    while (heap->n && !t->status.failed) {
        Candidate top = heap_pop(heap);
        int32_t index = table_find(&t->table, top.key);
        if (index < 0 || t->table.pairs[index].count < 0) continue; /* merged or forgotten */
        const GroupCount *entry = counts_find(&groups->counts, group_key((uint32_t)group, top.key));
        int64_t count = entry ? entry->count : 0;
        if (count < t->min_count) continue; /* counts only fall: not this group's any more */
        Candidate current = {count, top.key, 0, 0};
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

/* The pair of the group with the most tokens that has one (ties: the lower group); *chosen
   says which group. -1 when no group has a pair reaching min_count.

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
        /* -2: pairs below the floor may beat this group's best: recount with a lower floor */
        t->floor = t->floor / 4 > t->min_count ? t->floor / 4 : t->min_count;
        rescan(t, 0);
    }
}
