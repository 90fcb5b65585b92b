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

typedef struct GroupTokens {
    int64_t tokens;
    int32_t group;
} GroupTokens;

const char *groups_init(Groups *groups, const Trainer *t, const int64_t *starts, size_t n_texts,
                        const int64_t *group_of_text, const int64_t *multiplicities, int parity) {
    int64_t largest = -1;
    for (size_t k = 0; k < n_texts; k++) {
        if (group_of_text[k] < 0 || group_of_text[k] >= MAX_GROUPS) return "groups must be from 0 to 65535";
        if (group_of_text[k] > largest) largest = group_of_text[k];
        if (multiplicities && (multiplicities[k] < 0 || multiplicities[k] > UINT32_MAX))
            return "multiplicities must be from 0 to 2**32 - 1";
    }
    groups->n = (int32_t)(largest + 1);
    groups->parity = parity;
    groups->runs = malloc((n_texts + 1) * sizeof(Run));
    groups->tokens = calloc((size_t)groups->n + 1, sizeof(int64_t));
    groups->replaced = calloc((size_t)groups->n + 1, sizeof(int64_t));
    groups->order = malloc(((size_t)groups->n + 1) * sizeof(GroupTokens));
    if (parity) groups->heaps = calloc((size_t)groups->n + 1, sizeof(Heap));
    if (!groups->runs || !groups->tokens || !groups->replaced || !groups->order
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

static void sums_free(PairSums *sums);

void groups_free(Groups *groups) {
    free(groups->runs);
    free(groups->tokens);
    free(groups->replaced);
    free(groups->order);
    counts_free(&groups->counts);
    if (groups->heaps) {
        for (int32_t g = 0; g < groups->n; g++) free(groups->heaps[g].items);
        free(groups->heaps);
    }
    free(groups->touched);
    sums_free(&groups->sums);
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
/* A merge's records, summed per pair within one group                                       */

/* A merge's records come in position order (and so does the walk of a recount), so those of
   one group come together: summed per pair first (a small table that stays in cache), they
   reach the group counts once per distinct pair of the group instead of once per occurrence,
   which is what made parity-aware training cost 1.7 times a shared one. */
static PairSum *sums_find(Status *status, PairSums *sums, Key key) {
    if (2 * (sums->n + 1) > sums->n_slots) {
        size_t n_slots = sums->n_slots ? 2 * sums->n_slots : 256;
        int32_t *slots = malloc(n_slots * sizeof *slots);
        if (!slots) {
            status->failed = 1;
            return NULL;
        }
        memset(slots, 0xFF, n_slots * sizeof *slots);
        for (size_t i = 0; i < sums->n; i++) {
            size_t slot = hash_key(sums->entries[i].key) & (n_slots - 1);
            while (slots[slot] >= 0) slot = (slot + 1) & (n_slots - 1);
            slots[slot] = (int32_t)i;
        }
        free(sums->slots);
        sums->slots = slots;
        sums->n_slots = n_slots;
    }
    size_t mask = sums->n_slots - 1, slot = hash_key(key) & mask;
    for (; sums->slots[slot] >= 0; slot = (slot + 1) & mask)
        if (sums->entries[sums->slots[slot]].key == key) return &sums->entries[sums->slots[slot]];
    sums->entries = grow(status, sums->entries, &sums->capacity, sums->n + 1, sizeof *sums->entries);
    if (status->failed) return NULL;
    sums->slots[slot] = (int32_t)sums->n;
    sums->entries[sums->n] = (PairSum){key, 0};
    return &sums->entries[sums->n++];
}

/* Empty again: every slot an entry took is cleared (all of them, so no probe chain breaks). */
static void sums_clear(PairSums *sums) {
    size_t mask = sums->n_slots - 1;
    for (size_t i = 0; i < sums->n; i++) {
        size_t slot = hash_key(sums->entries[i].key) & mask;
        while (sums->slots[slot] != (int32_t)i) slot = (slot + 1) & mask;
        sums->slots[slot] = -1;
    }
    sums->n = 0;
}

static void sums_free(PairSums *sums) {
    free(sums->slots);
    free(sums->entries);
    memset(sums, 0, sizeof *sums);
}

/* Group g's sums added to its counts (a recount: no entry is new to the trainer). */
static void sums_into_counts(Trainer *t, uint16_t g) {
    Groups *groups = t->groups;
    PairSums *sums = &groups->sums;
    for (size_t i = 0; i < sums->n && !t->status.failed; i++) {
        int added;
        GroupCount *entry = counts_add(&t->status, &groups->counts,
                                       group_key(g, sums->entries[i].key), &added);
        if (entry) entry->count += sums->entries[i].weight;
    }
    sums_clear(sums);
}

/* Group g's sums taken off its counts (a count never goes below 0, which also keeps the
   table's empty mark, a count below 0, for empty slots). */
static void flush_lost(Groups *groups, uint16_t g) {
    PairSums *sums = &groups->sums;
    for (size_t i = 0; i < sums->n; i++) {
        GroupCount *entry = counts_find(&groups->counts, group_key(g, sums->entries[i].key));
        if (entry) entry->count = entry->count > sums->entries[i].weight
                                      ? entry->count - sums->entries[i].weight : 0;
    }
    sums_clear(sums);
}

/* Group g's sums added to its counts; the entries this makes are noted in `touched`. */
static void flush_made(Trainer *t, uint16_t g) {
    Groups *groups = t->groups;
    PairSums *sums = &groups->sums;
    for (size_t i = 0; i < sums->n && !t->status.failed; i++) {
        if (made_entry(t, sums->entries[i].key) < 0) continue; /* not kept: below the floor */
        Key counted = group_key(g, sums->entries[i].key);
        int added;
        GroupCount *entry = counts_add(&t->status, &groups->counts, counted, &added);
        if (!entry) break;
        if (added) {
            groups->touched = grow(&t->status, groups->touched, &groups->touched_capacity,
                                   groups->n_touched + 1, sizeof(Key));
            if (t->status.failed) break;
            groups->touched[groups->n_touched++] = counted;
        }
        entry->count += sums->entries[i].weight;
    }
    sums_clear(sums);
}

/* Every stored pair's count in each group, recounted from the current tokens, and the
   groups' heaps rebuilt (at the start, and whenever the floor is lowered). */
void group_recount(Trainer *t) {
    Groups *groups = t->groups;
    counts_free(&groups->counts);
    counts_rehash(&t->status, &groups->counts, 1024);
    for (int32_t g = 0; g < groups->n; g++) groups->heaps[g].n = 0;
    PairWalk walk = pair_walk(t);
    int32_t current = -1;
    while (!t->status.failed && next_pair(&walk)) {
        uint32_t w = weight_at(t, walk.left_start);
        Key key = pair_key(walk.left, walk.right);
        /* Pairs below the floor are kept nowhere; measured-only texts count for nothing. */
        if (!w || table_find(&t->table, key) < 0) continue;
        uint16_t g = group_at(groups, walk.left_start); /* the walk goes left to right */
        if (g != current) {
            if (current >= 0) sums_into_counts(t, (uint16_t)current);
            current = g;
        }
        PairSum *sum = sums_find(&t->status, &groups->sums, key);
        if (sum) sum->weight += w;
    }
    if (current >= 0 && !t->status.failed) sums_into_counts(t, (uint16_t)current);
    for (size_t i = 0; i < groups->counts.n_slots && !t->status.failed; i++) {
        GroupCount entry = groups->counts.slots[i];
        if (entry.count >= 0 && entry.count >= t->min_count) push_group(t, entry.key, entry.count);
    }
}

/* The pairs a merge destroyed occurrences of, lowered within each occurrence's group. */
void group_decrements(Trainer *t, const Record *lost, size_t n) {
    Groups *groups = t->groups;
    int32_t current = -1;
    for (size_t k = 0; k < n && !t->status.failed; k++) {
        if (!lost[k].weight) continue;
        uint16_t g = group_at(groups, lost[k].position);
        if (g != current) {
            if (current >= 0) flush_lost(groups, (uint16_t)current);
            current = g;
        }
        PairSum *sum = sums_find(&t->status, &groups->sums, lost[k].key);
        if (sum) sum->weight += lost[k].weight;
    }
    if (current >= 0) flush_lost(groups, (uint16_t)current);
}

/* Each pair a merge made and the trainer kept: its count in each group. Its keys hold the
   new id, so they are new entries; those reaching min_count go on their group's heap. */
void group_count_made(Trainer *t) {
    Groups *groups = t->groups;
    Scratch *s = &t->scratch;
    groups->n_touched = 0;
    int32_t current = -1;
    for (size_t r = 0; r < s->n && !t->status.failed; r++) {
        if (!s->records[r].weight) continue; /* whether the trainer kept it: at the flush */
        uint16_t g = group_at(groups, s->records[r].position);
        if (g != current) {
            if (current >= 0) flush_made(t, (uint16_t)current);
            current = g;
        }
        PairSum *sum = sums_find(&t->status, &groups->sums, s->records[r].key);
        if (sum) sum->weight += s->records[r].weight;
    }
    if (current >= 0 && !t->status.failed) flush_made(t, (uint16_t)current);
    for (size_t k = 0; k < groups->n_touched && !t->status.failed; k++) {
        const GroupCount *entry = counts_find(&groups->counts, groups->touched[k]);
        if (entry->count >= t->min_count) push_group(t, entry->key, entry->count);
    }
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

/* Most tokens first; ties to the lower group (the smaller language code). */
static int worst_first(const void *a, const void *b) {
    const GroupTokens *x = a, *y = b;
    if (x->tokens != y->tokens) return x->tokens > y->tokens ? -1 : 1;
    return (x->group > y->group) - (x->group < y->group);
}

/* The pair of the group with the most tokens that has one; *chosen says which group. -1
   when no group has a pair reaching min_count. */
int32_t best_pair_parity(Trainer *t, int32_t *chosen) {
    Groups *groups = t->groups;
    GroupTokens *order = groups->order;
    for (;;) {
        /* Mostly the group with the most tokens has a pair: found in one pass, no sort. */
        int32_t worst = 0;
        for (int32_t g = 1; g < groups->n; g++)
            if (groups->tokens[g] > groups->tokens[worst]) worst = g;
        int32_t first = best_pair_group(t, worst);
        if (first >= 0) {
            *chosen = worst;
            return first;
        }
        if (first == -2 && !t->status.failed) { /* as the loop below would, at its start */
            t->floor = t->floor / 4 > t->min_count ? t->floor / 4 : t->min_count;
            rescan(t, 0);
            continue;
        }
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
