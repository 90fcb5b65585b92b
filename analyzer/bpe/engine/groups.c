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
    for (size_t k = 0; k < n_texts; k++) {
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
    return NULL;
}

void groups_free(Groups *groups) {
    free(groups->runs);
    free(groups->tokens);
    free(groups->replaced);
    free(groups->order);
    table_free(&groups->counts);
    if (groups->heaps) {
        for (int32_t g = 0; g < groups->n; g++) free(groups->heaps[g].items);
        free(groups->heaps);
    }
    free(groups->touched);
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

/* Push entry `entry` of the group counts on its group's heap. The candidate carries the
   plain pair key, so that ties fall as in the global heap. */
void push_group(Trainer *t, int32_t entry) {
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

/* Every stored pair's count in each group, recounted from the current tokens, and the
   groups' heaps rebuilt (at the start, and whenever the floor is lowered). */
void group_recount(Trainer *t) {
    Groups *groups = t->groups;
    table_free(&groups->counts);
    table_rehash(&t->status, &groups->counts, 1024);
    for (int32_t g = 0; g < groups->n; g++) groups->heaps[g].n = 0;
    PairWalk walk = pair_walk(t);
    while (!t->status.failed && next_pair(&walk)) {
        uint32_t w = weight_at(t, walk.left_start);
        Key key = pair_key(walk.left, walk.right);
        /* Pairs below the floor are kept nowhere; measured-only texts count for nothing. */
        if (!w || table_find(&t->table, key) < 0) continue;
        Key counted = group_key(group_at(groups, walk.left_start), key);
        int32_t entry = table_find(&groups->counts, counted);
        if (entry < 0) entry = table_add(&t->status, &groups->counts, counted, 0);
        if (entry < 0) break;
        groups->counts.pairs[entry].count += w;
    }
    for (size_t i = 0; i < groups->counts.n && !t->status.failed; i++) {
        if (groups->counts.pairs[i].count >= t->min_count) push_group(t, (int32_t)i);
    }
}

/* The pairs a merge destroyed occurrences of, lowered within each occurrence's group. */
void group_decrements(Trainer *t, const Record *lost, size_t n) {
    Groups *groups = t->groups;
    for (size_t k = 0; k < n; k++) {
        if (!lost[k].weight) continue;
        Key counted = group_key(group_at(groups, lost[k].position), lost[k].key);
        int32_t entry = table_find(&groups->counts, counted);
        if (entry >= 0 && groups->counts.pairs[entry].count > 0)
            groups->counts.pairs[entry].count -= lost[k].weight;
    }
}

/* Each pair a merge made and the trainer kept: its count in each group. Its keys hold the
   new id, so they are new entries; those reaching min_count go on their group's heap. */
void group_count_made(Trainer *t) {
    Groups *groups = t->groups;
    Scratch *s = &t->scratch;
    groups->n_touched = 0;
    for (size_t r = 0; r < s->n && !t->status.failed; r++) {
        if (!s->records[r].weight || made_entry(t, s->records[r].key) < 0) continue;
        Key counted = group_key(group_at(groups, s->records[r].position), s->records[r].key);
        int32_t entry = table_find(&groups->counts, counted);
        if (entry < 0) {
            entry = table_add(&t->status, &groups->counts, counted, 0);
            groups->touched = grow(&t->status, groups->touched, &groups->touched_capacity,
                                   groups->n_touched + 1, sizeof(int32_t));
            if (entry < 0 || t->status.failed) return;
            groups->touched[groups->n_touched++] = entry;
        }
        groups->counts.pairs[entry].count += s->records[r].weight;
    }
    for (size_t k = 0; k < groups->n_touched && !t->status.failed; k++) {
        if (groups->counts.pairs[groups->touched[k]].count >= t->min_count)
            push_group(t, groups->touched[k]);
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
