/*
 * analyzer.bpe._engine's PartedCounter (counter.c's PartedCounter) and utf8_lines() (lines.c):
 * what the counting pass over a training source counts with. Its threads count batches into
 * one PartedCounter at once, without the GIL, each distinct chunk into the one part its hash
 * picks: no thread's table repeats another's, and nothing is merged at the end.
 */

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdlib.h>
#include <string.h>

#include "bindings.h"

/* utf8_lines(block) -> (starts, ends, characters) or None: the documents of a block of whole
   lines (streams._plain_lines's), as int64 byte offsets, and their code points in all; None
   when the block is not strict UTF-8. */
PyObject *engine_utf8_lines(PyObject *Py_UNUSED(self), PyObject *args) {
    Py_buffer block;
    if (!PyArg_ParseTuple(args, "y*", &block)) return NULL;
    const uint8_t *data = block.buf;
    size_t n = (size_t)block.len, lines = 0;
    for (const uint8_t *p = data; (p = memchr(p, '\n', n - (size_t)(p - data))); p++) lines++;
    PyObject *starts = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(lines * 8));
    PyObject *ends = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(lines * 8));
    PyObject *result = NULL;
    if (starts && ends) {
        ptrdiff_t found;
        size_t characters;
        Py_BEGIN_ALLOW_THREADS
        found = utf8_lines(data, n, (int64_t *)PyBytes_AS_STRING(starts),
                           (int64_t *)PyBytes_AS_STRING(ends), &characters);
        Py_END_ALLOW_THREADS
        if (found < 0) result = Py_NewRef(Py_None);
        else if (_PyBytes_Resize(&starts, found * 8) == 0 && _PyBytes_Resize(&ends, found * 8) == 0)
            result = Py_BuildValue("(OOn)", starts, ends, (Py_ssize_t)characters);
    }
    Py_XDECREF(starts);
    Py_XDECREF(ends);
    PyBuffer_Release(&block);
    return result;
}

typedef struct {
    PyObject_HEAD
    PartedCounter counter;
    int busy;       /* calls counting into it without the GIL now */
    int listed;     /* items(limit) was called: its slots are gone, it counts no more */
    int ordered;    /* its parts are in order of first occurrence (nothing counted since) */
    size_t *at;     /* items(limit): the next chunk of each part, or NULL before the first call */
    size_t at_byte; /* and the bytes given so far */
} Parted;

static int parted_in_use(Parted *self) { return refused_while_busy(self->busy); }

/* -1 with the error set when the counter was listed a slice at a time (it counts no more). */
static int parted_listed(Parted *self) {
    if (!self->listed) return 0;
    PyErr_SetString(PyExc_RuntimeError, "the counter was listed a slice at a time (items(limit)): "
                                        "it counts no more");
    return -1;
}

static void Parted_dealloc(Parted *self) {
    parted_free(&self->counter);
    free(self->at);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *Parted_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    static char *keywords[] = {"parts", NULL};
    int parts = 1;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|i", keywords, &parts)) return NULL;
    if (parts < 1 || parts > MAX_SPLIT_THREADS) {
        PyErr_Format(PyExc_ValueError, "parts: from 1 to %d, not %d", MAX_SPLIT_THREADS, parts);
        return NULL;
    }
    Parted *self = (Parted *)type->tp_alloc(type, 0);
    if (!self) return NULL;
    self->at = NULL;
    self->at_byte = 0;
    if (parted_init(&self->counter, parts) < 0) {
        Py_DECREF(self);
        return PyErr_NoMemory();
    }
    return (PyObject *)self;
}

/* The next items(limit) lists from the first chunk. */
static void forget_listing(Parted *self) {
    free(self->at);
    self->at = NULL;
    self->at_byte = 0;
}

/* parted_add_gathered, from the part a batch's place picks: threads on other batches seldom
   meet. */
static int gathered_to_parts(void *counter, const Gathered *gathered, const SplitText *views,
                        int64_t first) {
    return parted_add_gathered(counter, gathered, views, first,
                               (int)((unsigned long long)first >> 24 & 0xFFFF));
}

/* A batch counted (without the GIL): its `lost` (see gather_and_add), or -2 with the error set. */
static Py_ssize_t count_batch(Parted *self, int pattern, const SplitTables *tables,
                              const SplitText *views, size_t n_texts, long long first,
                              int threads) {
    if (parted_listed(self) < 0) return -2;
    self->ordered = 0;
    self->busy++;
    Py_ssize_t lost = gather_and_add(pattern, tables, views, n_texts, threads, first,
                                     gathered_to_parts, &self->counter);
    self->busy--;
    return lost;
}

/* count_texts(texts, pattern, classes, folds, first=0, threads=1) -> lost: as
   ChunkCounter.count_texts (other threads may count into it at the same time). */
static PyObject *Parted_count_texts(Parted *self, PyObject *args, PyObject *kwargs) {
    CountCall call;
    PyObject *result = NULL;
    if (count_call_open(&call, args, kwargs) == 0) {
        Py_ssize_t lost = count_batch(self, call.pattern, &call.tables, call.views, call.n,
                                      call.first, call.threads);
        if (lost >= -1) result = PyLong_FromSsize_t(lost);
    }
    count_call_close(&call);
    return result;
}

/* The documents [starts[k], ends[k]) of `data` as texts to split: an ASCII one read in place
   (as Latin-1, whose code points it shares), any other decoded into `*wide` at the width its
   widest code point needs (1, 2 or 4 bytes, as Python's str: no more memory than the str
   was). 0, or -1 with the error set (bytes that are not UTF-8, a document of 2**32 code
   points or more). */
static int utf8_views(const uint8_t *data, size_t size, const int64_t *starts,
                      const int64_t *ends, size_t n, SplitText *views, uint8_t **wide) {
    size_t total = 0; /* bytes of the decoded documents, each kept aligned to its width */
    for (size_t k = 0; k < n; k++) {
        if (starts[k] < 0 || ends[k] < starts[k] || (size_t)ends[k] > size) {
            PyErr_Format(PyExc_ValueError, "document %zu is not within the data", k);
            return -1;
        }
        const uint8_t *text = data + starts[k];
        size_t length = (size_t)(ends[k] - starts[k]), i = 0;
        while (i < length && text[i] < 0x80) i++;
        if (i == length) {
            views[k] = (SplitText){1, text, length};
            continue;
        }
        size_t points;
        uint32_t widest = utf8_widest(text, length, &points);
        if (widest == UINT32_MAX) {
            PyErr_Format(PyExc_ValueError, "document %zu is not UTF-8", k);
            return -1;
        }
        if (points >= UINT32_MAX) {
            PyErr_SetString(PyExc_ValueError, "a text of 2**32 characters or more");
            return -1;
        }
        int kind = widest < 0x100 ? 1 : widest < 0x10000 ? 2 : 4;
        total = (total + 3) & ~(size_t)3;
        /* where it goes, until the buffer is there */
        views[k] = (SplitText){kind, (const void *)(uintptr_t)(total + 1), points};
        total += points * (size_t)kind;
    }
    *wide = malloc(total + 4);
    if (!*wide) {
        PyErr_NoMemory();
        return -1;
    }
    for (size_t k = 0; k < n; k++) {
        const uint8_t *text = data + starts[k];
        if (views[k].data == text) continue; /* ASCII, read in place */
        uint8_t *out = *wide + ((uintptr_t)views[k].data - 1);
        utf8_decode_kind(text, (size_t)(ends[k] - starts[k]), views[k].kind, out);
        views[k].data = out;
    }
    return 0;
}

/* count_utf8(data, starts, ends, pattern, classes, folds, first=0) -> lost: count_texts over
   the documents [starts[k], ends[k]) of UTF-8 bytes (int64 offsets), with no str made. */
static PyObject *Parted_count_utf8(Parted *self, PyObject *args, PyObject *kwargs) {
    static char *keywords[] = {"data", "starts", "ends", "pattern", "classes", "folds", "first",
                               NULL};
    Py_buffer data, starts, ends, classes, folds;
    PyObject *starts_object, *ends_object, *result = NULL;
    int pattern;
    long long first = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "y*OOiy*y*|L", keywords, &data,
                                     &starts_object, &ends_object, &pattern, &classes, &folds,
                                     &first))
        return NULL;
    uint32_t fold_store[64];
    uint8_t *wide = NULL;
    SplitText *views = NULL;
    SplitTables tables;
    Py_ssize_t lost = -1;
    int have = 0;
    if (read_int64s(starts_object, &starts, "starts") < 0) goto done;
    have = 1;
    if (read_int64s(ends_object, &ends, "ends") < 0) goto done;
    have = 2;
    if (starts.len != ends.len) {
        PyErr_SetString(PyExc_ValueError, "starts and ends differ in length");
        goto done;
    }
    if (pattern < 0 || pattern >= SPLIT_PATTERNS) {
        PyErr_Format(PyExc_ValueError, "no built-in pattern %d", pattern);
        goto done;
    }
    size_t n = (size_t)starts.len / 8;
    views = malloc((n + 1) * sizeof *views);
    if (!views) {
        PyErr_NoMemory();
        goto done;
    }
    if (read_tables(&classes, &folds, fold_store, &tables) < 0
        || utf8_views(data.buf, (size_t)data.len, starts.buf, ends.buf, n, views, &wide) < 0)
        goto done;
    lost = count_batch(self, pattern, &tables, views, n, first, 1);
    if (lost >= -1) result = PyLong_FromSsize_t(lost);
done:
    free(views);
    free(wide);
    if (have >= 2) PyBuffer_Release(&ends);
    if (have >= 1) PyBuffer_Release(&starts);
    PyBuffer_Release(&data);
    PyBuffer_Release(&classes);
    PyBuffer_Release(&folds);
    return result;
}

/* counter_add into the chunk's part: the part's lock may be held by a thread counting
   without the GIL, which never waits for the GIL while it holds it, so waiting here holding
   the GIL cannot deadlock. */
static int add_to_parted(void *counter, const uint8_t *data, size_t length, int64_t count,
                         int64_t first) {
    return parted_add(counter, data, length, count, first);
}

/* add(chunks, counts=None, first=0): as ChunkCounter.add. */
static PyObject *Parted_add(Parted *self, PyObject *args, PyObject *kwargs) {
    if (parted_listed(self) < 0) return NULL;
    self->ordered = 0;
    return add_chunks(args, kwargs, add_to_parted, &self->counter);
}

/* items(limit=-1) -> (data, offsets, counts, firsts): the chunks in order of first occurrence
   (every part's, merged by their order keys), as ChunkCounter.items gives them. With a limit,
   the next `limit` chunks at most, call after call (their offsets counted from the first
   chunk's byte: they go on where the last call's ended), an empty listing at the end, and
   the counter's slots given back (what a counter to be written and dropped needs): it counts
   no more. Without one, every chunk, from the first. */
static PyObject *Parted_items(Parted *self, PyObject *args) {
    Py_ssize_t limit = -1;
    if (!PyArg_ParseTuple(args, "|n", &limit) || parted_in_use(self) < 0) return NULL;
    PartedCounter *p = &self->counter;
    if (limit < 0) forget_listing(self);
    if (!self->at) { /* a listing begins: every part in order of first occurrence */
        for (int k = 0; k < p->n && !(self->ordered && (self->listed || limit < 0)); k++) {
            if (limit < 0 && !self->listed) {
                if (counter_sort(&p->parts[k]) < 0) return PyErr_NoMemory();
            } else { /* listed a slice at a time to be written: its slots given back */
                counter_order(&p->parts[k]);
            }
        }
        self->listed |= limit >= 0;
        self->ordered = 1;
        self->at = calloc((size_t)p->n, sizeof *self->at);
        if (!self->at) return PyErr_NoMemory();
    }
    size_t left = parted_len(p), bytes = 0;
    for (int k = 0; k < p->n; k++) left -= self->at[k];
    size_t n = limit < 0 || (size_t)limit > left ? left : (size_t)limit;
    /* the bytes of the next n chunks, found by a first walk (the cursors put back after) */
    size_t saved[MAX_SPLIT_THREADS];
    memcpy(saved, self->at, (size_t)p->n * sizeof *saved);
    for (size_t k = 0; k < n; k++) {
        int part = parted_next(p, self->at);
        bytes += p->parts[part].chunks[self->at[part]++].length;
    }
    memcpy(self->at, saved, (size_t)p->n * sizeof *saved);
    Listing out;
    if (listing_new(&out, bytes, n) < 0) return NULL;
    for (size_t k = 0; k < n; k++) {
        int part = parted_next(p, self->at);
        const ChunkCounter *c = &p->parts[part];
        listing_put(&out, k, (int64_t)(self->at_byte + out.position), c,
                    &c->chunks[self->at[part]++]);
    }
    self->at_byte += out.position;
    int64_t end = (int64_t)self->at_byte;
    if (limit < 0) forget_listing(self);
    return listing_done(&out, n, end);
}

static PyObject *Parted_rewind(Parted *self, PyObject *Py_UNUSED(ignored)) {
    forget_listing(self);
    Py_RETURN_NONE;
}

static Py_ssize_t Parted_len(Parted *self) { return (Py_ssize_t)parted_len(&self->counter); }

static PyObject *Parted_nbytes(Parted *self, void *Py_UNUSED(closure)) {
    size_t n = 0;
    for (int k = 0; k < self->counter.n; k++) n += counter_nbytes(&self->counter.parts[k]);
    return PyLong_FromSize_t(n);
}

static PyObject *Parted_parts(Parted *self, void *Py_UNUSED(closure)) {
    return PyLong_FromLong(self->counter.n);
}

static PyMethodDef Parted_methods[] = {
    {"count_texts", (PyCFunction)(void (*)(void))Parted_count_texts, METH_VARARGS | METH_KEYWORDS,
     "count_texts(texts, pattern, classes, folds, first=0, threads=1) -> lost: the texts split and their "
     "distinct chunks counted, without the GIL (other threads may count at once)"},
    {"count_utf8", (PyCFunction)(void (*)(void))Parted_count_utf8, METH_VARARGS | METH_KEYWORDS,
     "count_utf8(data, starts, ends, pattern, classes, folds, first=0) -> lost: count_texts of "
     "the documents data[starts[k]:ends[k]] (UTF-8)"},
    {"add", (PyCFunction)(void (*)(void))Parted_add, METH_VARARGS | METH_KEYWORDS,
     "add(chunks, counts=None, first=0): count each chunk (its order key first + its index)"},
    {"items", (PyCFunction)Parted_items, METH_VARARGS,
     "items(limit=-1) -> (data, offsets, counts, firsts), in order of first occurrence; with a "
     "limit, the next chunks of a listing"},
    {"rewind", (PyCFunction)Parted_rewind, METH_NOARGS, "rewind(): items(limit) from the first"},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef Parted_getset[] = {
    {"nbytes", (getter)Parted_nbytes, NULL, "the memory it holds, in bytes", NULL},
    {"parts", (getter)Parted_parts, NULL, "how many parts (tables) it has", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PySequenceMethods Parted_sequence = {.sq_length = (lenfunc)Parted_len};

PyTypeObject PartedType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "analyzer.bpe._engine.PartedCounter",
    .tp_basicsize = sizeof(Parted),
    .tp_dealloc = (destructor)Parted_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "PartedCounter(parts=1): distinct chunks with their counts and first occurrences, "
              "each in the one part its hash picks (counter.c); threads count into it at once.",
    .tp_new = Parted_new,
    .tp_methods = Parted_methods,
    .tp_getset = Parted_getset,
    .tp_as_sequence = &Parted_sequence,
};
