/*
 * analyzer.bpe._engine's production tokenizers: the RankedEncoder type (ranked.c), built once
 * per tokenizer from its tokens and merges, then counting texts without the GIL.
 *
 *   RankedEncoder(pieces, starts, merges, byte_ids, characters, whole_first)
 *       pieces: every token's bytes end to end; starts: int64 per token and one more;
 *       merges: int32 (left, right, rank, made) per merge, or None to derive them from the
 *       tokens (tiktoken's ranks); byte_ids: int32 per byte.
 *   .encode(text, steps, classes, folds, digits=None) -> list[int]
 *   .count(texts, steps, classes, folds, spaces, threads=1, split_words=True, digits=None)
 *       -> (counts, split_words): int64 per text (bytes), the second None unless asked
 *   .merges: how many merges the model holds; .merge_quads(): them, as given or derived
 *   split_steps(text, steps, classes, folds, digits=None) -> list[str]: the chunks alone
 *   split_words_by_ids(texts, ids, offsets, pieces, starts, spaces) -> bytes: a library's
 *       tokens' split words (ranked.c's words_split_by_ids)
 *
 * `steps` is int32 (pattern, around) per pre-tokenizer step (split.c's patterns); `classes`
 * and `folds` the Unicode tables of the tokenizer's library; `spaces` a bitset of the
 * whitespace code points below WORD_SPACE_LIMIT; `digits` a bitset of the code points the Digits
 * step takes for digits, where they are not the tables' numbers.
 */

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdlib.h>
#include <string.h>

#include "bindings.h"

typedef struct {
    PyObject_HEAD
    RankedModel model;
    int built;
} RankedObject;

/* A buffer's int32s (array 'i', or bytes): the view held and the count in *n. 0 or -1. */
static int read_int32s(PyObject *object, Py_buffer *view, const char *name, size_t *n) {
    if (PyObject_GetBuffer(object, view, PyBUF_C_CONTIGUOUS) < 0) return -1;
    if (view->len % 4) {
        PyBuffer_Release(view);
        PyErr_Format(PyExc_ValueError, "%s must hold int32s", name);
        return -1;
    }
    *n = (size_t)view->len / 4;
    return 0;
}

static int ranked_init(RankedObject *self, PyObject *args, PyObject *kwargs) {
    static char *keywords[] = {"pieces", "starts", "merges", "byte_ids", "characters",
                               "whole_first", NULL};
    Py_buffer pieces, starts, merges = {0}, byte_ids = {0};
    PyObject *starts_object, *merges_object, *byte_ids_object;
    int characters, whole_first, result = -1, has_merges = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "y*OOOpp", keywords, &pieces, &starts_object,
                                     &merges_object, &byte_ids_object, &characters, &whole_first))
        return -1;
    if (self->built) {
        ranked_free(&self->model);
        self->built = 0;
    }
    if (read_int64s(starts_object, &starts, "starts") < 0) {
        PyBuffer_Release(&pieces);
        return -1;
    }
    size_t n_ids = (size_t)starts.len / 8, n_merges = 0, n_bytes = 0;
    const int64_t *at = starts.buf;
    if (n_ids < 1 || at[0] != 0 || at[n_ids - 1] != (int64_t)pieces.len) {
        PyErr_SetString(PyExc_ValueError, "starts must run from 0 to the length of pieces");
        goto done;
    }
    n_ids--;
    if (merges_object != Py_None) {
        if (read_int32s(merges_object, &merges, "merges", &n_merges) < 0) goto done;
        has_merges = 1;
        if (n_merges % 4) {
            PyErr_SetString(PyExc_ValueError, "merges: four int32s each");
            goto done;
        }
        n_merges /= 4;
    }
    if (read_int32s(byte_ids_object, &byte_ids, "byte_ids", &n_bytes) < 0) goto done;
    if (n_bytes != 256) {
        PyErr_SetString(PyExc_ValueError, "byte_ids: one id per byte (256)");
        goto done;
    }
    const char *problem;
    Py_BEGIN_ALLOW_THREADS
    problem = ranked_build(&self->model, pieces.buf, at, n_ids, has_merges ? merges.buf : NULL,
                           n_merges, !has_merges, byte_ids.buf, characters, whole_first);
    Py_END_ALLOW_THREADS
    self->built = 1;
    if (problem) {
        if (strcmp(problem, "out of memory") == 0) PyErr_NoMemory();
        else PyErr_SetString(PyExc_ValueError, problem);
        goto done;
    }
    result = 0;
done:
    PyBuffer_Release(&pieces);
    PyBuffer_Release(&starts);
    if (has_merges) PyBuffer_Release(&merges);
    if (byte_ids.obj) PyBuffer_Release(&byte_ids);
    return result;
}

static void ranked_dealloc(RankedObject *self) {
    if (self->built) ranked_free(&self->model);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* The steps from their int32 pairs (at most MAX_SPLIT_STEPS). 0 or -1. */
static int read_steps(Py_buffer *view, SplitStep *steps, int *n_steps) {
    if (view->len % 8 || view->len / 8 > MAX_SPLIT_STEPS) {
        PyErr_Format(PyExc_ValueError, "steps: int32 (pattern, around) pairs, at most %d",
                     MAX_SPLIT_STEPS);
        return -1;
    }
    const int32_t *pairs = view->buf;
    *n_steps = (int)(view->len / 8);
    for (int s = 0; s < *n_steps; s++) {
        if (pairs[2 * s] < 0 || pairs[2 * s] >= SPLIT_PATTERNS) {
            PyErr_Format(PyExc_ValueError, "no built-in pattern %d", pairs[2 * s]);
            return -1;
        }
        steps[s] = (SplitStep){pairs[2 * s], pairs[2 * s + 1] != 0};
    }
    return 0;
}

/* The optional digits bitset (a bit per code point) into tables->digits. 0 or -1. */
static int read_digits(PyObject *object, Py_buffer *view, SplitTables *tables) {
    if (object == Py_None) return 0;
    if (PyObject_GetBuffer(object, view, PyBUF_C_CONTIGUOUS) < 0) return -1;
    if (view->len != CODE_POINTS / 8) {
        PyBuffer_Release(view);
        view->obj = NULL;
        PyErr_Format(PyExc_ValueError, "digits: a bitset of %d bytes", CODE_POINTS / 8);
        return -1;
    }
    tables->digits = view->buf;
    return 0;
}

static int ready(RankedObject *self) {
    if (self->built && self->model.piece_start) return 0;
    PyErr_SetString(PyExc_ValueError, "the RankedEncoder was not built");
    return -1;
}

/* What encode() and split_steps() share: one text (a str) split under a pattern's steps,
   tables and digits, from the arguments (text, steps, classes, folds, digits=None). */
typedef struct {
    PyObject *object; /* the text, borrowed from the arguments */
    SplitText text;
    uint32_t *cuts;   /* chunk c runs from cuts[c] to cuts[text.length + 1 + c] */
    size_t n;         /* chunks */
    Py_buffer steps_view, classes, folds, digits;
    int parsed;
} SplitOne;

/* The text split (SplitOne): 0, or -1 with the error set; split_one_close either way. */
static int split_one(SplitOne *one, PyObject *args) {
    PyObject *digits_object = Py_None;
    uint32_t fold_store[64];
    SplitTables tables;
    SplitStep steps[MAX_SPLIT_STEPS];
    int n_steps;
    *one = (SplitOne){0};
    if (!PyArg_ParseTuple(args, "Uy*y*y*|O", &one->object, &one->steps_view, &one->classes,
                          &one->folds, &digits_object))
        return -1; /* the buffers it took are released by the parser */
    one->parsed = 1;
    if (read_steps(&one->steps_view, steps, &n_steps) < 0
        || read_tables(&one->classes, &one->folds, fold_store, &tables) < 0
        || read_digits(digits_object, &one->digits, &tables) < 0)
        return -1;
    one->text = (SplitText){PyUnicode_KIND(one->object), PyUnicode_DATA(one->object),
                            (size_t)PyUnicode_GET_LENGTH(one->object)};
    size_t length = one->text.length;
    one->cuts = malloc(4 * (length + 1) * sizeof *one->cuts);
    if (!one->cuts) {
        PyErr_NoMemory();
        return -1;
    }
    one->n = split_steps(steps, n_steps, &tables, &one->text, one->cuts, one->cuts + length + 1,
                         one->cuts + 2 * (length + 1), one->cuts + 3 * (length + 1));
    return 0;
}

static void split_one_close(SplitOne *one) {
    free(one->cuts);
    if (one->parsed) {
        PyBuffer_Release(&one->steps_view);
        PyBuffer_Release(&one->classes);
        PyBuffer_Release(&one->folds);
    }
    if (one->digits.obj) PyBuffer_Release(&one->digits);
}

/* encode(text, steps, classes, folds, digits=None) -> list[int]: the text's tokens. */
static PyObject *ranked_encode_text(RankedObject *self, PyObject *args) {
    if (ready(self) < 0) return NULL;
    SplitOne one;
    PyObject *result = NULL;
    uint32_t *token_starts = NULL;
    int32_t *ids = NULL;
    uint8_t *utf8 = NULL;
    RankedScratch scratch = {0};
    if (split_one(&one, args) < 0) goto done;
    size_t length = one.text.length;
    utf8 = malloc(4 * length + 1);
    ids = malloc((4 * length + 1) * sizeof *ids);
    token_starts = malloc((4 * length + 1) * sizeof *token_starts);
    if (!utf8 || !ids || !token_starts || ranked_scratch_reserve(&scratch, 4 * length)) {
        PyErr_NoMemory();
        goto done;
    }
    result = PyList_New(0);
    for (size_t c = 0; result && c < one.n; c++) {
        size_t start = one.cuts[c], end = one.cuts[length + 1 + c];
        size_t bytes = utf8_of(&one.text, start, end - start, utf8);
        if (bytes == SIZE_MAX) {
            PyErr_SetString(PyExc_ValueError, "a lone surrogate has no UTF-8 encoding");
            Py_CLEAR(result);
            break;
        }
        size_t tokens = ranked_encode(&self->model, utf8, bytes, &scratch, ids, token_starts);
        for (size_t t = 0; t < tokens; t++) {
            PyObject *id = PyLong_FromLong(ids[t]);
            if (!id || PyList_Append(result, id) < 0) {
                Py_XDECREF(id);
                Py_CLEAR(result);
                break;
            }
            Py_DECREF(id);
        }
    }
done:
    ranked_scratch_free(&scratch);
    free(utf8);
    free(ids);
    free(token_starts);
    split_one_close(&one);
    return result;
}

/* count(texts, steps, classes, folds, spaces, threads=1, split_words=True, digits=None)
   -> (counts, split_words) */
static PyObject *ranked_count_texts(RankedObject *self, PyObject *args, PyObject *kwargs) {
    static char *keywords[] = {"texts", "steps", "classes", "folds", "spaces", "threads",
                               "split_words", "digits", NULL};
    PyObject *sequence, *digits_object = Py_None;
    Py_buffer steps_view, classes, folds, spaces, digits = {0};
    int threads = 1, want_split = 1;
    if (ready(self) < 0) return NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "Oy*y*y*y*|ipO", keywords, &sequence,
                                     &steps_view, &classes, &folds, &spaces, &threads, &want_split,
                                     &digits_object))
        return NULL;
    PyObject *result = NULL, *texts = NULL;
    uint32_t fold_store[64];
    SplitText *views = NULL;
    int64_t *counts = NULL, *split = NULL;
    SplitTables tables;
    SplitStep steps[MAX_SPLIT_STEPS];
    int n_steps;
    if (read_steps(&steps_view, steps, &n_steps) < 0) goto done;
    if (spaces.len != (WORD_SPACE_LIMIT + 7) / 8) {
        PyErr_Format(PyExc_ValueError, "spaces: a bitset of %d bytes", (WORD_SPACE_LIMIT + 7) / 8);
        goto done;
    }
    /* split_input reads the tables and holds the texts; the pattern is checked by read_steps */
    if (split_input(sequence, SPLIT_WORDS, &classes, &folds, fold_store, &tables, &texts,
                    &views) < 0
        || read_digits(digits_object, &digits, &tables) < 0)
        goto done;
    size_t n_texts = (size_t)PyTuple_GET_SIZE(texts);
    counts = calloc(n_texts + 1, sizeof *counts);
    split = want_split ? calloc(n_texts + 1, sizeof *split) : NULL;
    if (!counts || (want_split && !split)) {
        PyErr_NoMemory();
        goto done;
    }
    int status;
    Py_BEGIN_ALLOW_THREADS
    status = ranked_count(&self->model, steps, n_steps, &tables, spaces.buf, views, n_texts,
                          threads, counts, split);
    Py_END_ALLOW_THREADS
    if (status == -2) {
        PyErr_SetString(PyExc_ValueError, "a text holds a lone surrogate, which has no UTF-8 encoding");
        goto done;
    }
    if (status < 0) {
        PyErr_NoMemory();
        goto done;
    }
    PyObject *split_object = want_split ? bytes_of(split, n_texts, sizeof *split) : Py_NewRef(Py_None);
    result = Py_BuildValue("(NN)", bytes_of(counts, n_texts, sizeof *counts), split_object);
done:
    free(counts);
    free(split);
    free(views);
    Py_XDECREF(texts);
    PyBuffer_Release(&steps_view);
    PyBuffer_Release(&classes);
    PyBuffer_Release(&folds);
    PyBuffer_Release(&spaces);
    if (digits.obj) PyBuffer_Release(&digits);
    return result;
}

/* split_steps(text, steps, classes, folds, digits=None) -> list[str]: the text's chunks. */
PyObject *engine_split_steps(PyObject *Py_UNUSED(self), PyObject *args) {
    SplitOne one;
    PyObject *result = NULL;
    if (split_one(&one, args) == 0) {
        result = PyList_New((Py_ssize_t)one.n);
        for (size_t c = 0; result && c < one.n; c++) {
            PyObject *chunk = PyUnicode_Substring(one.object, (Py_ssize_t)one.cuts[c],
                                                  (Py_ssize_t)one.cuts[one.text.length + 1 + c]);
            if (!chunk) Py_CLEAR(result);
            else PyList_SET_ITEM(result, (Py_ssize_t)c, chunk);
        }
    }
    split_one_close(&one);
    return result;
}

/* merge_quads() -> bytes: int32 (left, right, rank, made) of every merge the model holds (the
   derived ones too), in no particular order: the model given again builds without deriving. */
static PyObject *ranked_merge_quads(RankedObject *self, PyObject *Py_UNUSED(ignored)) {
    if (ready(self) < 0) return NULL;
    const RankedModel *m = &self->model;
    PyObject *result = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(m->n_merges * 16));
    if (!result) return NULL;
    int32_t *quad = (int32_t *)PyBytes_AS_STRING(result);
    for (size_t s = 0; s <= m->merge_mask; s++) {
        const MergeSlot *slot = &m->merge_slots[s];
        if (slot->key == EMPTY_PAIR) continue;
        *quad++ = key_left(slot->key);
        *quad++ = key_right(slot->key);
        *quad++ = (int32_t)slot->rank;
        *quad++ = slot->made;
    }
    return result;
}

/* split_words_by_ids(texts, ids, offsets, pieces, starts, spaces) -> bytes: int64 per text,
   the words its tokens split (-1: they do not spell it); the k-th text's tokens are
   ids[offsets[k], offsets[k + 1]) (int32, int64), each id's bytes pieces[starts[id],
   starts[id + 1]) (int64). */
PyObject *engine_split_words_by_ids(PyObject *Py_UNUSED(self), PyObject *args) {
    PyObject *sequence, *offsets_object, *starts_object;
    Py_buffer ids, offsets, pieces, starts, spaces;
    if (!PyArg_ParseTuple(args, "Oy*Oy*Oy*", &sequence, &ids, &offsets_object, &pieces,
                          &starts_object, &spaces))
        return NULL;
    PyObject *result = NULL, *texts = NULL;
    int has_offsets = 0, has_starts = 0;
    uint8_t *buffer = NULL, *text_bytes = NULL, *marks = NULL;
    int64_t *split = NULL;
    if (read_int64s(offsets_object, &offsets, "offsets") < 0) goto done;
    has_offsets = 1;
    if (read_int64s(starts_object, &starts, "starts") < 0) goto done;
    has_starts = 1;
    if (spaces.len != (WORD_SPACE_LIMIT + 7) / 8 || ids.len % 4) {
        PyErr_SetString(PyExc_ValueError, "spaces: a bitset of the word spaces; ids: int32s");
        goto done;
    }
    texts = PySequence_Tuple(sequence);
    if (!texts) goto done;
    size_t n_texts = (size_t)PyTuple_GET_SIZE(texts), n_ids = (size_t)starts.len / 8 - 1;
    const int64_t *at = offsets.buf, *piece_starts = starts.buf;
    if ((size_t)offsets.len / 8 != n_texts + 1 || at[n_texts] != ids.len / 4 || !starts.len) {
        PyErr_SetString(PyExc_ValueError, "offsets: one per text and one more, to the ids' end");
        goto done;
    }
    size_t longest_text = 0, longest_spelled = 0;
    for (size_t k = 0; k < n_texts; k++) {
        PyObject *text = PyTuple_GET_ITEM(texts, (Py_ssize_t)k);
        if (!PyUnicode_Check(text)) {
            PyErr_SetString(PyExc_TypeError, "texts must be str");
            goto done;
        }
        if ((size_t)PyUnicode_GET_LENGTH(text) > longest_text) longest_text = (size_t)PyUnicode_GET_LENGTH(text);
        if (at[k] > at[k + 1] || at[k] < 0) {
            PyErr_SetString(PyExc_ValueError, "offsets out of order");
            goto done;
        }
        size_t spelled = 0;
        for (int64_t t = at[k]; t < at[k + 1]; t++) {
            int32_t id = ((const int32_t *)ids.buf)[t];
            if (id >= 0 && (size_t)id < n_ids) spelled += (size_t)(piece_starts[id + 1] - piece_starts[id]);
        }
        if (spelled > longest_spelled) longest_spelled = spelled;
    }
    split = malloc((n_texts + 1) * sizeof *split);
    buffer = malloc(longest_spelled + 1);
    text_bytes = malloc(4 * longest_text + 1);
    marks = malloc(longest_spelled / 8 + 2);
    if (!split || !buffer || !text_bytes || !marks) {
        PyErr_NoMemory();
        goto done;
    }
    int bad_id = 0;
    for (size_t k = 0; k < n_texts; k++) {
        PyObject *object = PyTuple_GET_ITEM(texts, (Py_ssize_t)k);
        SplitText text = {PyUnicode_KIND(object), PyUnicode_DATA(object),
                          (size_t)PyUnicode_GET_LENGTH(object)};
        size_t n = (size_t)(at[k + 1] - at[k]), spelled = 0;
        for (size_t t = 0; t < n; t++) {
            int32_t id = ((const int32_t *)ids.buf)[at[k] + (int64_t)t];
            if (id >= 0 && (size_t)id < n_ids) spelled += (size_t)(piece_starts[id + 1] - piece_starts[id]);
        }
        memset(marks, 0, spelled / 8 + 2);
        split[k] = words_split_by_ids(&text, (const int32_t *)ids.buf + at[k], n, pieces.buf,
                                      piece_starts, n_ids, spaces.buf, buffer, text_bytes, marks);
        if (split[k] == -2) bad_id = 1;
    }
    if (bad_id) {
        PyErr_SetString(PyExc_ValueError, "an id has no bytes in the table");
        goto done;
    }
    result = bytes_of(split, n_texts, sizeof *split);
done:
    free(split);
    free(buffer);
    free(text_bytes);
    free(marks);
    Py_XDECREF(texts);
    PyBuffer_Release(&ids);
    if (has_offsets) PyBuffer_Release(&offsets);
    PyBuffer_Release(&pieces);
    if (has_starts) PyBuffer_Release(&starts);
    PyBuffer_Release(&spaces);
    return result;
}

static PyObject *ranked_merges(RankedObject *self, void *Py_UNUSED(closure)) {
    return PyLong_FromSize_t(self->built ? self->model.n_merges : 0);
}

static PyMethodDef ranked_methods[] = {
    {"encode", (PyCFunction)ranked_encode_text, METH_VARARGS,
     "encode(text, steps, classes, folds) -> list[int]: the text's tokens"},
    {"merge_quads", (PyCFunction)ranked_merge_quads, METH_NOARGS,
     "merge_quads() -> bytes: int32 (left, right, rank, made) of every merge held"},
    {"count", (PyCFunction)(void (*)(void))ranked_count_texts, METH_VARARGS | METH_KEYWORDS,
     "count(texts, steps, classes, folds, spaces, threads=1, split_words=True) -> (counts, "
     "split_words): int64 per text, as bytes (split_words None unless asked)"},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef ranked_getset[] = {
    {"merges", (getter)ranked_merges, NULL, "how many merges the model holds", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

PyTypeObject RankedType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "analyzer.bpe._engine.RankedEncoder",
    .tp_basicsize = sizeof(RankedObject),
    .tp_dealloc = (destructor)ranked_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A production tokenizer's BPE, merges by rank (see analyzer/bpe/ranked.py).",
    .tp_methods = ranked_methods,
    .tp_getset = ranked_getset,
    .tp_init = (initproc)ranked_init,
    .tp_new = PyType_GenericNew,
};
