/*
 * analyzer.bpe._engine's splitting and counting: split_text() and chunk_texts() (split.c: the
 * built-in pre-tokenizers) and the ChunkCounter type (counter.c: distinct chunks with their
 * counts, gathered from batches).
 */

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdlib.h>
#include <string.h>

#include "bindings.h"

/* ---------------------------------------------------------------------------------------- */
/* The built-in pre-tokenizers (split.c)                                                     */

/* The tables from their bytes: `classes` one byte per code point, `folds` uint32 pairs (code
   point, letter). 0, or -1 with an exception; `fold_store` holds up to 64 pairs. */
int read_tables(Py_buffer *classes, Py_buffer *folds, uint32_t *fold_store,
                       SplitTables *tables) {
    if (classes->len != CODE_POINTS || folds->len % 8 || folds->len / 8 > 32) {
        PyErr_SetString(PyExc_ValueError, "split tables: classes must hold one byte per code "
                                          "point and folds at most 32 pairs of uint32");
        return -1;
    }
    size_t n = (size_t)folds->len / 8;
    const uint32_t *pairs = folds->buf;
    for (size_t k = 0; k < n; k++) {
        fold_store[k] = pairs[2 * k];
        fold_store[32 + k] = pairs[2 * k + 1];
    }
    *tables = (SplitTables){classes->buf, fold_store, fold_store + 32, n, NULL};
    return 0;
}

static int read_text(PyObject *object, SplitText *text) {
    if (!PyUnicode_Check(object)) {
        PyErr_Format(PyExc_TypeError, "texts must be str, not %.80s", Py_TYPE(object)->tp_name);
        return -1;
    }
    Py_ssize_t length = PyUnicode_GET_LENGTH(object);
    if ((uint64_t)length >= UINT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "a text of 2**32 characters or more");
        return -1;
    }
    *text = (SplitText){PyUnicode_KIND(object), PyUnicode_DATA(object), (size_t)length};
    return 0;
}

/* split_text(text, pattern, classes, folds) -> list of its chunks (str), or None when the
   pattern would drop a character (findall's chunks would not give the text back). */
PyObject *engine_split_text(PyObject *Py_UNUSED(self), PyObject *args) {
    PyObject *object;
    int pattern;
    Py_buffer classes, folds;
    if (!PyArg_ParseTuple(args, "Uiy*y*", &object, &pattern, &classes, &folds)) return NULL;
    PyObject *result = NULL;
    uint32_t fold_store[64], *ends = NULL;
    SplitTables tables;
    SplitText text;
    if (pattern < 0 || pattern >= SPLIT_PATTERNS) {
        PyErr_Format(PyExc_ValueError, "no built-in pattern %d", pattern);
        goto done;
    }
    if (read_tables(&classes, &folds, fold_store, &tables) < 0 || read_text(object, &text) < 0)
        goto done;
    ends = malloc((text.length + 1) * sizeof *ends);
    if (!ends) {
        PyErr_NoMemory();
        goto done;
    }
    int lost;
    size_t n = split_text(pattern, &tables, &text, ends, &lost);
    if (lost) {
        result = Py_NewRef(Py_None);
        goto done;
    }
    result = PyList_New((Py_ssize_t)n);
    for (size_t k = 0, start = 0; result && k < n; start = ends[k++]) {
        PyObject *chunk = PyUnicode_Substring(object, (Py_ssize_t)start, (Py_ssize_t)ends[k]);
        if (!chunk) Py_CLEAR(result);
        else PyList_SET_ITEM(result, (Py_ssize_t)k, chunk);
    }
done:
    free(ends);
    PyBuffer_Release(&classes);
    PyBuffer_Release(&folds);
    return result;
}

/* What splitting texts under a built-in pattern starts from: the pattern checked, the tables
   read, the texts held as a tuple (no other thread can drop one meanwhile) and viewed in place.
   -1 with the error set on failure; the caller frees `*texts` and `*views` either way. */
int split_input(PyObject *sequence, int pattern, Py_buffer *classes, Py_buffer *folds,
                       uint32_t *fold_store, SplitTables *tables, PyObject **texts,
                       SplitText **views) {
    if (pattern < 0 || pattern >= SPLIT_PATTERNS) {
        PyErr_Format(PyExc_ValueError, "no built-in pattern %d", pattern);
        return -1;
    }
    if (read_tables(classes, folds, fold_store, tables) < 0) return -1;
    *texts = PySequence_Tuple(sequence);
    if (!*texts) return -1;
    Py_ssize_t n_texts = PyTuple_GET_SIZE(*texts);
    *views = malloc(((size_t)n_texts + 1) * sizeof **views);
    if (!*views) {
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t k = 0; k < n_texts; k++)
        if (read_text(PyTuple_GET_ITEM(*texts, k), &(*views)[k]) < 0) return -1;
    return 0;
}

/* chunk_texts(texts, pattern, classes, folds, weights=None, keep_ids=True, threads=1)
   -> (chunks, counts, ids, offsets, lost): the distinct chunks (str, in order of first
   appearance), int64 per chunk its occurrences (weights applied), and with keep_ids uint32 per
   occurrence its chunk's id and int64 per text (and one more) where its ids start (else None
   for both). `lost`: the first text the pattern would drop a character of, or -1. The work
   runs without the GIL, on `threads` threads (the same result for any number). */
PyObject *engine_chunk_texts(PyObject *Py_UNUSED(self), PyObject *args, PyObject *kwargs) {
    static char *keywords[] = {"texts", "pattern",  "classes", "folds",
                               "weights", "keep_ids", "threads", NULL};
    PyObject *sequence, *weights_object = Py_None;
    int pattern, keep_ids = 1, threads = 1;
    Py_buffer classes, folds, weights_view;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "Oiy*y*|Opi", keywords, &sequence, &pattern,
                                     &classes, &folds, &weights_object, &keep_ids, &threads))
        return NULL;
    PyObject *result = NULL, *texts = NULL, *chunks = NULL, *counts = NULL;
    int has_weights = 0, failed = 0;
    uint32_t fold_store[64];
    SplitText *views = NULL;
    Gathered gathered = {.lost = -1};
    SplitTables tables;
    if (split_input(sequence, pattern, &classes, &folds, fold_store, &tables, &texts, &views) < 0)
        goto done;
    Py_ssize_t n_texts = PyTuple_GET_SIZE(texts);
    has_weights = read_per_text(weights_object, &weights_view, "weights", n_texts * 8);
    if (has_weights < 0) goto done;
    gathered.offsets = keep_ids ? malloc(((size_t)n_texts + 1) * sizeof *gathered.offsets) : NULL;
    if (keep_ids && !gathered.offsets) {
        PyErr_NoMemory();
        goto done;
    }
    const int64_t *weights = has_weights ? weights_view.buf : NULL;
    Py_BEGIN_ALLOW_THREADS
    failed = chunk_gather(pattern, &tables, views, (size_t)n_texts, weights, threads, &gathered);
    Py_END_ALLOW_THREADS
    if (failed) {
        PyErr_NoMemory();
        goto done;
    }
    ChunkTable *table = &gathered.table;
    size_t n_chunks = gathered.lost < 0 ? table->n : 0;
    chunks = PyList_New((Py_ssize_t)n_chunks);
    counts = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(n_chunks * 8));
    if (!chunks || !counts) goto done;
    int64_t *count_of = (int64_t *)PyBytes_AS_STRING(counts);
    for (size_t id = 0; id < n_chunks; id++) {
        const ChunkEntry *entry = &table->entries[id];
        PyObject *chunk = PyUnicode_Substring(PyTuple_GET_ITEM(texts, entry->text), entry->start,
                                              entry->start + entry->length);
        if (!chunk) goto done;
        PyList_SET_ITEM(chunks, (Py_ssize_t)id, chunk);
        count_of[id] = entry->count;
    }
    if (keep_ids && gathered.lost < 0)
        result = Py_BuildValue("(OONNn)", chunks, counts,
                               bytes_of(gathered.ids, gathered.n_ids, 4),
                               bytes_of(gathered.offsets, (size_t)n_texts + 1, 8), gathered.lost);
    else
        result = Py_BuildValue("(OOOOn)", chunks, counts, Py_None, Py_None, gathered.lost);
done:
    Py_XDECREF(chunks);
    Py_XDECREF(counts);
    chunk_table_free(&gathered.table);
    free(gathered.ids);
    free(gathered.offsets);
    free(views);
    Py_XDECREF(texts);
    if (has_weights > 0) PyBuffer_Release(&weights_view);
    PyBuffer_Release(&classes);
    PyBuffer_Release(&folds);
    return result;
}

/* ---------------------------------------------------------------------------------------- */
/* ChunkCounter (counter.c)                                                                  */

typedef struct {
    PyObject_HEAD
    ChunkCounter counter;
    int busy; /* count_texts works on it without the GIL: no other call may touch it then */
} Counter;



int refused_while_busy(int busy) {
    if (!busy) return 0;
    PyErr_SetString(PyExc_RuntimeError, "the counter is counting on another thread");
    return -1;
}

static int counter_in_use(Counter *self) { return refused_while_busy(self->busy); }

static void Counter_dealloc(Counter *self) {
    counter_free(&self->counter);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *Counter_new(PyTypeObject *type, PyObject *Py_UNUSED(args), PyObject *Py_UNUSED(kwargs)) {
    Counter *self = (Counter *)type->tp_alloc(type, 0);
    if (self) memset(&self->counter, 0, sizeof(self->counter));
    return (PyObject *)self;
}

/* add(chunks, counts=None, first=0): each chunk (str) counted counts[i] more times (1 each
   without counts), its first occurrence's order key first + i. */
/* add(chunks, counts=None, first=0), its arguments `args` and `kwargs`, through `add` into
   `counter`: each chunk (a str) counted `counts[i]` times (once without counts), its order key
   first + i. None, or NULL with the error set. */
PyObject *add_chunks(PyObject *args, PyObject *kwargs, AddChunk add, void *counter) {
    static char *keywords[] = {"chunks", "counts", "first", NULL};
    PyObject *chunks, *counts_object = Py_None;
    long long first = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|OL", keywords, &chunks, &counts_object, &first))
        return NULL;
    PyObject *list = PySequence_Fast(chunks, "chunks must be a sequence of str");
    if (!list) return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(list);
    Py_buffer counts = {0};
    int has_counts = counts_object != Py_None;
    PyObject *result = NULL;
    if (has_counts) {
        if (read_int64s(counts_object, &counts, "counts") < 0) goto done;
        if (counts.len != n * 8) {
            PyErr_SetString(PyExc_ValueError, "chunks and counts differ in length");
            goto release;
        }
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *item = PySequence_Fast_GET_ITEM(list, i);
        Py_ssize_t length;
        const char *data = PyUnicode_Check(item) ? PyUnicode_AsUTF8AndSize(item, &length) : NULL;
        if (!data) {
            if (!PyErr_Occurred()) PyErr_Format(PyExc_TypeError, "chunk %zd is not a str", i);
            goto release;
        }
        int64_t count = has_counts ? ((const int64_t *)counts.buf)[i] : 1;
        if (add(counter, (const uint8_t *)data, (size_t)length, count, first + i) < 0) {
            PyErr_NoMemory();
            goto release;
        }
    }
    result = Py_NewRef(Py_None);
release:
    if (has_counts && counts.obj) PyBuffer_Release(&counts);
done:
    Py_DECREF(list);
    return result;
}

static int add_to_counter(void *counter, const uint8_t *data, size_t length, int64_t count,
                          int64_t first) {
    return counter_add(counter, data, length, count, first);
}

static PyObject *Counter_add(Counter *self, PyObject *args, PyObject *kwargs) {
    if (counter_in_use(self) < 0) return NULL;
    return add_chunks(args, kwargs, add_to_counter, &self->counter);
}

/* An int64 array given as one, or as the bytes of one (as items() gives them); 0 or -1. */
static int read_int64_items(PyObject *object, Py_buffer *view, const char *name) {
    if (!PyBytes_Check(object)) return read_int64s(object, view, name);
    if (PyObject_GetBuffer(object, view, PyBUF_C_CONTIGUOUS) < 0) return -1;
    if (view->len % 8) {
        PyBuffer_Release(view);
        PyErr_Format(PyExc_ValueError, "%s holds no whole number of 64-bit ints", name);
        return -1;
    }
    return 0;
}

/* add_items(data, offsets, counts, firsts): chunks as one UTF-8 blob cut at offsets (n + 1
   int64), each with its count and order key (how items() gives them, and a file keeps them). */
static PyObject *Counter_add_items(Counter *self, PyObject *args) {
    Py_buffer data, offsets, counts, firsts;
    PyObject *o_offsets, *o_counts, *o_firsts, *result = NULL;
    if (!PyArg_ParseTuple(args, "y*OOO", &data, &o_offsets, &o_counts, &o_firsts)) return NULL;
    int have = 0;
    if (counter_in_use(self) < 0) goto done;
    if (read_int64_items(o_offsets, &offsets, "offsets") < 0) goto done;
    have = 1;
    if (read_int64_items(o_counts, &counts, "counts") < 0) goto done;
    have = 2;
    if (read_int64_items(o_firsts, &firsts, "firsts") < 0) goto done;
    have = 3;
    Py_ssize_t n = counts.len / 8;
    const int64_t *at = offsets.buf;
    if (firsts.len != counts.len || offsets.len != (n + 1) * 8 || at[0] != 0 || at[n] != data.len) {
        PyErr_SetString(PyExc_ValueError, "offsets, counts and firsts do not fit the data");
        goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        if (at[i + 1] < at[i]) {
            PyErr_SetString(PyExc_ValueError, "offsets must not decrease");
            goto done;
        }
        if (counter_add(&self->counter, (const uint8_t *)data.buf + at[i], (size_t)(at[i + 1] - at[i]),
                        ((const int64_t *)counts.buf)[i], ((const int64_t *)firsts.buf)[i]) < 0) {
            PyErr_NoMemory();
            goto done;
        }
    }
    result = Py_NewRef(Py_None);
done:
    if (have >= 3) PyBuffer_Release(&firsts);
    if (have >= 2) PyBuffer_Release(&counts);
    if (have >= 1) PyBuffer_Release(&offsets);
    PyBuffer_Release(&data);
    return result;
}

/* merge(other): every chunk of another counter added to this one. */
static PyObject *Counter_merge(Counter *self, PyObject *other_object) {
    if (!PyObject_TypeCheck(other_object, &CounterType)) {
        PyErr_SetString(PyExc_TypeError, "merge takes a ChunkCounter");
        return NULL;
    }
    if (counter_in_use(self) < 0 || counter_in_use((Counter *)other_object) < 0) return NULL;
    const ChunkCounter *other = &((Counter *)other_object)->counter;
    for (size_t k = 0; k < other->n; k++) {
        const CountedChunk *chunk = &other->chunks[k];
        if (counter_add(&self->counter, counted_bytes(other, chunk), chunk->length, chunk->count,
                        chunk->first) < 0)
            return PyErr_NoMemory();
    }
    Py_RETURN_NONE;
}

/* items() -> (data, offsets, counts, firsts): the chunks in order of first occurrence, their
   UTF-8 end to end with int64 offsets (n + 1), counts and order keys. */
static PyObject *Counter_items(Counter *self, PyObject *Py_UNUSED(ignored)) {
    ChunkCounter *c = &self->counter;
    if (counter_in_use(self) < 0) return NULL;
    if (counter_sort(c) < 0) return PyErr_NoMemory();
    Listing out;
    if (listing_new(&out, c->total_bytes, c->n) < 0) return NULL;
    for (size_t k = 0; k < c->n; k++) listing_put(&out, k, (int64_t)out.position, c, &c->chunks[k]);
    return listing_done(&out, c->n, (int64_t)out.position);
}

/* A listing of n chunks, `bytes` of them: its four bytes objects made (0), or -1 with the
   error set and nothing held. */
int listing_new(Listing *out, size_t bytes, size_t n) {
    out->position = 0;
    out->data = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)bytes);
    out->offsets = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)((n + 1) * 8));
    out->counts = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(n * 8));
    out->firsts = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(n * 8));
    if (out->data && out->offsets && out->counts && out->firsts) return 0;
    Py_XDECREF(out->data);
    Py_XDECREF(out->offsets);
    Py_XDECREF(out->counts);
    Py_XDECREF(out->firsts);
    return -1;
}

/* The k-th chunk of a listing (of counter c), its offset given (a listing a slice at a time
   goes on from where the last slice ended), its bytes written after the last chunk's. */
void listing_put(Listing *out, size_t k, int64_t offset, const ChunkCounter *c,
                 const CountedChunk *chunk) {
    ((int64_t *)PyBytes_AS_STRING(out->offsets))[k] = offset;
    memcpy(PyBytes_AS_STRING(out->data) + out->position, counted_bytes(c, chunk), chunk->length);
    out->position += chunk->length;
    ((int64_t *)PyBytes_AS_STRING(out->counts))[k] = chunk->count;
    ((int64_t *)PyBytes_AS_STRING(out->firsts))[k] = chunk->first;
}

/* (data, offsets, counts, firsts), the listing's n + 1-th offset `end`. */
PyObject *listing_done(Listing *out, size_t n, int64_t end) {
    ((int64_t *)PyBytes_AS_STRING(out->offsets))[n] = end;
    return Py_BuildValue("(NNNN)", out->data, out->offsets, out->counts, out->firsts);
}

/* The memory a counter (or one part of a PartedCounter) holds, in bytes. */
size_t counter_nbytes(const ChunkCounter *c) {
    return c->bytes_capacity + c->chunks_capacity * sizeof(CountedChunk)
           + c->n_slots * sizeof(uint32_t);
}

static Py_ssize_t Counter_len(Counter *self) { return (Py_ssize_t)self->counter.n; }

static PyObject *Counter_nbytes(Counter *self, void *Py_UNUSED(closure)) {
    return PyLong_FromSize_t(counter_nbytes(&self->counter));
}

static PyObject *Counter_reduce(Counter *self, PyObject *Py_UNUSED(ignored)) {
    /* pickled as its items, which add_items takes back (a counter sent to or from a worker) */
    PyObject *items = Counter_items(self, NULL);
    if (!items) return NULL;
    PyObject *module = PyImport_ImportModule("analyzer.bpe._engine");
    PyObject *rebuild = module ? PyObject_GetAttrString(module, "_counter_from_items") : NULL;
    Py_XDECREF(module);
    if (!rebuild) {
        Py_DECREF(items);
        return NULL;
    }
    return Py_BuildValue("(NN)", rebuild, items);
}

int count_call_open(CountCall *call, PyObject *args, PyObject *kwargs) {
    static char *keywords[] = {"texts", "pattern", "classes", "folds", "first", "threads", NULL};
    PyObject *sequence;
    *call = (CountCall){.threads = 1};
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "Oiy*y*|Li", keywords, &sequence,
                                     &call->pattern, &call->classes, &call->folds, &call->first,
                                     &call->threads))
        return -1; /* the buffers it took are released by the parser */
    call->parsed = 1;
    if (split_input(sequence, call->pattern, &call->classes, &call->folds, call->fold_store,
                    &call->tables, &call->texts, &call->views) < 0)
        return -1;
    call->n = (size_t)PyTuple_GET_SIZE(call->texts);
    return 0;
}

void count_call_close(CountCall *call) {
    free(call->views);
    Py_XDECREF(call->texts);
    if (call->parsed) {
        PyBuffer_Release(&call->classes);
        PyBuffer_Release(&call->folds);
    }
}

Py_ssize_t gather_and_add(int pattern, const SplitTables *tables, const SplitText *views,
                          size_t n, int threads, int64_t first, AddGathered add, void *counter) {
    Gathered gathered = {.lost = -1};
    int failed;
    Py_BEGIN_ALLOW_THREADS
    failed = chunk_gather(pattern, tables, views, n, NULL, threads, &gathered);
    if (!failed && gathered.lost < 0) failed = add(counter, &gathered, views, first);
    Py_END_ALLOW_THREADS
    chunk_table_free(&gathered.table);
    free(gathered.ids);
    if (failed == -2)
        PyErr_SetString(PyExc_ValueError, "a chunk holds a lone surrogate, which UTF-8 cannot");
    else if (failed)
        PyErr_NoMemory();
    return failed ? -2 : gathered.lost;
}

static int gathered_to_counter(void *counter, const Gathered *gathered, const SplitText *views,
                          int64_t first) {
    return counter_add_gathered(counter, gathered, views, first);
}

/* count_texts(texts, pattern, classes, folds, first=0, threads=1) -> lost: the texts split
   under a built-in pattern (split.c, on `threads` threads) and their distinct chunks counted,
   the n-th its order key first + n, all without the GIL. `lost`: the first text the pattern
   would drop a character of (then nothing is counted: the caller lets `regex` say where), or
   -1. */
static PyObject *Counter_count_texts(Counter *self, PyObject *args, PyObject *kwargs) {
    CountCall call;
    PyObject *result = NULL;
    if (count_call_open(&call, args, kwargs) == 0 && counter_in_use(self) == 0) {
        self->busy = 1;
        Py_ssize_t lost = gather_and_add(call.pattern, &call.tables, call.views, call.n,
                                         call.threads, call.first, gathered_to_counter,
                                         &self->counter);
        self->busy = 0;
        if (lost >= -1) result = PyLong_FromSsize_t(lost);
    }
    count_call_close(&call);
    return result;
}

static PyMethodDef Counter_methods[] = {
    {"count_texts", (PyCFunction)(void (*)(void))Counter_count_texts, METH_VARARGS | METH_KEYWORDS,
     "count_texts(texts, pattern, classes, folds, first=0, threads=1) -> lost: the texts split "
     "and their distinct chunks counted, without the GIL"},
    {"add", (PyCFunction)(void (*)(void))Counter_add, METH_VARARGS | METH_KEYWORDS,
     "add(chunks, counts=None, first=0): count each chunk (its order key first + its index)"},
    {"add_items", (PyCFunction)Counter_add_items, METH_VARARGS,
     "add_items(data, offsets, counts, firsts): chunks as items() gives them"},
    {"merge", (PyCFunction)Counter_merge, METH_O, "merge(other): add another counter's chunks"},
    {"items", (PyCFunction)Counter_items, METH_NOARGS,
     "items() -> (data, offsets, counts, firsts), in order of first occurrence"},
    {"__reduce__", (PyCFunction)Counter_reduce, METH_NOARGS, NULL},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef Counter_getset[] = {
    {"nbytes", (getter)Counter_nbytes, NULL, "the memory it holds, in bytes", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PySequenceMethods Counter_sequence = {.sq_length = (lenfunc)Counter_len};

PyTypeObject CounterType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "analyzer.bpe._engine.ChunkCounter",
    .tp_basicsize = sizeof(Counter),
    .tp_dealloc = (destructor)Counter_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Distinct chunks with their counts and first occurrences (counter.c).",
    .tp_new = Counter_new,
    .tp_methods = Counter_methods,
    .tp_getset = Counter_getset,
    .tp_as_sequence = &Counter_sequence,
};

PyObject *counter_from_items(PyObject *Py_UNUSED(self), PyObject *args) {
    PyObject *counter = Counter_new(&CounterType, NULL, NULL);
    if (!counter) return NULL;
    PyObject *done = Counter_add_items((Counter *)counter, args);
    if (!done) {
        Py_DECREF(counter);
        return NULL;
    }
    Py_DECREF(done);
    return counter;
}
