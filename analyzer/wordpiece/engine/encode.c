/* A vocabulary's encoder: analyzer/wordpiece/reference.py's `encode` (Hugging Face's greedy
   longest match first) in time linear in a chunk's length, as analyzer/wordpiece/encoder.py
   does it in Python (its docstring says how: Song et al.'s LinMaxMatch).

   Two tries in one table of nodes: node 0 the chunk's start (every string of the vocabulary
   below it), node 1 a later place (every `##` string without its mark). Edges are one open-
   addressing map of (node << 8 | byte) -> node. Per node: its id (or NONE), its failure link
   and the node of the pops tree whose ids a failure writes; an inner node of that tree keeps
   its parts (two or more nodes) in one flat array, its count first. */

#include <stdlib.h>
#include <string.h>

#include "wordpiece.h"

#define NONE UINT32_MAX
#define EMPTY_EDGE UINT64_MAX

static inline size_t edge_home(uint64_t key, size_t mask) {
    return (size_t)((key * 0x9e3779b97f4a7c15u) >> 24) & mask;
}

/* The child of node under byte, or NONE. */
static inline uint32_t child_of(const Encoder *e, uint32_t node, uint8_t byte) {
    const uint64_t key = (uint64_t)node << 8 | byte;
    for (size_t i = edge_home(key, e->mask);; i = (i + 1) & e->mask) {
        if (e->keys[i] == key) return e->children[i];
        if (e->keys[i] == EMPTY_EDGE) return NONE;
    }
}

/* Room for one more node and one more edge (the map at most half full); -1 out of memory. */
static int grow(Encoder *e) {
    if (e->n == e->room) {
        size_t room = e->room ? 2 * e->room : 1024;
        if (room > NONE) return -1;  /* node numbers are uint32, NONE excluded */
        int32_t *token = realloc(e->token, room * sizeof *token);
        if (!token) return -1;
        e->token = token;
        e->room = room;
    }
    if (2 * (e->edges + 1) > e->mask + 1) {
        size_t slots = e->mask ? 2 * (e->mask + 1) : 4096;
        uint64_t *keys = malloc(slots * sizeof *keys);
        uint32_t *children = malloc(slots * sizeof *children);
        if (!keys || !children) {
            free(keys);
            free(children);
            return -1;
        }
        memset(keys, 0xff, slots * sizeof *keys);
        for (size_t i = 0; e->mask && i <= e->mask; i++) {
            if (e->keys[i] == EMPTY_EDGE) continue;
            size_t j = edge_home(e->keys[i], slots - 1);
            while (keys[j] != EMPTY_EDGE) j = (j + 1) & (slots - 1);
            keys[j] = e->keys[i];
            children[j] = e->children[i];
        }
        free(e->keys);
        free(e->children);
        e->keys = keys;
        e->children = children;
        e->mask = slots - 1;
    }
    return 0;
}

/* The piece's bytes below `node`, their last node given the id. */
static int insert(Encoder *e, uint32_t node, const uint8_t *piece, size_t length, int32_t token) {
    for (size_t k = 0; k < length; k++) {
        const uint64_t key = (uint64_t)node << 8 | piece[k];
        size_t i = edge_home(key, e->mask);
        while (e->keys[i] != key && e->keys[i] != EMPTY_EDGE) i = (i + 1) & e->mask;
        if (e->keys[i] == key) {
            node = e->children[i];
            continue;
        }
        if (grow(e) < 0) return -1;
        i = edge_home(key, e->mask);  /* (the map may have grown) */
        while (e->keys[i] != EMPTY_EDGE) i = (i + 1) & e->mask;
        e->keys[i] = key;
        e->children[i] = (uint32_t)e->n;
        e->token[e->n] = -1;
        node = (uint32_t)e->n++;
        e->edges++;
    }
    e->token[node] = token;
    return 0;
}

/* Node's failure link and pops, from its parent's (LinMaxMatch's precomputation): a node of an
   id fails to its own id, then to a later place; any other to its parent's ids and those of
   each node the parent's failure passes through before one that goes on with the byte. */
static int link(Encoder *e, uint32_t parent, uint8_t byte, uint32_t node) {
    if (e->token[node] >= 0) {
        e->fail[node] = INSIDE;
        e->pops[node] = node;
        return 0;
    }
    List *parts = &e->parts;
    const size_t first = parts->n;
    if (first >= UINT32_MAX || list_add(parts, 0) < 0) return -1;  /* (its place is a uint32) */
    if (e->pops[parent] != NONE && list_add(parts, e->pops[parent]) < 0) return -1;
    uint32_t at = e->fail[parent], next = NONE;
    while (at != NONE && (next = child_of(e, at, byte)) == NONE) {
        if (e->pops[at] != NONE && list_add(parts, e->pops[at]) < 0) return -1;
        at = e->fail[at];
    }
    e->fail[node] = at == NONE ? NONE : next;
    const size_t count = parts->n - first - 1;
    if (count < 2) {  /* none, or one node's ids: no part of its own */
        e->pops[node] = count ? parts->at[first + 1] : NONE;
        parts->n = first;
    } else {
        parts->at[first] = (uint32_t)count;
        e->pops[node] = node;
        e->part[node] = (uint32_t)first;
    }
    return 0;
}

/* Every node's link, breadth first from each root: the inside trie's first (every failure
   leads to a shallower node of it), then the start's. Children are listed by parent first
   (counted, then placed: compressed rows over the edge map). */
static int link_all(Encoder *e) {
    const size_t n = e->n;
    uint32_t *first = calloc(n + 1, sizeof *first), *fill = NULL, *below = NULL, *queue = NULL;
    uint8_t *bytes = NULL;
    int status = -1;
    if (!first) goto done;
    for (size_t i = 0; i <= e->mask; i++)
        if (e->keys[i] != EMPTY_EDGE) first[(e->keys[i] >> 8) + 1]++;
    for (size_t v = 0; v < n; v++) first[v + 1] += first[v];
    fill = malloc((n ? n : 1) * sizeof *fill);
    below = malloc((e->edges ? e->edges : 1) * sizeof *below);
    bytes = malloc(e->edges ? e->edges : 1);
    queue = malloc((n ? n : 1) * sizeof *queue);
    if (!fill || !below || !bytes || !queue) goto done;
    memcpy(fill, first, n * sizeof *fill);
    for (size_t i = 0; i <= e->mask; i++) {
        if (e->keys[i] == EMPTY_EDGE) continue;
        const uint32_t parent = (uint32_t)(e->keys[i] >> 8);
        below[fill[parent]] = e->children[i];
        bytes[fill[parent]++] = (uint8_t)e->keys[i];
    }
    const uint32_t roots[2] = {INSIDE, START};
    for (int r = 0; r < 2; r++) {
        size_t head = 0, tail = 0;
        queue[tail++] = roots[r];
        while (head < tail) {
            const uint32_t node = queue[head++];
            for (uint32_t k = first[node]; k < first[node + 1]; k++) {
                if (link(e, node, bytes[k], below[k]) < 0) goto done;
                queue[tail++] = below[k];
            }
        }
    }
    status = 0;
done:
    free(first);
    free(fill);
    free(below);
    free(bytes);
    free(queue);
    return status;
}

int encoder_init(Encoder *e, const uint8_t *const *pieces, const size_t *lengths, size_t n) {
    memset(e, 0, sizeof *e);
    if (n >= (size_t)INT32_MAX) return -1;
    /* the two roots */
    if (grow(e) < 0 || grow(e) < 0) return -1;
    e->token[START] = e->token[INSIDE] = -1;
    e->n = 2;
    for (size_t id = 0; id < n; id++) {
        if (insert(e, START, pieces[id], lengths[id], (int32_t)id) < 0) return -1;
        if (lengths[id] > 2 && pieces[id][0] == '#' && pieces[id][1] == '#'
            && insert(e, INSIDE, pieces[id] + 2, lengths[id] - 2, (int32_t)id) < 0)
            return -1;
    }
    e->fail = malloc(e->n * sizeof *e->fail);
    e->pops = malloc(e->n * sizeof *e->pops);
    e->part = malloc(e->n * sizeof *e->part);
    if (!e->fail || !e->pops || !e->part) return -1;
    memset(e->fail, 0xff, e->n * sizeof *e->fail);  /* all NONE */
    memset(e->pops, 0xff, e->n * sizeof *e->pops);
    return link_all(e);
}

void encoder_free(Encoder *e) {
    free(e->keys);
    free(e->children);
    free(e->token);
    free(e->fail);
    free(e->pops);
    free(e->part);
    free(e->parts.at);
    free(e->stack);
    memset(e, 0, sizeof *e);
}

/* A growable array of ids (the output). */
static int ids_add(Ids *ids, int32_t id) {
    if (ids->n == ids->room) {
        size_t room = ids->room ? 2 * ids->room : 256;
        int32_t *at = realloc(ids->at, room * sizeof *at);
        if (!at) return -1;
        ids->at = at;
        ids->room = room;
    }
    ids->at[ids->n++] = id;
    return 0;
}

/* The ids of node's part of the pops tree, in order (a stack of nodes still to write). */
static int write_pops(Encoder *e, uint32_t node, Ids *out) {
    size_t n = 0;
    for (;;) {
        e->work++;
        if (e->token[node] >= 0) {
            if (ids_add(out, e->token[node]) < 0) return -1;
        } else {
            const uint32_t *parts = e->parts.at + e->part[node];
            const uint32_t count = parts[0];
            if (n + count > e->stack_room) {
                size_t room = e->stack_room ? 2 * e->stack_room : 256;
                while (room < n + count) room *= 2;
                uint32_t *stack = realloc(e->stack, room * sizeof *stack);
                if (!stack) return -1;
                e->stack = stack;
                e->stack_room = room;
            }
            for (uint32_t k = count; k > 0; k--) e->stack[n++] = parts[k];  /* first on top */
        }
        if (n == 0) return 0;
        node = e->stack[--n];
    }
}

/* One failure: node's ids written, its link taken; 0, 1 when there is none (the chunk has no
   encoding), -1 out of memory. */
static inline int fail_once(Encoder *e, uint32_t *node, Ids *out) {
    const uint32_t at = *node;
    if (e->fail[at] == NONE) return 1;
    if (e->pops[at] != NONE && write_pops(e, e->pops[at], out) < 0) return -1;
    *node = e->fail[at];
    e->work++;
    return 0;
}

int encoder_encode(Encoder *e, const uint8_t *chunk, size_t length, Ids *out) {
    out->n = 0;
    uint32_t node = START;
    int status;
    for (size_t i = 0; i < length; i++) {
        uint32_t below;
        while ((below = child_of(e, node, chunk[i])) == NONE)
            if ((status = fail_once(e, &node, out)) != 0) return status;
        node = below;
        e->work++;
    }
    if (length == 0) return 0;
    while (node != INSIDE)  /* what is left: the longest pieces it begins with */
        if ((status = fail_once(e, &node, out)) != 0) return status;
    return 0;
}
