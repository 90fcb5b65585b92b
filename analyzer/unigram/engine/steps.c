/* The training steps (reference: Trainer.em, prune, finalize). The E-step and the Viterbi
   passes split the chunks (or the pieces) into blocks that the threads take as each gets to
   one; each thread adds into its own integer array and the arrays are summed, so the result
   depends neither on the number of threads nor on who took which block. Finding and filtering
   the node cache split the chunks into one contiguous share per thread. */

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "unigram.h"

double digamma(double x) {  /* SentencePiece's Digamma, as the reference writes it */
    double result = 0.0;
    while (x < 7) {
        result -= 1 / x;
        x += 1;
    }
    x -= 1.0 / 2.0;
    const double xx = 1.0 / x, xx2 = xx * xx, xx4 = xx2 * xx2;
    result += (log(x) + (1.0 / 24.0) * xx2 - (7.0 / 960.0) * xx4 + (31.0 / 8064.0) * xx4 * xx2
               - (127.0 / 30720.0) * xx4 * xx4);
    return result;
}

void bytes_by_count(const int64_t counts[256], int order[256]) {
    for (int b = 0; b < 256; b++) order[b] = b;
    for (int i = 1; i < 256; i++)  /* insertion sort: 256 items */
        for (int j = i; j > 0; j--) {
            int x = order[j], y = order[j - 1];
            if (counts[x] < counts[y] || (counts[x] == counts[y] && x > y)) break;
            order[j] = y;
            order[j - 1] = x;
        }
}

void model_free(Model *model) {
    free(model->keys);
    free(model->scores);
    free(model->order);
    model->keys = NULL;
    model->scores = NULL;
    model->order = NULL;
    model->n = model->live = 0;
}

/* ---------------------------------------------------------------------------------------- */
/* Work shared among threads                                                                */

typedef enum { FIND_NODES, EXPECT, CHUNK_VITERBI, PIECE_ALTERNATIVES, KEEP_NODES } Job;

#define BLOCKS_PER_THREAD 64  /* blocks of a shared job: the last one taken is a sliver */

typedef struct {
    const Training *t;
    const PieceIndex *index;
    Job job;
    double unknown;             /* an unknown node's score */
    const double *probability;  /* EXPECT: each piece's exp(score) */
    double unknown_probability;
    size_t first, last;   /* chunks (or pieces) [first, last) */
    const size_t *blocks; /* or, when given, blocks of them (block b: blocks[b] .. blocks[b + 1]) */
    size_t n_blocks;      /* taken in turn by the threads as each gets to one (next_block) */
    atomic_size_t *next_block;
    int taken;            /* the share's own range was taken */
    int64_t *sums;        /* per piece: expected counts (EXPECT) or Viterbi counts */
    int32_t *alternatives; /* PIECE_ALTERNATIVES: per piece, max ids (-1 padded) */
    uint8_t *removable;
    const int64_t *frequency;  /* PIECE_ALTERNATIVES: each piece's on the chunks' best paths */
    const int64_t *marks;      /* PIECE_ALTERNATIVES: nodes before every MARK_STRIDE bytes */
    int32_t *ids;         /* FIND_NODES: this share's nodes, as Nodes holds them; without */
    uint8_t *lengths;     /* the cache, one chunk's */
    size_t n_nodes, capacity;
    uint8_t *at;          /* without the cache: how many of a chunk's nodes begin at each byte */
    size_t at_capacity;
    const int32_t *renumber; /* KEEP_NODES: each piece's new id, -1 gone */
    size_t kept;          /* ... and how many of this share's nodes stay (moved to its front) */
    Seen seen;            /* FIND_NODES: per piece, the first place this share found it */
    double node_budget;   /* FIND_NODES: the bytes this share's nodes may take */
    int over;             /* ... and it found more */
    int failed;
    uint64_t work;        /* steps taken: bytes and nodes visited (Training.work's part) */
} Share;

/* Room in the share's node arrays for n more bytes' nodes; -1 when out of memory. */
static int reserve_nodes(Share *share, size_t n, int max) {
    if (share->n_nodes + n * (size_t)max <= share->capacity) return 0;
    /* Small arrays double; large ones grow by a quarter (a large block grows in place, so
       growing often costs little, and the room left unused stays small). */
    size_t cap = share->capacity ? share->capacity : 1 << 16;
    while (cap < share->n_nodes + n * (size_t)max) cap += cap < (1 << 24) ? cap : cap / 4;
    int32_t *ids = realloc(share->ids, cap * sizeof *ids);
    if (ids) share->ids = ids;
    uint8_t *lengths = realloc(share->lengths, cap);
    if (lengths) share->lengths = lengths;
    if (!ids || !lengths) return -1;
    share->capacity = cap;
    return 0;
}

/* FIND_NODES: chunk k's nodes appended to the share's (the cache is joined from them). */
static int find_nodes(Share *share, int max, size_t k) {
    const Chunks *c = &share->t->chunks;
    const size_t n = (size_t)(c->offsets[k + 1] - c->offsets[k]);
    Nodes *nodes = (Nodes *)&share->t->nodes;
    if (reserve_nodes(share, n, max) < 0) return -1;
    const size_t found = text_nodes(share->index, c->data + c->offsets[k], n, max,
                                    share->ids + share->n_nodes, share->lengths + share->n_nodes,
                                    nodes->at + c->offsets[k], share->seen.place ? &share->seen : NULL,
                                    (uint32_t)k);
    share->n_nodes += found;
    nodes->first[k + 1] = (int64_t)found;  /* a count until summed */
    if ((double)share->n_nodes * 5 > share->node_budget) share->over = 1;
    return 0;
}

/* Without the cache: one chunk's nodes, in the share's arrays alone. */
static int local_nodes(Share *share, size_t n, int max, size_t k) {
    const Chunks *c = &share->t->chunks;
    if (n > share->at_capacity) {
        uint8_t *at = realloc(share->at, n);
        if (!at) return -1;
        share->at = at;
        share->at_capacity = n;
    }
    share->n_nodes = 0;
    if (reserve_nodes(share, n, max) < 0) return -1;
    share->n_nodes = text_nodes(share->index, c->data + c->offsets[k], n, max, share->ids,
                                share->lengths, share->at, NULL, 0);
    return 0;
}

/* The next items for the share to work on into [*first, *last): its own range once, or the
   next block no thread has taken; 0 when none is left. */
static int take_items(Share *share, size_t *first, size_t *last) {
    if (share->failed || share->over) return 0;
    if (!share->blocks) {
        *first = share->first;
        *last = share->last;
        return !share->taken++;
    }
    const size_t b = atomic_fetch_add(share->next_block, 1);
    if (b >= share->n_blocks) return 0;
    *first = share->blocks[b];
    *last = share->blocks[b + 1];
    return 1;
}

/* Nodes are counted at every MARK_STRIDE-th byte of the chunks (marks[j]: the nodes that begin
   before byte offsets[0] + j x MARK_STRIDE), so that the nodes before a place deep in a long
   chunk are counted from the nearest mark, not byte by byte from the chunk's start: a piece's
   place in one chunk of 10 MB took a million pieces 10 MB each. */
#define MARK_STRIDE 128

/* The nodes before byte p of the chunks (p past offsets[0]). */
static int64_t nodes_until(const Training *t, const int64_t *marks, int64_t p, uint64_t *work) {
    const int64_t from = t->chunks.offsets[0], j = (p - from) / MARK_STRIDE;
    int64_t nodes = marks[j];
    for (int64_t q = from + j * MARK_STRIDE; q < p; q++) nodes += t->nodes.at[q];
    *work += (uint64_t)(p - from - j * MARK_STRIDE) + 1;
    return nodes;
}

/* The first of chunk k's nodes at its byte `at`: counted from the chunk's start when that is
   near, else the difference of the marked counts at the place and at the chunk's start. */
static int64_t node_at(const Training *t, const int64_t *marks, uint32_t k, uint32_t at,
                       uint64_t *work) {
    const int64_t byte = t->chunks.offsets[k];
    int64_t node = t->nodes.first[k];
    if (!marks || at < 2 * MARK_STRIDE) {
        for (uint32_t i = 0; i < at; i++) node += t->nodes.at[byte + i];
        *work += at;
        return node;
    }
    return node + nodes_until(t, marks, byte + at, work) - nodes_until(t, marks, byte, work);
}

/* The marks of the node cache (NULL when no chunk is long enough to need them, or out of
   memory: then places are counted from their chunk's start); one pass over its bytes. */
static int64_t *node_marks(Training *t) {
    const Chunks *c = &t->chunks;
    int needed = 0;
    for (size_t k = 0; k < c->n && !needed; k++)
        needed = c->offsets[k + 1] - c->offsets[k] >= 2 * MARK_STRIDE;
    if (!needed) return NULL;
    const int64_t bytes = c->offsets[c->n] - c->offsets[0];
    int64_t *marks = malloc(((size_t)(bytes / MARK_STRIDE) + 1) * sizeof *marks);
    if (!marks) return NULL;
    int64_t nodes = 0;
    for (int64_t p = 0; p < bytes; p++) {
        if (p % MARK_STRIDE == 0) marks[p / MARK_STRIDE] = nodes;
        nodes += t->nodes.at[c->offsets[0] + p];
    }
    if (bytes % MARK_STRIDE == 0) marks[bytes / MARK_STRIDE] = nodes;
    t->work += (uint64_t)bytes;
    return marks;
}

static void *work(void *arg) {
    Share *share = arg;
    const Training *t = share->t;
    const Chunks *c = &t->chunks;
    const int max = t->max_piece;
    Lattice lattice = {0};
    int32_t path[MAX_PIECE];
    uint8_t own_at[MAX_PIECE], own_lengths[MAX_PIECE * MAX_PIECE];  /* a piece's looked-up */
    int32_t own_ids[MAX_PIECE * MAX_PIECE];                            /* lattice */
    int32_t *chunk_path = NULL;
    size_t chunk_path_cap = 0;
    if (share->job == KEEP_NODES) {
        share->kept = nodes_keep(&((Training *)t)->nodes, c, share->renumber, share->first, share->last);
        share->work += share->kept + (share->first < share->last  /* (its bytes and nodes kept) */
            ? (uint64_t)(c->offsets[share->last] - c->offsets[share->first]) : 0);
        return NULL;
    }
    size_t from, to;
    while (take_items(share, &from, &to))
    for (size_t k = from; k < to && !share->failed && !share->over; k++) {
        if (share->job == PIECE_ALTERNATIVES) {
            Key key = t->model.keys[k];
            uint8_t text[MAX_PIECE];
            size_t n = key_spell(key, text), length;
            if (n < 2 || is_dead(&t->model, k) || share->frequency[k] == 0)
                continue;  /* a byte: its own best path, and no other (kept as it is); dead, or
                              on no best path: goes */
            if (lattice_reserve(&lattice, n, max) < 0) { share->failed = 1; break; }
            const Place where = t->nodes.where ? t->nodes.where[k] : (Place){UINT32_MAX, 0};
            /* The piece's lattice: the cached nodes at one of its places that end within it
               (its substrings that are pieces, and unknown bytes as a lattice has), or, with
               no place known, its substrings looked up. */
            const uint8_t *at = own_at, *lengths = own_lengths;
            const int32_t *ids = own_ids;
            if (t->nodes.valid && where.chunk != UINT32_MAX) {
                const int64_t byte = c->offsets[where.chunk];
                const int64_t node = node_at(t, share->marks, where.chunk, where.at, &share->work);
                at = t->nodes.at + byte + where.at;
                lengths = t->nodes.lengths + node;
                ids = t->nodes.ids + node;
            } else {
                text_nodes(share->index, text, n, max, own_ids, own_lengths, own_at, NULL, 0);
            }
            /* One pass for both paths: without the piece's own node, the lattice is the same
               but at the end, where the whole node comes first (it starts at 0) and stays best
               unless a later start scores strictly more. */
            length = nodes_viterbi(&lattice, at, lengths, ids, n, t->model.scores, share->unknown,
                                   1, path);
            share->work += n * (size_t)max;  /* (its nodes: at most max a byte) */
            if (lattice.best[n] > 0.0 + t->model.scores[k]) {  /* -inf: not reached */
                share->removable[k] = 1;  /* segmented otherwise already */
                continue;
            }
            int has_unknown = 0;
            for (size_t i = 0; i < length; i++) has_unknown |= path[i] < 0;
            if (length && !has_unknown)
                for (size_t i = 0; i < length; i++) share->alternatives[k * (size_t)max + i] = path[i];
            continue;
        }
        size_t n = (size_t)(c->offsets[k + 1] - c->offsets[k]);
        if (share->job == FIND_NODES) t->nodes.first[k + 1] = 0;
        if (n == 0) continue;
        if (share->job == FIND_NODES) {
            if (find_nodes(share, max, k) < 0) { share->failed = 1; break; }
            share->work += n * (size_t)max;
            continue;
        }
        if (lattice_reserve(&lattice, n, max) < 0) { share->failed = 1; break; }
        share->work += n;
        /* The chunk's nodes: from the cache, or (without it) looked up as FIND_NODES does. */
        const uint8_t *at, *lengths;
        const int32_t *ids;
        if (t->nodes.valid) {
            const int64_t first = t->nodes.first[k];
            at = t->nodes.at + c->offsets[k];
            lengths = t->nodes.lengths + first;
            ids = t->nodes.ids + first;
            share->work += (uint64_t)(t->nodes.first[k + 1] - first);
        } else {
            if (local_nodes(share, n, max, k) < 0) { share->failed = 1; break; }
            share->work += n * (size_t)max + share->n_nodes;
            at = share->at;
            lengths = share->lengths;
            ids = share->ids;
        }
        if (share->job == EXPECT) {
            chunk_expect(&lattice, at, lengths, ids, n, share->probability,
                         share->unknown_probability, c->counts[k], share->sums);
            continue;
        }
        if (n > chunk_path_cap) {
            free(chunk_path);
            chunk_path_cap = lattice.capacity;
            chunk_path = malloc(chunk_path_cap * sizeof *chunk_path);
            if (!chunk_path) { share->failed = 1; break; }
        }
        size_t length = nodes_viterbi(&lattice, at, lengths, ids, n, t->model.scores, share->unknown,
                                      0, chunk_path);
        for (size_t i = 0; i < length; i++)
            if (chunk_path[i] >= 0) share->sums[chunk_path[i]] += c->counts[k];
    }
    free(chunk_path);
    lattice_free(&lattice);
    return NULL;
}

/* The arrays a job reads or fills (those it does not use: NULL). */
typedef struct {
    int64_t *sums;              /* EXPECT, CHUNK_VITERBI: per piece, summed from the threads' */
    int32_t *alternatives;      /* PIECE_ALTERNATIVES */
    uint8_t *removable;         /* PIECE_ALTERNATIVES */
    const int64_t *frequency;   /* PIECE_ALTERNATIVES: a piece of frequency 0 is skipped */
    const double *probability;  /* EXPECT */
    const int32_t *renumber;    /* KEEP_NODES */
    const int64_t *marks;       /* PIECE_ALTERNATIVES: node_marks' (NULL: none) */
} Arrays;

static const char *run_shared(const Training *t, const PieceIndex *index, Job job, size_t n,
                              Arrays arrays);

/* FIND_NODES's shares joined into t->nodes: the counts summed into places, the nodes copied. */
static const char *gather_nodes(Training *t, Share *shares, int threads) {
    Nodes *nodes = &t->nodes;
    for (int i = 0; i < threads; i++)
        if (shares[i].failed) return "out of memory";
    for (int i = 0; i < threads; i++)
        if (shares[i].over) {  /* too many nodes to keep: every step looks them up */
            nodes_free(nodes);
            nodes->off = 1;
            return NULL;
        }
    size_t total = 0;
    for (int i = 0; i < threads; i++) total += shares[i].n_nodes;
    /* The first share's arrays grown to hold every node (a large block grows in place) and
       the others' appended, each freed once copied: the nodes are never all held twice. */
    int32_t *ids = realloc(shares[0].ids, (total ? total : 1) * sizeof *ids);
    if (ids) shares[0].ids = ids;
    uint8_t *lengths = realloc(shares[0].lengths, total ? total : 1);
    if (lengths) shares[0].lengths = lengths;
    if (!ids || !lengths) return "out of memory";
    shares[0].ids = NULL;  /* the cache's now */
    shares[0].lengths = NULL;
    nodes->ids = ids;
    nodes->lengths = lengths;
    nodes->first[0] = 0;
    for (size_t k = 0; k < t->chunks.n; k++) nodes->first[k + 1] += nodes->first[k];
    for (int i = 1; i < threads; i++) {
        /* Copied from the end a block at a time, the share's arrays shrunk behind the copy
           (a large block gives its tail back), so at most a block is held twice. */
        const size_t at = shares[i].n_nodes ? (size_t)nodes->first[shares[i].first] : 0;
        for (size_t left = shares[i].n_nodes; left > 0;) {
            const size_t block = left < ((size_t)1 << 22) ? left : (size_t)1 << 22;
            left -= block;
            memcpy(nodes->ids + at + left, shares[i].ids + left, block * sizeof *nodes->ids);
            memcpy(nodes->lengths + at + left, shares[i].lengths + left, block);
            if (left) {  /* smaller: realloc cannot fail, and would keep the block if it did */
                int32_t *fewer_ids = realloc(shares[i].ids, left * sizeof *fewer_ids);
                if (fewer_ids) shares[i].ids = fewer_ids;
                uint8_t *fewer_lengths = realloc(shares[i].lengths, left);
                if (fewer_lengths) shares[i].lengths = fewer_lengths;
            }
        }
        free(shares[i].ids);
        free(shares[i].lengths);
        shares[i].ids = NULL;
        shares[i].lengths = NULL;
    }
    nodes->n = total;
    nodes->valid = 1;
    /* Each piece's place: the first share's find, else a later one's. */
    if (shares[0].seen.place) {
        nodes->where = shares[0].seen.place;
        shares[0].seen.place = NULL;
        for (int i = 1; i < threads; i++)
            for (size_t p = 0; p < t->model.n; p++)
                if (nodes->where[p].chunk == UINT32_MAX) nodes->where[p] = shares[i].seen.place[p];
    }
    return NULL;
}

/* KEEP_NODES's shares joined: each share's kept nodes (at the front of its own part) moved
   down after the previous share's, its chunks' first nodes moved with them. */
static void join_kept(Training *t, const Share *shares, int threads) {
    Nodes *nodes = &t->nodes;
    size_t to = 0;
    for (int i = 0; i < threads; i++) {
        const Share *s = &shares[i];
        if (s->first >= s->last) continue;
        const size_t from = (size_t)nodes->first[s->first];
        if (from != to) {
            memmove(nodes->ids + to, nodes->ids + from, s->kept * sizeof *nodes->ids);
            memmove(nodes->lengths + to, nodes->lengths + from, s->kept);
            for (size_t k = s->first; k < s->last; k++) nodes->first[k] -= (int64_t)(from - to);
        }
        to += s->kept;
    }
    nodes->first[t->chunks.n] = (int64_t)to;
    nodes->n = to;
}

/* The nodes under the model as it stands, found once (their pieces looked up in `index`). */
static const char *ensure_nodes(Training *t, const PieceIndex *index) {
    if (t->nodes.valid || t->nodes.off) return NULL;
    nodes_free(&t->nodes);
    const Chunks *c = &t->chunks;
    /* The cache takes 5 bytes a node and one a byte (`at`): when even the bytes' part does
       not fit, or the nodes found do not (FIND_NODES stops a share past its part), it is off. */
    if (c->n && (double)c->offsets[c->n] * 2 > (double)t->cache_limit) {
        t->nodes.off = 1;
        return NULL;
    }
    t->nodes.first = calloc(c->n + 1, sizeof(int64_t));
    t->nodes.at = calloc(c->n ? (size_t)c->offsets[c->n] : 1, 1);
    if (!t->nodes.first || !t->nodes.at) {
        nodes_free(&t->nodes);
        return "out of memory";
    }
    const char *problem = run_shared(t, index, FIND_NODES, c->n, (Arrays){0});
    if (problem) nodes_free(&t->nodes);
    return problem;
}

/* Run a job over [0, n) items on t->threads threads (fewer for few items), the chunks shared
   by their bytes; each share's per-piece sums summed into `arrays.sums` (when given). */
static const char *run_shared(const Training *t, const PieceIndex *index, Job job, size_t n,
                              Arrays arrays) {
    int64_t *sums = arrays.sums;
    int threads = t->threads < 1 ? 1 : t->threads;
    if ((size_t)threads > n) threads = n ? (int)n : 1;
    Share *shares = calloc((size_t)threads, sizeof *shares);
    pthread_t *ids = calloc((size_t)threads, sizeof *ids);
    if (!shares || !ids) {
        free(shares);
        free(ids);
        return "out of memory";
    }
    const Chunks *c = &t->chunks;
    int64_t total = job == PIECE_ALTERNATIVES ? (int64_t)n : c->offsets[c->n] - c->offsets[0];
    size_t first = 0;
    const char *problem = NULL;
    const double unknown = min_score(&t->model) - UNKNOWN_PENALTY;
    for (int i = 0; i < threads; i++) {
        Share *s = &shares[i];
        s->t = t;
        s->index = index;
        s->job = job;
        s->unknown = unknown;
        s->probability = arrays.probability;
        s->unknown_probability = exp(unknown);
        s->node_budget = ((double)t->cache_limit - (n ? (double)c->offsets[c->n] : 0.0)) / threads;
        s->alternatives = arrays.alternatives;
        s->removable = arrays.removable;
        s->frequency = arrays.frequency;
        s->renumber = arrays.renumber;
        s->marks = arrays.marks;
        s->first = first;
        if (i == threads - 1) s->last = n;
        else {  /* the first item past this share's part of the bytes (or pieces) */
            int64_t goal = total * (i + 1) / threads;
            size_t last = first;
            while (last < n && (job == PIECE_ALTERNATIVES ? (int64_t)last
                                : c->offsets[last] - c->offsets[0]) < goal) last++;
            s->last = last;
        }
        first = s->last;
        if (sums && i > 0) {
            s->sums = calloc(t->model.n ? t->model.n : 1, sizeof(int64_t));
            if (!s->sums) problem = "out of memory";
        } else {
            s->sums = sums;
        }
        if (job == FIND_NODES && c->n < UINT32_MAX) {  /* (a chunk's number is a uint32) */
            s->seen.place = malloc((t->model.n ? t->model.n : 1) * sizeof *s->seen.place);
            s->seen.found = calloc(t->model.n / 64 + 1, sizeof *s->seen.found);
            if (!s->seen.place || !s->seen.found) problem = "out of memory";
            else
                for (size_t p = 0; p < t->model.n; p++) s->seen.place[p] = (Place){UINT32_MAX, 0};
        }
    }
    /* The E-step and the Viterbi passes take their items in blocks, as each thread gets to one
       (their sums do not depend on who adds what), so a thread slowed down (by another
       process, or by denser lattices) leaves more of the work to the others. */
    size_t *blocks = NULL, n_blocks = 0;
    atomic_size_t next_block = 0;
    if (!problem && threads > 1 && (job == EXPECT || job == CHUNK_VITERBI || job == PIECE_ALTERNATIVES)) {
        n_blocks = (size_t)threads * BLOCKS_PER_THREAD;
        if (n_blocks > n) n_blocks = n;
        blocks = malloc((n_blocks + 1) * sizeof *blocks);
        if (!blocks) problem = "out of memory";
        else {
            size_t item = 0;
            for (size_t b = 0; b < n_blocks; b++) {  /* about total / n_blocks bytes (or pieces) each */
                blocks[b] = item;
                const int64_t goal = (int64_t)((double)total * (double)(b + 1) / (double)n_blocks);
                while (item < n && (job == PIECE_ALTERNATIVES ? (int64_t)item
                                    : c->offsets[item] - c->offsets[0]) < goal) item++;
            }
            blocks[n_blocks] = n;
            for (int i = 0; i < threads; i++) {
                shares[i].blocks = blocks;
                shares[i].n_blocks = n_blocks;
                shares[i].next_block = &next_block;
            }
        }
    }
    int started = 1;  /* the calling thread takes the first share */
    if (!problem) {
        for (; started < threads; started++)
            if (pthread_create(&ids[started], NULL, work, &shares[started]) != 0) {
                problem = "could not start a thread";
                break;
            }
        work(&shares[0]);
    }
    for (int i = 1; i < started; i++) pthread_join(ids[i], NULL);
    if (job == FIND_NODES && !problem) problem = gather_nodes((Training *)t, shares, threads);
    if (job == KEEP_NODES && !problem) join_kept((Training *)t, shares, threads);
    for (int i = 0; i < threads; i++) {
        free(shares[i].ids);
        free(shares[i].lengths);
        free(shares[i].at);
        free(shares[i].seen.place);
        free(shares[i].seen.found);
        ((Training *)t)->work += shares[i].work;
        if (shares[i].failed && !problem) problem = "out of memory";
        if (i > 0 && sums && shares[i].sums) {
            for (size_t p = 0; p < t->model.n; p++) sums[p] += shares[i].sums[p];
            free(shares[i].sums);
        }
    }
    free(blocks);
    free(shares);
    free(ids);
    return problem;
}

/* ---------------------------------------------------------------------------------------- */
/* EM                                                                                        */

/* The model made of the pieces kept[0 .. n_kept), in that order, with new `scores` (NULL: their
   own); the node cache, when kept, follows (renumbered). */
static const char *keep_pieces(Training *t, const size_t *kept, size_t n_kept, const double *scores) {
    Key *keys = malloc((n_kept ? n_kept : 1) * sizeof *keys);
    double *kept_scores = malloc((n_kept ? n_kept : 1) * sizeof *kept_scores);
    int32_t *renumber = malloc((t->model.n ? t->model.n : 1) * sizeof *renumber);
    if (!keys || !kept_scores || !renumber) {
        free(keys);
        free(kept_scores);
        free(renumber);
        return "out of memory";
    }
    for (size_t i = 0; i < t->model.n; i++) renumber[i] = -1;
    int same = n_kept == t->model.n;  /* every piece kept in its place: the nodes stand */
    for (size_t j = 0; j < n_kept; j++) {
        renumber[kept[j]] = (int32_t)j;
        same &= kept[j] == j;
        keys[j] = t->model.keys[kept[j]];
        kept_scores[j] = scores ? scores[j] : t->model.scores[kept[j]];
    }
    const char *problem = NULL;
    if (t->nodes.valid && !same)
        problem = run_shared(t, NULL, KEEP_NODES, t->chunks.n, (Arrays){.renumber = renumber});
    free(renumber);
    if (!problem && t->nodes.valid && !same && t->nodes.where) {  /* each kept piece's place */
        Place *where = malloc((n_kept ? n_kept : 1) * sizeof *where);
        if (!where) problem = "out of memory";
        else {
            for (size_t j = 0; j < n_kept; j++) where[j] = t->nodes.where[kept[j]];
            free(t->nodes.where);
            t->nodes.where = where;
        }
    }
    if (problem) {
        free(keys);
        free(kept_scores);
        nodes_free(&t->nodes);  /* half renumbered: found again at the next step */
        return problem;
    }
    model_free(&t->model);
    t->model.keys = keys;
    t->model.scores = kept_scores;
    t->model.n = t->model.live = n_kept;
    return NULL;
}

/* The M-step's outcome when it drops few pieces, none of them a byte, and the node cache is
   valid: the dropped ones stay in place, dead, and the kept ones take their new `scores`
   (kept[j] in order), so the cache stands as it is (no pass over every node for a handful of
   pieces). Otherwise keep_pieces. A dead byte would not do: a position whose byte's piece is
   gone gets an unknown node, which the cache's nodes could no longer tell. */
static const char *keep_or_mark(Training *t, const size_t *kept, size_t n_kept, const double *scores) {
    Model *m = &t->model;
    int marks = t->nodes.valid && (m->live - n_kept) * 4 <= m->live;  /* a quarter at most */
    for (size_t r = 0, j = 0; r < in_order(m) && marks; r++) {  /* kept[] is in the model's order */
        const size_t i = piece_at(m, r);
        const int stays = j < n_kept && kept[j] == i;
        j += stays;
        if (!stays && !is_dead(m, i) && m->keys[i].len == 1) marks = 0;
    }
    if (!marks) return keep_pieces(t, kept, n_kept, scores);
    for (size_t i = 0; i < m->n; i++) m->scores[i] = DEAD;
    for (size_t j = 0; j < n_kept; j++) m->scores[kept[j]] = scores[j];
    if (m->order) memcpy(m->order, kept, n_kept * sizeof *kept);  /* the live ones, in order */
    m->live = n_kept;
    return NULL;
}

/* Pruning's outcome: the pieces kept[0 .. n_kept) (places, in their new order), their scores
   as they are. Marked in place, the others dead and the new order in `order`, when the cache
   stands and no byte goes (see keep_or_mark), until half the places would be dead; otherwise
   the model is compacted (keep_pieces). So most prunings leave the nodes as they are: the
   dead pieces' nodes are filtered out at every other pruning or so, not at each. */
static const char *prune_or_mark(Training *t, const size_t *kept, size_t n_kept, uint8_t *stays) {
    Model *m = &t->model;
    int marks = t->nodes.valid && n_kept * 2 > m->n;
    memset(stays, 0, m->n);
    for (size_t j = 0; j < n_kept; j++) stays[kept[j]] = 1;
    for (size_t i = 0; i < m->n && marks; i++)
        if (!stays[i] && !is_dead(m, i) && m->keys[i].len == 1) marks = 0;
    if (!marks) return keep_pieces(t, kept, n_kept, NULL);
    size_t *order = m->order ? m->order : malloc((n_kept ? n_kept : 1) * sizeof *order);
    if (!order) return keep_pieces(t, kept, n_kept, NULL);
    for (size_t i = 0; i < m->n; i++)
        if (!stays[i]) m->scores[i] = DEAD;
    memcpy(order, kept, n_kept * sizeof *kept);
    m->order = order;
    m->live = n_kept;
    return NULL;
}

const char *em_step(Training *t) {
    PieceIndex index = {0};
    const char *problem = t->nodes.valid ? NULL : index_build(&index, &t->model, t->threads);
    int64_t *expected = calloc(t->model.n ? t->model.n : 1, sizeof *expected);
    if (!problem && !expected) problem = "out of memory";
    if (!problem) problem = ensure_nodes(t, &index);
    double *probability = malloc((t->model.n ? t->model.n : 1) * sizeof *probability);
    if (!problem && !probability) problem = "out of memory";
    if (!problem) {
        for (size_t i = 0; i < t->model.n; i++) probability[i] = exp(t->model.scores[i]);
        problem = run_shared(t, &index, EXPECT, t->chunks.n,
                             (Arrays){.sums = expected, .probability = probability});
    }
    free(probability);
    index_free(&index);
    if (problem) {
        free(expected);
        return problem;
    }
    /* M-step: keep the pieces expected at least 0.5 times, in order, scored anew. */
    size_t *kept = malloc((t->model.n ? t->model.n : 1) * sizeof *kept);
    double *scores = malloc((t->model.n ? t->model.n : 1) * sizeof *scores);
    size_t n_kept = 0;
    int64_t total = 0;
    if (!kept || !scores) problem = "out of memory";
    else {
        for (size_t r = 0; r < in_order(&t->model); r++) {  /* kept in the model's order */
            const size_t i = piece_at(&t->model, r);
            if (!is_dead(&t->model, i) && (double)expected[i] / FIXED_SCALE >= MIN_EXPECTED) {
                kept[n_kept++] = i;
                total += expected[i];
            }
        }
        const double log_sum = total ? digamma((double)total / FIXED_SCALE) : 0.0;  /* none kept */
        for (size_t j = 0; j < n_kept; j++)
            scores[j] = digamma((double)expected[kept[j]] / FIXED_SCALE) - log_sum;
        problem = keep_or_mark(t, kept, n_kept, scores);
    }
    free(kept);
    free(scores);
    free(expected);
    return problem;
}

/* ---------------------------------------------------------------------------------------- */
/* Pruning                                                                                   */

typedef struct {
    double loss;
    size_t id;
} Loss;

/* A loss as a key whose ascending order is the losses' descending one: a double's bits with
   the sign bit set (positive) or all flipped (negative) order as the doubles do, and the
   complement reverses that. -0.0 is made 0.0, which it equals (a loss is never NaN: a
   positive share times a difference of finite logs). */
static inline uint64_t descending(double loss) {
    uint64_t bits;
    if (loss == 0.0) loss = 0.0;
    memcpy(&bits, &loss, sizeof bits);
    bits = bits >> 63 ? ~bits : bits | (uint64_t)1 << 63;
    return ~bits;
}

/* losses[0..n), given in the model's order, sorted by loss descending, then that order (the
   reference's order): a stable radix sort of the keys, eight bits a pass from the lowest, keeps
   equal losses in the order given. `spare` holds n. */
static void sort_losses(Loss *losses, Loss *spare, size_t n) {
    if (n < 2) return;
    for (int shift = 0; shift < 64; shift += 8) {
        size_t count[257] = {0};
        for (size_t i = 0; i < n; i++) count[(descending(losses[i].loss) >> shift & 0xFF) + 1]++;
        if (count[(descending(losses[0].loss) >> shift & 0xFF) + 1] == n) continue;  /* one bin */
        for (int b = 0; b < 256; b++) count[b + 1] += count[b];
        for (size_t i = 0; i < n; i++) spare[count[descending(losses[i].loss) >> shift & 0xFF]++] = losses[i];
        memcpy(losses, spare, n * sizeof *losses);
    }
}

const char *prune_step(Training *t, size_t desired, double shrink) {
    const size_t n = t->model.n, max = (size_t)t->max_piece;
    PieceIndex index = {0};
    int32_t *alternatives = malloc((n ? n : 1) * max * sizeof *alternatives);
    uint8_t *removable = calloc(n ? n : 1, 1);
    int64_t *frequency = calloc(n ? n : 1, sizeof *frequency);
    Loss *candidates = malloc((n ? n : 1) * sizeof *candidates);
    Loss *spare = malloc((n ? n : 1) * sizeof *spare);
    size_t *kept = malloc((n ? n : 1) * sizeof *kept);
    const char *problem = NULL;
    if (!alternatives || !removable || !frequency || !candidates || !spare || !kept)
        problem = "out of memory";
    if (!problem) {
        for (size_t i = 0; i < n * max; i++) alternatives[i] = -1;
        /* The cached nodes give each piece's lattice and each chunk's: the index only finds
           them when the cache has not got them (yet, or at all). */
        if (!t->nodes.valid) problem = index_build(&index, &t->model, t->threads);
    }
    if (!problem) problem = ensure_nodes(t, &index);
    if (!problem && t->nodes.valid && !index.slots) {  /* a piece of no known place: looked up */
        for (size_t i = 0; i < n && !index.slots && !problem; i++)
            if (t->model.keys[i].len >= 2 && !is_dead(&t->model, i)
                && (!t->nodes.where || t->nodes.where[i].chunk == UINT32_MAX))
                problem = index_build(&index, &t->model, t->threads);
    }
    /* The chunks' Viterbi first: a piece on no best path goes whatever its alternatives, so
       only those of the others are worked out. */
    if (!problem) problem = run_shared(t, &index, CHUNK_VITERBI, t->chunks.n, (Arrays){.sums = frequency});
    int64_t *marks = !problem && t->nodes.valid ? node_marks(t) : NULL;
    if (!problem)
        problem = run_shared(t, &index, PIECE_ALTERNATIVES, n,
                             (Arrays){.alternatives = alternatives, .removable = removable,
                                      .frequency = frequency, .marks = marks});
    free(marks);
    index_free(&index);
    if (problem) goto done;
    int64_t total_count = 0, total = 0;
    for (size_t k = 0; k < t->chunks.n; k++) total_count += t->chunks.counts[k];
    for (size_t i = 0; i < n; i++) total += frequency[i];
    const double log_total = total ? log((double)total) : 0.0;
    size_t n_kept = 0, n_candidates = 0;
    for (size_t r = 0; r < in_order(&t->model); r++) {  /* in the model's order */
        const size_t i = piece_at(&t->model, r);
        if (frequency[i] == 0 || removable[i]) continue;
        const int32_t *alt = &alternatives[i * max];
        if (alt[0] < 0) {
            kept[n_kept++] = i;
            continue;
        }
        size_t length = 0;
        while (length < max && alt[length] >= 0) length++;
        const double share = (double)frequency[i] / (double)total_count;
        const double logprob = log((double)frequency[i]) - log_total;
        const double log_total_alt = log((double)(total + frequency[i] * (int64_t)(length - 1)));
        double logprob_alt = 0.0;
        for (size_t j = 0; j < length; j++)
            logprob_alt += log((double)(frequency[alt[j]] + frequency[i])) - log_total_alt;
        candidates[n_candidates].loss = share * (logprob - logprob_alt);
        candidates[n_candidates].id = i;
        n_candidates++;
    }
    size_t target = (size_t)(shrink * (double)t->model.live);
    if (target < desired) target = desired;
    sort_losses(candidates, spare, n_candidates);
    for (size_t j = 0; j < n_candidates && n_kept < target; j++) kept[n_kept++] = candidates[j].id;
    /* The kept pieces, in the order kept: those without an alternative, then by loss. */
    problem = prune_or_mark(t, kept, n_kept, removable);
done:
    free(alternatives);
    free(removable);
    free(frequency);
    free(candidates);
    free(spare);
    free(kept);
    return problem;
}

/* ---------------------------------------------------------------------------------------- */
/* Finalize                                                                                  */

typedef struct {
    Key key;
    double score;
} Entry;

static int compare_entries(const void *a, const void *b) {  /* score descending, then bytes */
    const Entry *x = a, *y = b;
    if (x->score != y->score) return x->score > y->score ? -1 : 1;
    return key_compare(&x->key, &y->key);
}

const char *finalize(Training *t, size_t size, Model *out) {
    const Model *m = &t->model;
    Entry *entries = malloc((m->n + 256) * sizeof *entries);
    if (!entries) return "out of memory";
    /* The bytes, count descending then byte; a byte the model lost gets min_score - penalty. */
    double byte_score[256];
    int in_model[256] = {0};
    for (size_t i = 0; i < m->n; i++)
        if (m->keys[i].len == 1 && !is_dead(m, i)) {
            in_model[key_byte(m->keys[i], 0)] = 1;
            byte_score[key_byte(m->keys[i], 0)] = m->scores[i];
        }
    int order[256];
    bytes_by_count(t->byte_counts, order);
    const double low = min_score(m);
    double penalty = 0.0;
    size_t n = 0;
    for (int i = 0; i < 256; i++) {
        int b = order[i];
        Key key = {0, 0, 0};
        entries[n].key = key_push(key, (uint8_t)b);
        if (in_model[b]) entries[n].score = byte_score[b];
        else {
            entries[n].score = low - penalty;
            penalty += BYTE_PENALTY_STEP;
        }
        n++;
    }
    /* The longer pieces by score, up to the size. */
    size_t first_longer = n;
    for (size_t i = 0; i < m->n; i++)
        if (m->keys[i].len > 1 && !is_dead(m, i)) {
            entries[n].key = m->keys[i];
            entries[n].score = m->scores[i];
            n++;
        }
    qsort(entries + first_longer, n - first_longer, sizeof *entries, compare_entries);
    if (n > size) n = size > first_longer ? size : first_longer;  /* never fewer than the bytes */
    qsort(entries, n, sizeof *entries, compare_entries);
    out->keys = malloc((n ? n : 1) * sizeof(Key));
    out->scores = malloc((n ? n : 1) * sizeof(double));
    if (!out->keys || !out->scores) {
        model_free(out);
        free(entries);
        return "out of memory";
    }
    for (size_t i = 0; i < n; i++) {
        out->keys[i] = entries[i].key;
        out->scores[i] = entries[i].score;
    }
    out->n = out->live = n;
    free(entries);
    return NULL;
}
