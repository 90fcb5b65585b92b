/*
 * The built-in pre-tokenizers in compiled code: each pattern of analyzer/bpe/pretokenize.py
 * (`words`, `gpt2`, `cl100k`, `o200k`, `llama3`, and `superbpe`, which splits around its
 * matches) written out as the matcher the `regex` module runs for it, so that the chunks are
 * exactly `regex.findall`'s (tests/test_bpe_native_split.py proves it on random text of every
 * script and on the real corpora). A pattern of the user's never comes here: it stays in
 * `regex`, with its time bound.
 *
 * How a pattern is written out. `regex` tries the alternatives in order at a position and keeps
 * the first that matches, backtracking inside it: a greedy repetition gives characters back one
 * at a time until the rest matches. Each `match_*` below returns the end of the match at `i`
 * (> i), or -1 when no alternative matches there. Where a repetition can give back, the
 * comment says what the give-back finds, e.g. `\s*[\r\n]` over a run of whitespace matches up
 * to the run's last CR or LF.
 *
 * Character classes come from the `regex` module itself (analyzer/bpe/native_split.py reads
 * them out of it when first needed): one byte of CLASS_* bits per code point, and the code
 * points that `(?i)` matches for each contraction letter. So the tables are always those of the
 * Unicode version of the `regex` module installed.
 *
 * The distinct chunks are gathered in an open-addressing table keyed by a hash of their code
 * points (first appearance order, occurrences counted with the texts' weights).
 */

#define _DEFAULT_SOURCE /* POSIX threads, with -std=c11 */

#include "engine.h"

#include <stdlib.h>
#include <string.h>

#if ENGINE_THREADS
#include <pthread.h>
#endif

/* ---------------------------------------------------------------------------------------- */
/* Reading a text                                                                            */

static inline uint32_t at(const SplitText *t, size_t i) {
    switch (t->kind) { /* one kind per text, so the branch is always predicted */
    case 1: return ((const uint8_t *)t->data)[i];
    case 2: return ((const uint16_t *)t->data)[i];
    default: return ((const uint32_t *)t->data)[i];
    }
}

static inline int is(const SplitTables *tables, uint32_t c, uint8_t mask) {
    return (tables->classes[c] & mask) != 0;
}

/* [^\s\p{L}\p{N}]: what is neither whitespace, a letter nor a number ("other"). */
static inline int is_other(const SplitTables *tables, uint32_t c) {
    return !is(tables, c, CLASS_SPACE | CLASS_LETTER | CLASS_NUMBER);
}

/* [^\r\n\p{L}\p{N}]: the one character that may lead a word (a space, a tab, a quote...). */
static inline int is_lead(const SplitTables *tables, uint32_t c) {
    return c != '\r' && c != '\n' && !is(tables, c, CLASS_LETTER | CLASS_NUMBER);
}

static inline int is_crlf(uint32_t c) { return c == '\r' || c == '\n'; }

/* The end of the run of characters in `mask`, from i. */
static inline size_t run_of(const SplitText *t, const SplitTables *tables, size_t i, uint8_t mask) {
    while (i < t->length && is(tables, at(t, i), mask)) i++;
    return i;
}

static inline size_t run_of_other(const SplitText *t, const SplitTables *tables, size_t i) {
    while (i < t->length && is_other(tables, at(t, i))) i++;
    return i;
}

static inline size_t run_of_non_space(const SplitText *t, const SplitTables *tables, size_t i) {
    while (i < t->length && !is(tables, at(t, i), CLASS_SPACE)) i++;
    return i;
}

/* [\r\n]* (or, with the slash, [\r\n/]*) from i. */
static inline size_t run_of_crlf(const SplitText *t, size_t i, int slash) {
    while (i < t->length) {
        uint32_t c = at(t, i);
        if (!is_crlf(c) && !(slash && c == '/')) break;
        i++;
    }
    return i;
}

/* \p{N}{1,n} from i, which is a number: up to n of them. */
static inline size_t numbers_up_to(const SplitText *t, const SplitTables *tables, size_t i,
                                   size_t n) {
    size_t end = i + 1;
    while (end < t->length && end < i + n && is(tables, at(t, end), CLASS_NUMBER)) end++;
    return end;
}

static inline size_t up_to_three_numbers(const SplitText *t, const SplitTables *tables, size_t i) {
    return numbers_up_to(t, tables, i, 3);
}

/* The lower-case ASCII letter that `(?i)` matches c to, among the contraction letters, or 0. */
static inline uint32_t folded(const SplitTables *tables, uint32_t c) {
    for (size_t k = 0; k < tables->n_folds; k++)
        if (tables->fold_from[k] == c) return tables->fold_to[k];
    return 0;
}

/* (?i:'s|'t|'re|'ve|'m|'ll|'d) at i (or, `fold` 0, the case-sensitive '(?:[sdmt]|ll|ve|re)
   of gpt2; the alternatives differ in their first letter, so their order does not matter):
   its end, or 0. */
static size_t contraction(const SplitText *t, const SplitTables *tables, size_t i, int fold) {
    if (i + 1 >= t->length || at(t, i) != '\'') return 0;
    uint32_t first = at(t, i + 1);
    if (fold) first = folded(tables, first);
    if (first == 's' || first == 't' || first == 'm' || first == 'd') return i + 2;
    if (i + 2 >= t->length) return 0;
    uint32_t second = at(t, i + 2);
    if (fold) second = folded(tables, second);
    if ((first == 'r' && second == 'e') || (first == 'v' && second == 'e')
        || (first == 'l' && second == 'l'))
        return i + 3;
    return 0;
}

enum { TAIL_NONE, TAIL_CRLF, TAIL_CRLF_SLASH };

/* ` ?[^\s\p{L}\p{N}]+` at i, then (`tail`) nothing, [\r\n]* or [\r\n/]*: its end, or 0. */
static size_t other_run(const SplitText *t, const SplitTables *tables, size_t i, int tail) {
    size_t start = i;
    if (at(t, i) == ' ' && i + 1 < t->length && is_other(tables, at(t, i + 1))) start = i + 1;
    else if (!is_other(tables, at(t, i))) return 0;
    size_t end = run_of_other(t, tables, start);
    return tail == TAIL_NONE ? end : run_of_crlf(t, end, tail == TAIL_CRLF_SLASH);
}

/* The end of the last CR or LF in [i, end) plus one, or 0: what `\s*[\r\n]` (or `\s*[\r\n]+`)
   matches over the whitespace run [i, end), giving back from the run's end. */
static size_t through_last_crlf(const SplitText *t, size_t i, size_t end) {
    for (size_t k = end; k > i; k--)
        if (is_crlf(at(t, k - 1))) return k;
    return 0;
}

/* `\s+(?!\S)` over the whitespace run [i, end): all of it at the end of the text, else all but
   its last character (which then leads the next chunk), or 0 for a run of one. */
static size_t space_before_space(const SplitText *t, size_t i, size_t end) {
    if (end == t->length) return end;
    return end - i >= 2 ? end - 1 : 0;
}

/* ---------------------------------------------------------------------------------------- */
/* The patterns                                                                              */

/* \s?\S+|\s+ */
static ptrdiff_t match_words(const SplitText *t, const SplitTables *tables, size_t i) {
    if (!is(tables, at(t, i), CLASS_SPACE)) return (ptrdiff_t)run_of_non_space(t, tables, i);
    if (i + 1 < t->length && !is(tables, at(t, i + 1), CLASS_SPACE))
        return (ptrdiff_t)run_of_non_space(t, tables, i + 1);
    return (ptrdiff_t)run_of(t, tables, i, CLASS_SPACE);
}

/* A space then a run of `mask`, or the run alone (` ?\p{L}++` and the like): its end, or 0. */
static size_t spaced_run(const SplitText *t, const SplitTables *tables, size_t i, uint8_t mask) {
    if (at(t, i) == ' ' && i + 1 < t->length && is(tables, at(t, i + 1), mask))
        return run_of(t, tables, i + 1, mask);
    return is(tables, at(t, i), mask) ? run_of(t, tables, i, mask) : 0;
}

/* '(?:[sdmt]|ll|ve|re)| ?\p{L}++| ?\p{N}++| ?[^\s\p{L}\p{N}]++|\s++$|\s+(?!\S)|\s */
static ptrdiff_t match_gpt2(const SplitText *t, const SplitTables *tables, size_t i) {
    size_t end;
    if ((end = contraction(t, tables, i, 0))) return (ptrdiff_t)end;
    if ((end = spaced_run(t, tables, i, CLASS_LETTER))) return (ptrdiff_t)end;
    if ((end = spaced_run(t, tables, i, CLASS_NUMBER))) return (ptrdiff_t)end;
    if ((end = other_run(t, tables, i, TAIL_NONE))) return (ptrdiff_t)end;
    size_t run = run_of(t, tables, i, CLASS_SPACE);
    if ((end = space_before_space(t, i, run))) return (ptrdiff_t)end; /* \s++$, \s+(?!\S) */
    return (ptrdiff_t)(i + 1);                                         /* \s */
}

/* [^\r\n\p{L}\p{N}]?\p{L}+ at i (cl100k's, possessive, and llama3's, greedy: the same here,
   since a lead given back could not start the letters, being no letter): its end, or 0. */
static size_t led_word(const SplitText *t, const SplitTables *tables, size_t i) {
    uint32_t c = at(t, i);
    if (is_lead(tables, c))
        return i + 1 < t->length && is(tables, at(t, i + 1), CLASS_LETTER)
                   ? run_of(t, tables, i + 1, CLASS_LETTER) : 0;
    return is(tables, c, CLASS_LETTER) ? run_of(t, tables, i, CLASS_LETTER) : 0;
}

/* cl100k:  '(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+
            | ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s
   llama3:  (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}
            | ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
   The same matches but for whitespace that runs to the end of the text: cl100k's \s++$ takes
   all of it (`whole_final_run`), llama3's \s*[\r\n]+ stops after its last line break. (The
   possessive quantifiers change nothing here: no alternative could match after giving back.
   And the last alternative meets only a run of one: \s and \s+ are the same.) */
static ptrdiff_t match_cl100k_llama3(const SplitText *t, const SplitTables *tables, size_t i,
                                     int whole_final_run, size_t digits) {
    size_t end;
    if ((end = contraction(t, tables, i, 1))) return (ptrdiff_t)end;
    if ((end = led_word(t, tables, i))) return (ptrdiff_t)end;
    if (is(tables, at(t, i), CLASS_NUMBER)) return (ptrdiff_t)numbers_up_to(t, tables, i, digits);
    if ((end = other_run(t, tables, i, TAIL_CRLF))) return (ptrdiff_t)end;
    size_t run = run_of(t, tables, i, CLASS_SPACE);
    if (whole_final_run && run == t->length) return (ptrdiff_t)run;
    if ((end = through_last_crlf(t, i, run))) return (ptrdiff_t)end;
    if ((end = space_before_space(t, i, run))) return (ptrdiff_t)end;
    return (ptrdiff_t)run;
}

static ptrdiff_t match_cl100k(const SplitText *t, const SplitTables *tables, size_t i) {
    return match_cl100k_llama3(t, tables, i, 1, 3);
}

static ptrdiff_t match_llama3(const SplitText *t, const SplitTables *tables, size_t i) {
    return match_cl100k_llama3(t, tables, i, 0, 3);
}

/* Qwen's: llama3's with \p{N} one at a time (|\p{N}| for |\p{N}{1,3}|). */
static ptrdiff_t match_qwen(const SplitText *t, const SplitTables *tables, size_t i) {
    return match_cl100k_llama3(t, tables, i, 0, 1);
}

/* One of o200k's two word alternatives at i, with the lead taken or not (`start` is i or
   i + 1), without the contraction after it: its end, or 0.
   `upper_first` 0: [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+
   `upper_first` 1: [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*
   The two classes overlap (Lm, Lo, M), so the first repetition may have to give back: with
   `*` then `+`, the lower run must start at the last position p (from the upper run's end
   back to its start) that holds a lower-class character. */
static size_t o200k_word(const SplitText *t, const SplitTables *tables, size_t start,
                         int upper_first) {
    size_t upper = run_of(t, tables, start, CLASS_UPPERISH);
    if (upper_first) return upper > start ? run_of(t, tables, upper, CLASS_LOWERISH) : 0;
    for (size_t p = upper + 1; p > start; p--) {
        size_t q = p - 1;
        if (q < t->length && is(tables, at(t, q), CLASS_LOWERISH))
            return run_of(t, tables, q, CLASS_LOWERISH);
    }
    return 0;
}

/* [^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|...)?
   |[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|...)?
   |\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+ */
static ptrdiff_t match_o200k_like(const SplitText *t, const SplitTables *tables, size_t i,
                                  int contractions, size_t digits) {
    uint32_t c = at(t, i);
    int lead = is_lead(tables, c); /* the optional lead is tried taken first, then not */
    for (int upper_first = 0; upper_first <= 1; upper_first++) {
        for (int taken = lead; taken >= 0; taken--) {
            if (i + (size_t)taken >= t->length) continue;
            size_t end = o200k_word(t, tables, i + (size_t)taken, upper_first);
            if (end) {
                size_t suffix = contractions ? contraction(t, tables, end, 1) : 0;
                return (ptrdiff_t)(suffix ? suffix : end);
            }
        }
    }
    if (is(tables, c, CLASS_NUMBER)) return (ptrdiff_t)numbers_up_to(t, tables, i, digits);
    size_t end;
    if ((end = other_run(t, tables, i, TAIL_CRLF_SLASH))) return (ptrdiff_t)end;
    size_t run = run_of(t, tables, i, CLASS_SPACE);
    if ((end = through_last_crlf(t, i, run))) return (ptrdiff_t)end;
    if ((end = space_before_space(t, i, run))) return (ptrdiff_t)end;
    return (ptrdiff_t)run; /* \s+ */
}

static ptrdiff_t match_o200k(const SplitText *t, const SplitTables *tables, size_t i) {
    return match_o200k_like(t, tables, i, 1, 3);
}

/* Mistral's Tekken: o200k's without the contractions after a word, and with \p{N} one at a
   time. */
static ptrdiff_t match_tekken(const SplitText *t, const SplitTables *tables, size_t i) {
    return match_o200k_like(t, tables, i, 0, 1);
}

/* \p{N}{1,3}| ?[^\s\p{L}\p{N}]{2,}[\r\n/]*| +(?!\S)   (SuperBPE's; split around) */
static ptrdiff_t match_superbpe(const SplitText *t, const SplitTables *tables, size_t i) {
    uint32_t c = at(t, i);
    if (is(tables, c, CLASS_NUMBER)) return (ptrdiff_t)up_to_three_numbers(t, tables, i);
    /* Two or more others, after an optional space (given back if the others are too few,
       when the space itself cannot start them). */
    size_t start = c == ' ' ? i + 1 : i;
    size_t others = run_of_other(t, tables, start);
    if (others >= start + 2) return (ptrdiff_t)run_of_crlf(t, others, 1);
    if (c == ' ') {
        /* ` +(?!\S)`: the spaces, when whitespace or the end follows; else all but the last */
        size_t spaces = i;
        while (spaces < t->length && at(t, spaces) == ' ') spaces++;
        if (spaces == t->length || is(tables, at(t, spaces), CLASS_SPACE)) return (ptrdiff_t)spaces;
        if (spaces - i >= 2) return (ptrdiff_t)(spaces - 1);
    }
    return -1;
}

/* Hugging Face's Digits(individual_digits=True): each \p{N} alone (split around). */
static ptrdiff_t match_digits(const SplitText *t, const SplitTables *tables, size_t i) {
    uint32_t c = at(t, i);
    int digit = tables->digits ? (tables->digits[c >> 3] >> (c & 7)) & 1 : is(tables, c, CLASS_NUMBER);
    return digit ? (ptrdiff_t)(i + 1) : -1;
}

/* \p{N}{1,3} alone (DeepSeek's first split, around its matches). */
static ptrdiff_t match_numbers(const SplitText *t, const SplitTables *tables, size_t i) {
    return is(tables, at(t, i), CLASS_NUMBER) ? (ptrdiff_t)up_to_three_numbers(t, tables, i) : -1;
}

static inline int is_kana_han(uint32_t c) {
    return (c >= 0x4E00 && c <= 0x9FA5) || (c >= 0x3040 && c <= 0x309F) || (c >= 0x30A0 && c <= 0x30FF);
}

/* [\u4e00-\u9fa5\u3040-\u309f\u30a0-\u30ff]+ (DeepSeek's second split, around): runs of the
   common Han ideographs, hiragana and katakana (code point ranges: no table). */
static ptrdiff_t match_kana_han(const SplitText *t, const SplitTables *tables, size_t i) {
    (void)tables;
    if (!is_kana_han(at(t, i))) return -1;
    while (i < t->length && is_kana_han(at(t, i))) i++;
    return (ptrdiff_t)i;
}

/* ASCII punctuation: !"#$%&'()*+,-./:;<=>?@[\]^_`{|}~ */
static inline int is_ascii_punct(uint32_t c) {
    return (c >= 0x21 && c <= 0x2F) || (c >= 0x3A && c <= 0x40) || (c >= 0x5B && c <= 0x60)
           || (c >= 0x7B && c <= 0x7E);
}

static inline int is_ascii_letter(uint32_t c) { return (c | 0x20) >= 'a' && (c | 0x20) <= 'z'; }

/* DeepSeek V3's third split (around its matches):
     [!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+
     | ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
   The optional lead of the second may itself be a mark: taken, the letters and marks after it
   must follow; given back, the mark starts the run, which then ends where it would have. */
static ptrdiff_t match_deepseek(const SplitText *t, const SplitTables *tables, size_t i) {
    uint32_t c = at(t, i);
    int next_ok = i + 1 < t->length;
    if (is_ascii_punct(c) && next_ok && is_ascii_letter(at(t, i + 1))) {
        size_t end = i + 1;
        while (end < t->length && is_ascii_letter(at(t, end))) end++;
        return (ptrdiff_t)end;
    }
    if (is(tables, c, CLASS_LETTER | CLASS_MARK))
        return (ptrdiff_t)run_of(t, tables, i, CLASS_LETTER | CLASS_MARK);
    if (!is_crlf(c) && !is(tables, c, CLASS_LETTER | CLASS_PUNCT | CLASS_SYMBOL) && next_ok
        && is(tables, at(t, i + 1), CLASS_LETTER | CLASS_MARK))
        return (ptrdiff_t)run_of(t, tables, i + 1, CLASS_LETTER | CLASS_MARK);
    if (c == ' ' && next_ok && is(tables, at(t, i + 1), CLASS_PUNCT | CLASS_SYMBOL))
        return (ptrdiff_t)run_of_crlf(t, run_of(t, tables, i + 1, CLASS_PUNCT | CLASS_SYMBOL), 0);
    if (is(tables, c, CLASS_PUNCT | CLASS_SYMBOL))
        return (ptrdiff_t)run_of_crlf(t, run_of(t, tables, i, CLASS_PUNCT | CLASS_SYMBOL), 0);
    if (!is(tables, c, CLASS_SPACE)) return -1;
    size_t run = run_of(t, tables, i, CLASS_SPACE), end;
    if ((end = through_last_crlf(t, i, run))) return (ptrdiff_t)end;
    if ((end = space_before_space(t, i, run))) return (ptrdiff_t)end;
    return (ptrdiff_t)run;
}

/* \u2581*[^\u2581]+|\u2581+: a SentencePiece-made model's text cut before each run of "▁" (its
   space) that follows something else. Exact only where no token holds a "▁" after another
   character, so that no merge could cross the cut (analyzer/external/engine_models.py checks
   the vocabulary before it cuts). */
static ptrdiff_t match_metaspace(const SplitText *t, const SplitTables *tables, size_t i) {
    (void)tables;
    while (i < t->length && at(t, i) == 0x2581) i++;
    while (i < t->length && at(t, i) != 0x2581) i++;
    return (ptrdiff_t)i;
}

typedef ptrdiff_t (*Matcher)(const SplitText *, const SplitTables *, size_t);

static const Matcher matchers[SPLIT_PATTERNS] = {
    [SPLIT_WORDS] = match_words,     [SPLIT_GPT2] = match_gpt2,       [SPLIT_CL100K] = match_cl100k,
    [SPLIT_O200K] = match_o200k,     [SPLIT_LLAMA3] = match_llama3,   [SPLIT_SUPERBPE] = match_superbpe,
    [SPLIT_QWEN] = match_qwen,       [SPLIT_TEKKEN] = match_tekken,   [SPLIT_DIGITS] = match_digits,
    [SPLIT_NUMBERS] = match_numbers, [SPLIT_KANA_HAN] = match_kana_han,
    [SPLIT_DEEPSEEK] = match_deepseek, [SPLIT_METASPACE] = match_metaspace,
};

/* The chunks of [0, t->length) under one pattern: their starts and ends, the number returned.
   A match at i is tried at every position in turn (the regex engines' search); the text
   between matches is a chunk when `around`, else dropped, and *lost says it was. */
static size_t split_one(int pattern, int around, const SplitTables *tables, const SplitText *t,
                        uint32_t *starts, uint32_t *ends, int *lost) {
    Matcher match = matchers[pattern];
    size_t n = 0, i = 0, pending = 0; /* pending: where the text between matches began */
    *lost = 0;
    while (i < t->length) {
        ptrdiff_t end = match(t, tables, i);
        if (end < 0) {
            i++;
            continue;
        }
        if (i > pending) {
            if (around) {
                starts[n] = (uint32_t)pending;
                ends[n++] = (uint32_t)i;
            } else {
                *lost = 1; /* findall drops it */
            }
        }
        starts[n] = (uint32_t)i;
        ends[n++] = (uint32_t)end;
        i = pending = (size_t)end;
    }
    if (pending < t->length) {
        if (around) {
            starts[n] = (uint32_t)pending;
            ends[n++] = (uint32_t)t->length;
        } else {
            *lost = 1;
        }
    }
    return n;
}

size_t split_text(int pattern, const SplitTables *tables, const SplitText *t, uint32_t *ends,
                  int *lost) {
    /* The built-in pre-tokenizers keep the text between matches as chunks (only superbpe's
       has any: the others match every character), and say when findall would have lost it. */
    Matcher match = matchers[pattern];
    size_t n = 0, i = 0, pending = 0;
    *lost = 0;
    while (i < t->length) {
        ptrdiff_t end = match(t, tables, i);
        if (end < 0) {
            i++;
            continue;
        }
        if (i > pending) {
            if (pattern != SPLIT_SUPERBPE) *lost = 1; /* findall would drop it */
            ends[n++] = (uint32_t)i;
        }
        ends[n++] = (uint32_t)end;
        i = pending = (size_t)end;
    }
    if (pending < t->length) {
        if (pattern != SPLIT_SUPERBPE) *lost = 1;
        ends[n++] = (uint32_t)t->length;
    }
    return n;
}

size_t split_steps(const SplitStep *steps, int n_steps, const SplitTables *tables,
                   const SplitText *t, uint32_t *starts, uint32_t *ends, uint32_t *scratch_starts,
                   uint32_t *scratch_ends) {
    if (n_steps == 0) { /* no pre-tokenizer: the text is one chunk */
        if (!t->length) return 0;
        starts[0] = 0;
        ends[0] = (uint32_t)t->length;
        return 1;
    }
    int lost;
    size_t n = split_one(steps[0].pattern, steps[0].around, tables, t, starts, ends, &lost);
    for (int s = 1; s < n_steps; s++) {
        /* the pieces so far move to the scratch arrays, and each is cut anew into the output */
        memcpy(scratch_starts, starts, n * sizeof *starts);
        memcpy(scratch_ends, ends, n * sizeof *ends);
        size_t made = 0;
        for (size_t k = 0; k < n; k++) {
            size_t offset = scratch_starts[k];
            SplitText piece = {t->kind, (const char *)t->data + offset * (size_t)t->kind,
                               scratch_ends[k] - offset};
            size_t got = split_one(steps[s].pattern, steps[s].around, tables, &piece,
                                   starts + made, ends + made, &lost);
            for (size_t j = made; j < made + got; j++) {
                starts[j] += (uint32_t)offset;
                ends[j] += (uint32_t)offset;
            }
            made += got;
        }
        n = made;
    }
    return n;
}

/* ---------------------------------------------------------------------------------------- */
/* The distinct chunks                                                                       */

uint64_t chunk_hash(const SplitText *t, size_t start, size_t length) {
    /* FNV-1a over words of three code points (21 bits each: the same whatever the text's
       width), then mixed: a third of the dependent multiplies of one per code point. */
    uint64_t h = 0xCBF29CE484222325ull ^ length;
    size_t i = start, end = start + length;
    for (; i + 3 <= end; i += 3)
        h = (h ^ (at(t, i) | (uint64_t)at(t, i + 1) << 21 | (uint64_t)at(t, i + 2) << 42)) * 0x100000001B3ull;
    if (i < end) {
        uint64_t word = at(t, i);
        if (i + 1 < end) word |= (uint64_t)at(t, i + 1) << 21;
        h = (h ^ word) * 0x100000001B3ull;
    }
    return hash_key(h);
}

int same_chunk(const SplitText *a, size_t a_start, const SplitText *b, size_t b_start,
               size_t length) {
    if (a->kind == b->kind)
        return memcmp((const char *)a->data + a_start * (size_t)a->kind,
                      (const char *)b->data + b_start * (size_t)b->kind,
                      length * (size_t)a->kind) == 0;
    for (size_t i = 0; i < length; i++) /* the same characters, held in different widths */
        if (at(a, a_start + i) != at(b, b_start + i)) return 0;
    return 1;
}

/* Room for twice as many slots as chunks (and at least 1024). */
static void chunk_rehash(Status *status, ChunkTable *table) {
    size_t n_slots = 1024;
    while (n_slots < 2 * (table->n + 1)) n_slots *= 2;
    if (table->slots && n_slots <= table->mask + 1) return;
    uint32_t *slots = calloc(n_slots, sizeof *slots);
    if (!slots) {
        status->failed = 1;
        return;
    }
    for (size_t id = 0; id < table->n; id++) {
        size_t s = table->entries[id].hash & (n_slots - 1);
        while (slots[s]) s = (s + 1) & (n_slots - 1);
        slots[s] = (uint32_t)id + 1;
    }
    free(table->slots);
    table->slots = slots;
    table->mask = n_slots - 1;
}

uint32_t chunk_add(Status *status, ChunkTable *table, const SplitText *texts, uint32_t k,
                   size_t start, size_t length, uint64_t hash, int64_t weight) {
    if (!table->slots || 2 * (table->n + 1) > table->mask + 1) {
        chunk_rehash(status, table);
        if (status->failed) return UINT32_MAX;
    }
    size_t s = hash & table->mask;
    for (; table->slots[s]; s = (s + 1) & table->mask) {
        uint32_t id = table->slots[s] - 1;
        ChunkEntry *entry = &table->entries[id];
        if (entry->hash == hash && entry->length == length
            && same_chunk(&texts[entry->text], entry->start, &texts[k], start, length)) {
            entry->count += weight;
            return id;
        }
    }
    table->entries = grow(status, table->entries, &table->capacity, table->n + 1,
                          sizeof *table->entries);
    if (status->failed) return UINT32_MAX;
    uint32_t id = (uint32_t)table->n++;
    table->entries[id] = (ChunkEntry){hash, weight, k, (uint32_t)start, (uint32_t)length};
    table->slots[s] = id + 1;
    return id;
}

void chunk_table_free(ChunkTable *table) {
    free(table->slots);
    free(table->entries);
    memset(table, 0, sizeof *table);
}

/* ---------------------------------------------------------------------------------------- */
/* Gathering the chunks of many texts, on several threads                                    */

/* How many chunks ahead of the one being added its slot, its entry, and the text of its first
   occurrence are fetched (see gather_part). */
#define SLOT_AHEAD 24
#define ENTRY_AHEAD 16
#define TEXT_AHEAD 8

/* One thread's share: the texts [first, last), gathered into a table of its own. */
typedef struct {
    int pattern;
    const SplitTables *tables;
    const SplitText *texts;
    const int64_t *weights;
    size_t first, last;
    int keep_ids;
    ChunkTable table;
    uint32_t *ids; /* this part's occurrences, as ids of its own table */
    size_t n_ids, ids_capacity;
    int64_t *offsets; /* the shared array: this part writes offsets[first..last), its own count */
    ptrdiff_t lost;   /* the first text of the part the pattern would lose a character of */
    Status status;
} Part;

static void *gather_part(void *argument) {
    Part *part = argument;
    size_t longest = 0;
    for (size_t k = part->first; k < part->last; k++)
        if (part->texts[k].length > longest) longest = part->texts[k].length;
    uint32_t *ends = malloc((longest + 1) * sizeof *ends);
    uint64_t *hashes = malloc((longest + 1) * sizeof *hashes);
    if (!ends || !hashes) {
        free(ends);
        free(hashes);
        part->status.failed = 1;
        return NULL;
    }
    for (size_t k = part->first; k < part->last && !part->status.failed; k++) {
        const SplitText *text = &part->texts[k];
        if (part->keep_ids) part->offsets[k] = (int64_t)part->n_ids;
        int lost;
        size_t n = split_text(part->pattern, part->tables, text, ends, &lost);
        if (lost) {
            part->lost = (ptrdiff_t)k;
            break;
        }
        if (part->keep_ids)
            part->ids = grow(&part->status, part->ids, &part->ids_capacity, part->n_ids + n,
                             sizeof *part->ids);
        int64_t weight = part->weights ? part->weights[k] : 1;
        for (size_t c = 0, start = 0; c < n; start = ends[c++])
            hashes[c] = chunk_hash(text, start, ends[c] - start);
        ChunkTable *table = &part->table;
        for (size_t c = 0, start = 0; c < n && !part->status.failed; start = ends[c++]) {
            /* Fetch ahead what the adds to come will read (a big table's slot, its entry, the
               chunk's first occurrence): each a cache miss, overlapped with this add. */
            if (table->slots) {
                if (c + SLOT_AHEAD < n) __builtin_prefetch(&table->slots[hashes[c + SLOT_AHEAD] & table->mask]);
                if (c + ENTRY_AHEAD < n) {
                    uint32_t slot = table->slots[hashes[c + ENTRY_AHEAD] & table->mask];
                    if (slot) __builtin_prefetch(&table->entries[slot - 1]);
                }
                if (c + TEXT_AHEAD < n) {
                    uint32_t slot = table->slots[hashes[c + TEXT_AHEAD] & table->mask];
                    if (slot) {
                        const ChunkEntry *entry = &table->entries[slot - 1];
                        const SplitText *seen = &part->texts[entry->text];
                        __builtin_prefetch((const char *)seen->data + (size_t)entry->start * (size_t)seen->kind);
                    }
                }
            }
            size_t length = ends[c] - start;
            uint32_t id = chunk_add(&part->status, table, part->texts, (uint32_t)k, start,
                                    length, hashes[c], weight);
            if (part->keep_ids) part->ids[part->n_ids++] = id;
        }
    }
    free(ends);
    free(hashes);
    return NULL;
}

/* Move part `from`'s chunks into `into` (whose texts all come before): `into` keeps its ids,
   and the chunks it lacks are appended in `from`'s order, which is their order of first
   appearance in the whole, so the result is what one thread would have gathered. Then
   `from`'s occurrences are renumbered and appended to `into`'s, and its offsets moved on. */
static void merge_part(Part *into, Part *from) {
    ChunkTable *table = &from->table;
    uint32_t *renumbered = malloc((table->n + 1) * sizeof *renumbered);
    if (!renumbered) {
        into->status.failed = 1;
        return;
    }
    for (size_t id = 0; id < table->n && !into->status.failed; id++) {
        const ChunkEntry *entry = &table->entries[id];
        renumbered[id] = chunk_add(&into->status, &into->table, into->texts, entry->text,
                                   entry->start, entry->length, entry->hash, entry->count);
    }
    if (into->keep_ids && !into->status.failed) {
        for (size_t k = from->first; k < from->last; k++) from->offsets[k] += (int64_t)into->n_ids;
        into->ids = grow(&into->status, into->ids, &into->ids_capacity, into->n_ids + from->n_ids,
                         sizeof *into->ids);
        for (size_t i = 0; i < from->n_ids && !into->status.failed; i++)
            into->ids[into->n_ids++] = renumbered[from->ids[i]];
    }
    free(renumbered);
}

int chunk_gather(int pattern, const SplitTables *tables, const SplitText *texts, size_t n_texts,
                 const int64_t *weights, int n_threads, Gathered *out) {
    if (n_threads < 1) n_threads = 1;
    if (n_threads > MAX_SPLIT_THREADS) n_threads = MAX_SPLIT_THREADS;
    if ((size_t)n_threads > n_texts) n_threads = n_texts ? (int)n_texts : 1;
    Part *parts = calloc((size_t)n_threads, sizeof *parts);
    if (!parts) return -1;
    /* Cut the texts into runs of about equal length (characters), one per thread. */
    size_t total = 0, done = 0, k = 0;
    for (size_t j = 0; j < n_texts; j++) total += texts[j].length + 1;
    for (int p = 0; p < n_threads; p++) {
        Part *part = &parts[p];
        *part = (Part){.pattern = pattern, .tables = tables, .texts = texts, .weights = weights,
                       .keep_ids = out->offsets != NULL, .offsets = out->offsets, .lost = -1};
        size_t goal = total / (size_t)n_threads * (size_t)(p + 1);
        part->first = k;
        while (k < n_texts && (p == n_threads - 1 || done < goal)) done += texts[k++].length + 1;
        part->last = k;
    }
#if ENGINE_THREADS
    pthread_t threads[MAX_SPLIT_THREADS];
    int started[MAX_SPLIT_THREADS] = {0};
    for (int p = 1; p < n_threads; p++)
        started[p] = pthread_create(&threads[p], NULL, gather_part, &parts[p]) == 0;
    gather_part(&parts[0]);
    for (int p = 1; p < n_threads; p++) {
        if (started[p]) pthread_join(threads[p], NULL);
        else gather_part(&parts[p]); /* no thread could be made: do it here */
    }
#else
    for (int p = 0; p < n_threads; p++) gather_part(&parts[p]);
#endif
    int failed = 0;
    ptrdiff_t lost = -1;
    for (int p = 0; p < n_threads; p++) {
        failed |= parts[p].status.failed;
        if (lost < 0 && parts[p].lost >= 0) lost = parts[p].lost;
    }
    for (int p = 1; p < n_threads && !failed && lost < 0; p++) {
        merge_part(&parts[0], &parts[p]);
        failed |= parts[0].status.failed;
    }
    if (parts[0].keep_ids && !failed && lost < 0) out->offsets[n_texts] = (int64_t)parts[0].n_ids;
    out->table = parts[0].table;
    out->ids = parts[0].ids;
    out->n_ids = parts[0].n_ids;
    out->lost = lost;
    for (int p = 1; p < n_threads; p++) {
        chunk_table_free(&parts[p].table);
        free(parts[p].ids);
    }
    free(parts);
    return failed ? -1 : 0;
}
