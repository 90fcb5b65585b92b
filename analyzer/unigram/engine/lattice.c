/* The piece index, and one text's lattice (reference: Trainer._nodes, _viterbi, expected). */

#define _DEFAULT_SOURCE  /* madvise */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "unigram.h"

void populate(void *block, size_t bytes) {
#ifdef MADV_POPULATE_WRITE
    const uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    const uintptr_t from = ((uintptr_t)block + page - 1) & ~(page - 1);
    const uintptr_t to = ((uintptr_t)block + bytes) & ~(page - 1);
    if (page && to > from) madvise((void *)from, to - from, MADV_POPULATE_WRITE);  /* a hint */
#else
    (void)block;
    (void)bytes;
#endif
}

static uint64_t key_hash(uint64_t hi, uint64_t lo, uint32_t len) {
    uint64_t h = hi * 0x9E3779B97F4A7C15ULL ^ (lo + 0x632BE59BD9B4E019ULL + len) * 0xC2B2AE3D27D4EB4FULL;
    h ^= h >> 29;
    h *= 0xBF58476D1CE4E5B9ULL;
    return h ^ (h >> 32);
}

/* The block of keys that begin with the bytes of `pair` (first x 256 + second), and where in
   it a key's probe begins. */
static inline const Slot *probe_start(const PieceIndex *index, size_t pair, Key key, size_t *at) {
    const Block block = index->blocks[pair];
    *at = key_hash(key.hi, key.lo, key.len) & block.mask;
    return index->slots + block.first;
}

static const Slot *index_find(const PieceIndex *index, size_t pair, Key key) {
    size_t at;
    const Slot *block = probe_start(index, pair, key, &at);
    const uint32_t mask = index->blocks[pair].mask;
    for (;;) {
        const Slot *slot = &block[at];
        if (slot->len == 0) return NULL;
        if (slot->hi == key.hi && slot->lo == key.lo && slot->len == key.len) return slot;
        at = (at + 1) & mask;
    }
}

/* The pair (first two bytes) of a key of two bytes or more. */
static inline size_t key_pair(Key key) { return (size_t)(key.hi >> 48); }

/* Insert a key of 3 bytes or more that is not there yet (index_build puts each once): its
   id, or -1 for a prefix that is no piece. */
static void index_put(PieceIndex *index, Key key, int32_t id) {
    const size_t pair = key_pair(key);
    size_t at;
    Slot *block = (Slot *)probe_start(index, pair, key, &at);
    while (block[at].len) at = (at + 1) & index->blocks[pair].mask;
    block[at] = (Slot){key.hi, key.lo, id, key.len};
}

/* A code of the first table (one byte) or the second (two) and the id there: -2 begins no
   piece, -1 a prefix only, else the piece's id (kept once set). */
static inline void mark(int32_t *code, int32_t id) {
    if (id >= 0) *code = id;
    else if (*code == -2) *code = -1;
}

#define BUILD_AHEAD 8  /* keys */

/* A thread's share of the index build: the pairs [lo, hi), whose long pieces are
   sorted[bucket[lo] .. bucket[hi]). */
typedef struct {
    PieceIndex *index;
    Position *sorted;
    uint8_t *shared;
    size_t *bucket;  /* per pair, where its pieces begin in `sorted`; then its keys */
    size_t lo, hi;
} IndexShare;

/* Each pair's pieces sorted (they share their first two bytes), the bytes each shares with the
   one before (at least 2: a pair's first shares less with the pair before), and the pair's
   number of keys: those not put by a piece before (the prefixes past what is shared). */
static void *index_sort(void *arg) {
    IndexShare *share = arg;
    for (size_t pair = share->lo; pair < share->hi; pair++) {
        const size_t from = share->bucket[pair], to = share->bucket[pair + 1];
        sort_positions(share->sorted + from, to - from, 2);
    }
    return NULL;
}

/* The share's pieces put in their pairs' blocks, a few pieces ahead fetched. */
static void *index_fill(void *arg) {
    IndexShare *share = arg;
    PieceIndex *index = share->index;
    const Position *sorted = share->sorted;
    const uint8_t *shared = share->shared;
    const size_t first = share->bucket[share->lo], last = share->bucket[share->hi];
    for (size_t j = first; j < last; j++) {
        if (j + BUILD_AHEAD < last) {  /* a later piece's new keys' slots fetched */
            const Position *later = &sorted[j + BUILD_AHEAD];
            const Key whole = {later->hi, later->lo, later->len};
            for (uint32_t l = shared[j + BUILD_AHEAD] + 1u; l <= later->len; l++) {
                size_t at;
                const Slot *block = probe_start(index, key_pair(whole), key_prefix(whole, l), &at);
                __builtin_prefetch(&block[at]);
            }
        }
        const Key whole = {sorted[j].hi, sorted[j].lo, sorted[j].len};
        for (uint32_t l = shared[j] + 1u; l <= whole.len; l++)
            index_put(index, key_prefix(whole, l), l == whole.len ? (int32_t)sorted[j].chunk : -1);
    }
    return NULL;
}

const char *index_build(PieceIndex *index, const Model *model, int threads) {
    index_free(index);
    if (threads < 1) threads = 1;
    if (threads > MAX_THREADS) threads = MAX_THREADS;
    /* One and two bytes in direct tables (every lookup begins there, the cache keeps them). */
    index->bytes = malloc(256 * sizeof(int32_t));
    index->pairs = malloc(65536 * sizeof(int32_t));
    index->blocks = calloc(65536, sizeof(Block));
    /* The pieces of 3 bytes or more by pair, each pair's sorted by their bytes: a piece's
       prefixes up to what it shares with the one before were put by that one (or earlier), and
       the rest are keys no piece has put yet (those that share more sort between them). So
       each key is put once, each pair's number of keys known before, and its block sized for
       them (at most half full). Pairs are sorted and filled on several threads, each its
       share of the pieces. */
    size_t longer = 0;
    for (size_t i = 0; i < model->n; i++) longer += model->keys[i].len >= 3 && !is_dead(model, i);
    Position *sorted = malloc((longer ? longer : 1) * sizeof *sorted);
    uint8_t *shared = malloc(longer ? longer : 1);
    size_t *bucket = calloc(65536 + 1, sizeof *bucket);
    if (!index->bytes || !index->pairs || !index->blocks || !sorted || !shared || !bucket) {
        free(sorted);
        free(shared);
        free(bucket);
        index_free(index);
        return "out of memory";
    }
    for (int i = 0; i < 256; i++) index->bytes[i] = -2;
    for (int i = 0; i < 65536; i++) index->pairs[i] = -2;
    for (size_t i = 0; i < model->n; i++) {
        const Key whole = model->keys[i];
        if (whole.len == 0 || is_dead(model, i)) continue;
        const uint8_t first = key_byte(whole, 0);
        mark(&index->bytes[first], whole.len == 1 ? (int32_t)i : -1);
        if (whole.len < 2) continue;
        mark(&index->pairs[key_pair(whole)], whole.len == 2 ? (int32_t)i : -1);
        if (whole.len >= 3) bucket[key_pair(whole) + 1]++;
    }
    for (size_t pair = 0; pair < 65536; pair++) bucket[pair + 1] += bucket[pair];
    for (size_t i = 0; i < model->n; i++) {  /* each pair's pieces at its place, as they come */
        const Key whole = model->keys[i];
        if (whole.len >= 3 && !is_dead(model, i))
            sorted[bucket[key_pair(whole)]++] = (Position){whole.hi, whole.lo, whole.len, (uint32_t)i};
    }
    for (size_t pair = 65536; pair > 0; pair--) bucket[pair] = bucket[pair - 1];  /* back to starts */
    bucket[0] = 0;
    IndexShare shares[MAX_THREADS];
    size_t pair = 0;
    for (int i = 0; i < threads; i++) {  /* about longer / threads pieces each */
        shares[i] = (IndexShare){index, sorted, shared, bucket, pair, pair};
        const size_t goal = longer * (size_t)(i + 1) / (size_t)threads;
        while (pair < 65536 && (i == threads - 1 || bucket[pair + 1] <= goal)) pair++;
        shares[i].hi = pair;
    }
    on_threads(index_sort, shares, sizeof *shares, threads);
    size_t total = 1;  /* slot 0 stays empty: the block of a pair without keys */
    for (size_t p = 0; p < 65536; p++) {
        size_t keys = 0;
        for (size_t j = bucket[p]; j < bucket[p + 1]; j++) {
            const uint32_t c = j > bucket[p] ? common_prefix(&sorted[j - 1], &sorted[j]) : 0;
            shared[j] = (uint8_t)(c > 2 ? c : 2);
            keys += sorted[j].len - shared[j];
        }
        if (!keys) continue;
        size_t size = 2;
        while (size < 2 * keys) size *= 2;
        index->blocks[p] = (Block){(uint32_t)total, (uint32_t)(size - 1)};
        total += size;
        if (total > UINT32_MAX) break;
    }
    index->slots = total > UINT32_MAX ? NULL : calloc(total, sizeof(Slot));
    if (index->slots) {
        if (threads > 1) populate(index->slots, total * sizeof(Slot));
        on_threads(index_fill, shares, sizeof *shares, threads);
    }
    free(sorted);
    free(shared);
    free(bucket);
    if (!index->slots) {
        index_free(index);
        return "out of memory";
    }
    return NULL;
}

void index_free(PieceIndex *index) {
    free(index->slots);
    free(index->blocks);
    free(index->bytes);
    free(index->pairs);
    index->slots = NULL;
    index->blocks = NULL;
    index->bytes = index->pairs = NULL;
}

int lattice_reserve(Lattice *lattice, size_t n, int max) {
    lattice->max = max;
    if (n <= lattice->capacity && lattice->alpha) return 0;
    size_t cap = lattice->capacity ? lattice->capacity : 64;
    while (cap < n) cap *= 2;
    lattice_free(lattice);
    lattice->alpha = malloc((cap + 1) * sizeof(double));
    lattice->beta = malloc((cap + 1) * sizeof(double));
    lattice->best = malloc((cap + 1) * sizeof(double));
    lattice->back = malloc((cap + 1) * sizeof(int64_t));
    lattice->alpha_exp = malloc((cap + 1) * sizeof(int));
    lattice->beta_exp = malloc((cap + 1) * sizeof(int));
    size_t list = cap * (size_t)max;
    lattice->list_start = malloc(list * sizeof(int32_t));
    lattice->list_length = malloc(list * sizeof(int32_t));
    lattice->list_id = malloc(list * sizeof(int32_t));
    lattice->list_by_end = malloc(list * sizeof(int32_t));
    lattice->list_probability = malloc(list * sizeof(double));
    lattice->list_fixed = malloc(list * sizeof(int64_t));
    lattice->end_first = malloc((cap + 2) * sizeof(int32_t));
    if (!lattice->alpha || !lattice->beta || !lattice->best || !lattice->back
        || !lattice->alpha_exp || !lattice->beta_exp || !lattice->list_start
        || !lattice->list_length || !lattice->list_id || !lattice->list_by_end
        || !lattice->list_probability || !lattice->list_fixed || !lattice->end_first) {
        lattice_free(lattice);
        return -1;
    }
    lattice->capacity = cap;
    return 0;
}

void lattice_free(Lattice *lattice) {
    free(lattice->alpha);
    free(lattice->beta);
    free(lattice->best);
    free(lattice->back);
    free(lattice->alpha_exp);
    free(lattice->beta_exp);
    free(lattice->list_start);
    free(lattice->list_length);
    free(lattice->list_id);
    free(lattice->list_by_end);
    free(lattice->list_probability);
    free(lattice->list_fixed);
    free(lattice->end_first);
    lattice->alpha_exp = lattice->beta_exp = NULL;
    lattice->list_start = lattice->list_length = lattice->list_id = lattice->list_by_end = NULL;
    lattice->end_first = NULL;
    lattice->list_probability = NULL;
    lattice->list_fixed = NULL;
    lattice->alpha = lattice->beta = lattice->best = NULL;
    lattice->back = NULL;
    lattice->capacity = 0;
}

#define PREFETCH_AHEAD 4  /* positions */

/* Every piece at every position of text[0..n), as the node cache keeps them: the ids
   and lengths of the pieces found (no unknown nodes), by position then length, from ids[0]
   and lengths[0] (room for n x max), and how many begin at each position into at[0..n);
   their number. `seen`, when given, learns where each piece of two bytes or more is first
   found (chunk, position). The slots of every key PREFETCH_AHEAD positions on are fetched
   while these are looked up. */
size_t text_nodes(const PieceIndex *index, const uint8_t *text, size_t n, int max,
                  int32_t *ids, uint8_t *lengths, uint8_t *at, Seen *seen, uint32_t chunk) {
    size_t m = 0;
    for (size_t s = 0; s < n; s++) {
        if (s + PREFETCH_AHEAD + 3 <= n) {
            const size_t a = s + PREFETCH_AHEAD, pair = (size_t)text[a] << 8 | text[a + 1];
            const Block block = index->blocks[pair];
            Key key = {0, 0, 0};
            key = key_push(key_push(key, text[a]), text[a + 1]);
            for (size_t e = a + 2; e < n && key.len < (uint32_t)max && block.mask; e++) {
                key = key_push(key, text[e]);
                __builtin_prefetch(&index->slots[block.first + (key_hash(key.hi, key.lo, key.len) & block.mask)]);
            }
        }
        const size_t before = m;
        const int32_t one = index->bytes[text[s]];
        if (one >= 0) {
            ids[m] = one;
            lengths[m++] = 1;
        }
        if (one != -2 && s + 1 < n && max >= 2) {
            const size_t pair = (size_t)text[s] << 8 | text[s + 1];
            const int32_t two = index->pairs[pair];
            if (two >= 0) {
                ids[m] = two;
                lengths[m++] = 2;
            }
            if (two != -2) {
                Key key = {0, 0, 0};
                key = key_push(key_push(key, text[s]), text[s + 1]);
                for (size_t e = s + 2; e < n && key.len < (uint32_t)max; e++) {
                    key = key_push(key, text[e]);
                    const Slot *slot = index_find(index, pair, key);
                    if (!slot) break;
                    if (slot->id >= 0) {
                        ids[m] = slot->id;
                        lengths[m++] = (uint8_t)key.len;
                    }
                }
            }
        }
        at[s] = (uint8_t)(m - before);
        if (seen)
            for (size_t j = before; j < m; j++) {
                const uint32_t id = (uint32_t)ids[j];
                if (lengths[j] < 2 || seen->found[id >> 6] >> (id & 63) & 1) continue;
                seen->found[id >> 6] |= (uint64_t)1 << (id & 63);
                seen->place[id] = (Place){chunk, (uint32_t)s};
            }
    }
    return m;
}

void nodes_free(Nodes *nodes) {
    free(nodes->first);
    free(nodes->at);
    free(nodes->lengths);
    free(nodes->ids);
    free(nodes->where);
    memset(nodes, 0, sizeof *nodes);
}

/* Keep the nodes of chunks [first, last) whose piece stays (renumber[id] >= 0), renumbered, in
   place from the first of them on; their number. first[k] of those chunks follows (where
   their nodes now begin); first[last] is the next range's to set. */
size_t nodes_keep(Nodes *nodes, const Chunks *chunks, const int32_t *renumber, size_t first,
                  size_t last) {
    if (first >= last) return 0;
    const size_t begin = (size_t)nodes->first[first];
    size_t kept = begin, read = begin;
    for (size_t k = first; k < last; k++) {
        nodes->first[k] = (int64_t)kept;
        for (int64_t p = chunks->offsets[k]; p < chunks->offsets[k + 1]; p++) {
            int count = nodes->at[p], left = 0;
            for (int j = 0; j < count; j++, read++) {
                int32_t id = renumber[nodes->ids[read]];
                if (id < 0) continue;
                nodes->ids[kept] = id;
                nodes->lengths[kept] = nodes->lengths[read];
                kept++;
                left++;
            }
            nodes->at[p] = (uint8_t)left;
        }
    }
    return kept - begin;
}

double min_score(const Model *model) {  /* of the live pieces; 0 when there is none */
    double low = 0.0;
    int first = 1;
    for (size_t i = 0; i < model->n; i++)
        if (!is_dead(model, i) && (first || model->scores[i] < low)) {
            low = model->scores[i];
            first = 0;
        }
    return low;
}

/* value x 2^exponent, as the reference's `scaled`. */
static inline double scaled(double value, int exponent) {
    return exponent ? ldexp(value, exponent) : value;
}

/* A sum renormalized where it left [2^-512, 2^512), as the reference's `normalized`. */
static inline void normalized(double total, int exponent, double *value, int *power) {
    if (total != 0.0 && !(total >= RESCALE_BELOW && total < RESCALE_FROM)) {
        int shift;
        *value = frexp(total, &shift);
        *power = exponent + shift;
    } else {
        *value = total;
        *power = exponent;
    }
}

/* A non-negative expected count in units of 1/FIXED, rounded half up (the reference's
   to_fixed): floor(x + 0.5), which for x >= 0 the conversion's truncation gives. */
static inline int64_t to_fixed(double value) {
    return (int64_t)(value * FIXED_SCALE + 0.5);
}

/* The E-step on one chunk, the general way (reference: Trainer.expected), every sum
   renormalized where it leaves [2^-512, 2^512): forward-
   backward in probabilities (`probability[id]`, `unknown` for an unknown node), adding count x
   marginal (in units of 1/FIXED) to each piece's expected count. The nodes are listed by start
   (lengths ascending, an unknown node where a position has no one-byte piece) and by end
   through a counting sort that keeps starts ascending: the reference's orders of summation. */
static void chunk_expect_scaled(Lattice *lattice, const uint8_t *at, const uint8_t *lengths,
                                const int32_t *ids, size_t n, const double *probability,
                                double unknown, int64_t count, int64_t *expected) {
    int32_t *start = lattice->list_start, *length = lattice->list_length, *id = lattice->list_id;
    int32_t *by_end = lattice->list_by_end, *end_first = lattice->end_first;
    double *p = lattice->list_probability;
    size_t m = 0, node = 0;
    for (size_t s = 0; s < n; s++) {
        const int here = at[s];
        if (here == 0 || lengths[node] != 1) {
            start[m] = (int32_t)s;
            length[m] = 1;
            id[m] = -1;
            p[m++] = unknown;
        }
        for (int j = 0; j < here; j++, node++) {
            start[m] = (int32_t)s;
            length[m] = lengths[node];
            id[m] = ids[node];
            p[m++] = probability[ids[node]];
        }
    }
    for (size_t e = 0; e <= n + 1; e++) end_first[e] = 0;
    for (size_t i = 0; i < m; i++) end_first[start[i] + length[i] + 1]++;
    for (size_t e = 1; e <= n + 1; e++) end_first[e] += end_first[e - 1];
    for (size_t i = 0; i < m; i++) by_end[end_first[start[i] + length[i]]++] = (int32_t)i;
    /* end_first[e] is now where end e + 1's nodes begin: end e's are end_first[e - 1] .. end_first[e] */
    double *alpha = lattice->alpha, *beta = lattice->beta;
    int *alpha_exp = lattice->alpha_exp, *beta_exp = lattice->beta_exp;
    alpha[0] = 1.0;
    alpha_exp[0] = 0;
    for (size_t e = 1; e <= n; e++) {
        const int base = alpha_exp[e - 1];
        double total = 0.0;
        for (int32_t j = end_first[e - 1]; j < end_first[e]; j++) {
            const int32_t i = by_end[j];
            total += scaled(alpha[start[i]], alpha_exp[start[i]] - base) * p[i];
        }
        normalized(total, base, &alpha[e], &alpha_exp[e]);
    }
    beta[n] = 1.0;
    beta_exp[n] = 0;
    size_t i = m;
    for (size_t s = n; s-- > 0;) {
        size_t first = i;
        while (first > 0 && (size_t)start[first - 1] == s) first--;
        const int base = beta_exp[s + 1];
        double total = 0.0;
        for (size_t j = first; j < i; j++)
            total += scaled(beta[s + (size_t)length[j]], beta_exp[s + (size_t)length[j]] - base) * p[j];
        normalized(total, base, &beta[s], &beta_exp[s]);
        i = first;
    }
    if (alpha[n] == 0.0) return;  /* every path underflowed: the chunk adds nothing */
    for (size_t j = 0; j < m; j++) {
        if (id[j] < 0) continue;
        const size_t e = (size_t)start[j] + (size_t)length[j];
        double marginal = scaled(alpha[start[j]] * p[j] * beta[e] / alpha[n],
                                 alpha_exp[start[j]] + beta_exp[e] - alpha_exp[n]);
        expected[id[j]] += to_fixed((double)count * marginal);
    }
}

/* In range: a forward or backward sum the general path keeps as it is (exponent 0). */
static inline int plain(double total) {
    return total == 0.0 || (total >= RESCALE_BELOW && total < RESCALE_FROM);
}

/* chunk_expect without renormalizing: 0 (and nothing added) when some forward or backward sum
   leaves [2^-512, 2^512), where the general path would rescale. Otherwise every exponent of
   the general path is 0 and this computes its very floats: the forward sums are pushed from
   each start in ascending order, so each end adds its nodes in start order as the general
   path (and the reference) do; the backward sums take a start's nodes in list order (the
   unknown node first, then lengths ascending). Two passes over the nodes: the forward one
   looks each node's probability up once; the backward one works out a start's marginals as
   soon as its ends' backward sums are known, and they are added once it finished in range
   (the expected counts are integers, so the order of the additions does not matter). */
static int chunk_expect_plain(Lattice *lattice, const uint8_t *at, const uint8_t *lengths,
                              const int32_t *ids, size_t n, const double *probability,
                              double unknown, int64_t count, int64_t *expected) {
    double *alpha = lattice->alpha, *beta = lattice->beta, *p = lattice->list_probability;
    int64_t *fixed = lattice->list_fixed;
    for (size_t e = 0; e <= n; e++) alpha[e] = 0.0;
    /* Each start has exactly one node of one byte (its piece's, or else the unknown one), the
       last node to end at the next position: that sum is carried in a register (`a`), not
       stored and read back, which is the whole pass's critical path. */
    double a = 1.0;
    size_t m = 0;  /* nodes of the chunk (unknown ones not included) */
    for (size_t s = 0; s < n; s++) {
        if (!plain(a)) return 0;  /* a = alpha[s], complete: every node ending at s starts before */
        alpha[s] = a;
        const size_t end = m + at[s];
        double q = unknown;
        if (m < end && lengths[m] == 1) {
            q = probability[ids[m]];
            p[m++] = q;
        }
        const double next = alpha[s + 1] + a * q;
        for (; m < end; m++) {
            const double longer = probability[ids[m]];
            p[m] = longer;
            alpha[s + lengths[m]] += a * longer;
        }
        a = next;
    }
    if (!plain(a)) return 0;
    alpha[n] = a;
    const int adds = a != 0.0;  /* 0: every path underflowed, the chunk adds nothing */
    /* Backward, the one-byte node first in each start's sum (0.0 + x is x, for x >= 0), its end's
       sum in a register. */
    beta[n] = 1.0;
    double b = 1.0;
    for (size_t s = n, end = m; s-- > 0;) {
        const size_t first = end - at[s];
        size_t j = first;
        double total;
        if (first < end && lengths[first] == 1) total = b * p[j++];
        else total = b * unknown;
        for (; j < end; j++) total += beta[s + lengths[j]] * p[j];
        if (!plain(total)) return 0;
        beta[s] = b = total;
        if (adds)
            for (j = first; j < end; j++) {
                const double marginal = alpha[s] * p[j] * beta[s + lengths[j]] / alpha[n];
                fixed[j] = to_fixed((double)count * marginal);
            }
        end = first;
    }
    if (adds)
        for (size_t j = 0; j < m; j++) expected[ids[j]] += fixed[j];
    return 1;
}

/* The E-step on one chunk of n bytes from its nodes (at[s] of them begin at s, their lengths
   and ids in order of position and length): count x each node's marginal added to its piece's
   expected count (in units of 1/FIXED). Most chunks take the plain path; one whose sums leave
   the doubles' comfortable range, the general one. */
void chunk_expect(Lattice *lattice, const uint8_t *at, const uint8_t *lengths, const int32_t *ids,
                  size_t n, const double *probability, double unknown, int64_t count,
                  int64_t *expected) {
    if (!chunk_expect_plain(lattice, at, lengths, ids, n, probability, unknown, count, expected))
        chunk_expect_scaled(lattice, at, lengths, ids, n, probability, unknown, count, expected);
}

/* The best path from a chunk's nodes (as chunk_expect takes them; ids into `path`, at most n,
   their number; 0 when there is none), scored by `scores` (`unknown` for an unknown node).
   The reference's path: pushing from each reached start in ascending order,
   each end meets its nodes in start order and keeps the first with the strictly highest
   score. The n bytes may be a window of a chunk: nodes ending past it are left out, and
   `skip_whole` leaves out the node spanning all of it; a dead piece's node is no node.
   lattice->best[e] is left the best path's score to each end (-inf: not reached). */
size_t nodes_viterbi(Lattice *lattice, const uint8_t *at, const uint8_t *lengths,
                     const int32_t *ids, size_t n, const double *scores, double unknown,
                     int skip_whole, int32_t *path) {
    /* best[e] = -inf: e not reached. Every live path's score is finite, so the first node to
       reach an end is taken as the reference takes it, and a dead piece's (-inf) never is; a
       node from an end not reached scores -inf too, so it needs no test of its own. As in
       chunk_expect, each start's one-byte node (its piece's, or the unknown one) is the last
       to end at the next position, whose best is carried in a register; the updates are
       branch-free (which node wins is as good as random). */
    double *best = lattice->best;
    int64_t *back = lattice->back;  /* start * 2^32 + (id + 2), where reached */
    for (size_t e = 1; e <= n; e++) best[e] = -INFINITY;
    double from = 0.0;  /* best[s] */
    for (size_t s = 0, node = 0; s < n; s++) {
        best[s] = from;
        const size_t end = node + at[s];
        double score = unknown;
        int64_t id = -1;
        if (node < end && lengths[node] == 1) {
            id = ids[node++];
            score = scores[id];
        }
        double next = best[s + 1];
        if (!(skip_whole && n == 1)) {
            const double value = from + score;
            const int64_t take = -(int64_t)(value > next);
            next = value > next ? value : next;
            back[s + 1] = ((((int64_t)s << 32) | (id + 2)) & take) | (back[s + 1] & ~take);
        }
        for (; node < end; node++) {
            const size_t e = s + lengths[node];
            if (e > n || (skip_whole && s == 0 && e == n)) continue;
            const double value = from + scores[ids[node]], current = best[e];
            const int64_t take = -(int64_t)(value > current);
            best[e] = value > current ? value : current;
            back[e] = ((((int64_t)s << 32) | (int64_t)(ids[node] + 2)) & take) | (back[e] & ~take);
        }
        from = next;
    }
    best[n] = from;
    if (best[n] == -INFINITY) return 0;
    size_t length = 0;
    for (size_t e = n; e > 0; e = (size_t)(back[e] >> 32)) length++;
    size_t at_path = length;
    for (size_t e = n; e > 0; e = (size_t)(back[e] >> 32))
        path[--at_path] = (int32_t)(back[e] & 0xFFFFFFFF) - 2;
    return length;
}
