/* Counting with a trained Unigram model: Hugging Face's Unigram model as it encodes a chunk
   (tokenizers, models/unigram `encode_optimized`), on bytes. A run counts every distinct chunk
   of its measured text with the model it trained; the library took most of that time, making
   an Encoding object per chunk.

   The library's Viterbi: positions from the chunk's start, one character at a time; at each,
   every piece that begins there, shortest first (its trie's prefix search), offers the best
   score to its end plus its own; the first offer to reach an end is taken, a later one only
   when greater. The best path to the chunk's end, read back, is the encoding. The model is
   written in the byte-level alphabet (a byte per character), so its pieces and their
   characters are the bytes here, one for one: the same offers in the same order, the same sums
   of the same doubles (the library reads the scores from the tokenizer.json as Python does).
   A position where no one-byte piece begins would make the library add an unknown node (the
   analyzer's models have every byte): the caller asks the library then. The piece index and
   the nodes are the trainer's (lattice.c); the tests check every count against the library's. */

#include <stdlib.h>
#include <string.h>

#include "unigram.h"

const char *viterbi_chunks(const PieceIndex *index, int max, const double *scores,
                           const uint8_t *data, const int64_t *offsets, size_t n,
                           int32_t *ids, int32_t *lengths) {
    size_t longest = 0;
    for (size_t k = 0; k < n; k++)
        if ((size_t)(offsets[k + 1] - offsets[k]) > longest) longest = (size_t)(offsets[k + 1] - offsets[k]);
    const size_t room = longest ? longest : 1;
    int32_t *node_ids = malloc(room * (size_t)max * sizeof *node_ids);
    uint8_t *node_lengths = malloc(room * (size_t)max), *at = malloc(room), *reached = malloc(room + 1);
    double *best = malloc((room + 1) * sizeof *best);
    size_t *from = malloc((room + 1) * sizeof *from);
    int32_t *token = malloc((room + 1) * sizeof *token);
    const char *problem = NULL;
    if (!node_ids || !node_lengths || !at || !reached || !best || !from || !token) {
        problem = "out of memory";
        goto done;
    }
    size_t used = 0;
    for (size_t k = 0; k < n; k++) {
        const uint8_t *chunk = data + offsets[k];
        const size_t size = (size_t)(offsets[k + 1] - offsets[k]);
        text_nodes(index, chunk, size, max, node_ids, node_lengths, at, NULL, 0);
        memset(reached, 0, size + 1);
        reached[0] = 1;
        best[0] = 0.0;
        size_t node = 0;
        for (size_t s = 0; s < size; s++) {  /* every position is reached: s - 1 has a byte */
            int single = 0;
            for (uint8_t q = 0; q < at[s]; q++, node++) {
                const size_t end = s + node_lengths[node];
                const double offer = scores[node_ids[node]] + best[s];
                if (!reached[end] || offer > best[end]) {
                    best[end] = offer;
                    from[end] = s;
                    token[end] = node_ids[node];
                    reached[end] = 1;
                }
                single |= node_lengths[node] == 1;
            }
            if (!single) {
                problem = "a byte of a chunk is no piece";
                goto done;
            }
        }
        size_t count = 0;
        for (size_t end = size; end > 0; end = from[end]) count++;
        size_t place = used + count;
        for (size_t end = size; end > 0; end = from[end]) ids[--place] = token[end];
        lengths[k] = (int32_t)count;
        used += count;
    }
done:
    free(node_ids);
    free(node_lengths);
    free(at);
    free(reached);
    free(best);
    free(from);
    free(token);
    return problem;
}
