/* Counting with a trained WordPiece vocabulary: Hugging Face's WordPiece model as it encodes
   one word (tokenizers, models/wordpiece `tokenize`), on bytes. A run counts every distinct
   chunk of its measured text with the model it trained; the library took most of that time,
   making an Encoding object per chunk.

   The library's greedy longest match: from the chunk's start, the longest prefix of what is
   left that is a vocabulary entry ("##" before it, past the chunk's first byte), tried from the
   longest down, one character at a time; it is a token, and the match goes on after it; a
   position where nothing matches makes the whole chunk one unknown token. The vocabulary is
   written in the byte-level alphabet (a byte per character, "#" as itself), so its strings
   and their characters are the bytes here, one for one, and "##" is the bytes "##": the same
   matches. A match longer than the longest entry is never tried (the library tries it and
   finds nothing there). The tests check every count against the library's. */

#include <stdlib.h>
#include <string.h>

#include "wordpiece.h"

const char *encode_chunks(const Vocab *vocab, uint32_t longest, const uint8_t *data,
                          const int64_t *offsets, size_t n, int32_t *ids, int32_t *lengths) {
    uint8_t *key = malloc((size_t)longest + 2);  /* "##" and a match: at most the longest */
    if (!key) return "out of memory";
    size_t used = 0;
    for (size_t k = 0; k < n; k++) {
        const uint8_t *chunk = data + offsets[k];
        const size_t size = (size_t)(offsets[k + 1] - offsets[k]), first = used;
        for (size_t start = 0; start < size;) {
            /* Past the first byte the entry is "##" and the bytes: 2 more to fit. */
            const size_t mark = start ? 2 : 0;
            if (longest <= mark) goto unknown;
            size_t end = size - start > longest - mark ? start + longest - mark : size;
            uint32_t found = NO_SLOT;
            for (; end > start; end--) {
                const uint32_t length = (uint32_t)(mark + end - start);
                memcpy(key, "##", mark);
                memcpy(key + mark, chunk + start, end - start);
                found = vocab_find(vocab, key, length, hash_bytes(key, length));
                if (found != NO_SLOT) break;
            }
            if (found == NO_SLOT) goto unknown;
            ids[used++] = (int32_t)found;
            start = end;
        }
        lengths[k] = (int32_t)(used - first);
    }
    free(key);
    return NULL;
unknown:  /* the library would make the chunk one unknown token: the caller asks it instead */
    free(key);
    return "a chunk has bytes no entry matches";
}
