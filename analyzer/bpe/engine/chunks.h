/*
 * Distinct chunks as the Unigram and WordPiece engines take them: a ChunkTable's buffers
 * (analyzer.bpe.counting) read as they are, one definition for both engines.
 */

#ifndef ANALYZER_CHUNKS_H
#define ANALYZER_CHUNKS_H

#include <stddef.h>
#include <stdint.h>

/* The distinct chunks: chunk k is data[offsets[k] .. offsets[k + 1]), occurring counts[k] times. */
typedef struct {
    const uint8_t *data;
    const int64_t *offsets;
    const int64_t *counts;
    size_t n;
} Chunks;

#endif
