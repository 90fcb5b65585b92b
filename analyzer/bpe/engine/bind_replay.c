/*
 * analyzer.bpe._engine's replay: the Replayer type (replay.c: a merge list applied to texts,
 * counted, encoded and decoded without the GIL) and sum_by_text().
 */

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdlib.h>
#include <string.h>

#include "bindings.h"

/* ---------------------------------------------------------------------------------------- */
/* Replayer                                                                                  */

typedef struct {
    PyObject_HEAD
    MergeList merges;
} Replayer;

static void Replayer_dealloc(Replayer *self) {
    merge_list_free(&self->merges);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* Replayer(lefts, rights): the merge list as two int32 arrays, merge r making id 256 + r. */
static int Replayer_init(Replayer *self, PyObject *args, PyObject *kwargs) {
    static char *keywords[] = {"lefts", "rights", NULL};
    Py_buffer lefts, rights;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "y*y*", keywords, &lefts, &rights)) return -1;
    int status = -1;
    merge_list_free(&self->merges); /* __init__ called twice */
    if (lefts.len != rights.len || lefts.len % 4) {
        PyErr_SetString(PyExc_ValueError, "lefts and rights must be int32 arrays of one length");
    } else {
        const char *problem = merge_list_init(&self->merges, lefts.buf, rights.buf, (size_t)lefts.len / 4);
        if (!problem) status = 0;
        else if (!strcmp(problem, "out of memory")) PyErr_NoMemory();
        else PyErr_SetString(PyExc_ValueError, problem);
    }
    PyBuffer_Release(&lefts);
    PyBuffer_Release(&rights);
    return status;
}


/* What count_texts holds while it runs. */
typedef struct {
    Py_buffer snapshots, group_starts;
    int have_snapshots, have_groups;
    size_t n_texts, n_snapshots, n_groups, limit, n_ids;
    uint32_t *counts;
    int64_t *replaced, *local_starts, *histograms;
    int32_t *group_of;
    uint8_t *batch;
    size_t batch_capacity;
    Work w;
    int roundtrip, roundtrip_ok;
} Counting;

static void counting_free(Counting *c) {
    work_free(&c->w);
    free(c->batch);
    free(c->counts);
    free(c->replaced);
    free(c->histograms);
    free(c->local_starts);
    free(c->group_of);
    if (c->have_groups) PyBuffer_Release(&c->group_starts);
    if (c->have_snapshots) PyBuffer_Release(&c->snapshots);
}

/* The counting's arrays, sized from its arguments; 0, or -1 with an exception. */
static int counting_init(Replayer *self, Counting *c, PyObject *texts, PyObject *snapshots,
                         PyObject *groups, int histograms) {
    if (read_int64s(snapshots, &c->snapshots, "snapshots") < 0) return -1;
    c->have_snapshots = 1;
    if (groups != Py_None) {
        if (read_int64s(groups, &c->group_starts, "group_starts") < 0) return -1;
        c->have_groups = 1;
        c->n_groups = (size_t)c->group_starts.len / 8;
    }
    c->n_texts = (size_t)PyList_GET_SIZE(texts);
    c->n_snapshots = (size_t)c->snapshots.len / 8;
    const int64_t *ranks = c->snapshots.buf;
    size_t n_merges = self->merges.n_merges;
    c->limit = c->n_snapshots ? (size_t)ranks[c->n_snapshots - 1] : n_merges;
    for (size_t s = 0; s < c->n_snapshots; s++) {
        if (ranks[s] < 0 || (size_t)ranks[s] > n_merges || (s && ranks[s] < ranks[s - 1])) {
            PyErr_SetString(PyExc_ValueError, "snapshots must be ascending ranks within the merge list");
            return -1;
        }
    }
    c->counts = malloc((c->n_snapshots * c->n_texts + 1) * sizeof(uint32_t));
    if (!c->counts) { PyErr_NoMemory(); return -1; }
    c->n_ids = FIRST_NEW_ID + c->limit; /* the ids the replay can make */
    if (histograms) {
        /* Each group's token histogram after the replay: how often each id occurs. */
        c->histograms = calloc((c->n_groups ? c->n_groups : 1) * c->n_ids, sizeof(int64_t));
        if (!c->histograms) { PyErr_NoMemory(); return -1; }
    }
    if (c->n_groups) {
        const int64_t *starts = c->group_starts.buf;
        c->replaced = calloc(c->limit * c->n_groups + 1, sizeof(int64_t));
        c->group_of = malloc((c->n_texts + 1) * sizeof(int32_t));
        if (!c->replaced || !c->group_of) { PyErr_NoMemory(); return -1; }
        size_t group = 0;
        for (size_t k = 0; k < c->n_texts; k++) {
            while (group + 1 < c->n_groups && (size_t)starts[group + 1] <= k) group++;
            c->group_of[k] = (int32_t)group;
        }
    }
    c->local_starts = malloc((BATCH_TEXTS + 1) * sizeof(int64_t));
    if (!c->local_starts || work_init(&self->merges, &c->w) < 0) { PyErr_NoMemory(); return -1; }
    c->roundtrip_ok = 1;
    return 0;
}

/* One batch of texts [first, last) replayed (without the GIL), with its round trip and
   histograms. */
static void count_batch(Replayer *self, Counting *c, size_t used, size_t first, size_t last) {
    Tally tally = {c->snapshots.buf, c->n_snapshots, c->counts + first, c->n_texts, c->replaced,
                   c->n_groups, c->group_of ? c->group_of + first : NULL};
    replay_batch(&self->merges, &c->w, c->batch, used, c->limit, c->local_starts, last - first, &tally);
    for (size_t k = first; c->roundtrip && k < last && c->roundtrip_ok && !c->w.status.failed; k++)
        c->roundtrip_ok = spells(&self->merges, &c->w, c->batch, (size_t)c->local_starts[k - first]);
    if (c->histograms && !c->w.status.failed) {
        /* A token is stored at its first byte; every other slot is negative. */
        for (size_t p = 0; p < used; p++) {
            int32_t id = c->w.tok[p];
            if (id < 0) continue;
            size_t group = c->group_of ? (size_t)c->group_of[first + c->w.text_of[p]] : 0;
            c->histograms[group * c->n_ids + (size_t)id]++;
        }
    }
}

static PyObject *count_result(Counting *c, int histograms) {
    PyObject *snapshots = PyList_New((Py_ssize_t)c->n_snapshots);
    for (size_t s = 0; snapshots && s < c->n_snapshots; s++) {
        PyObject *per_text = bytes_of(c->counts + s * c->n_texts, c->n_texts, 4);
        if (!per_text) { Py_CLEAR(snapshots); break; }
        PyList_SET_ITEM(snapshots, (Py_ssize_t)s, per_text);
    }
    PyObject *replaced = c->replaced ? bytes_of(c->replaced, c->limit * c->n_groups, 8) : Py_NewRef(Py_None);
    PyObject *roundtrip = Py_NewRef(!c->roundtrip ? Py_None : c->roundtrip_ok ? Py_True : Py_False);
    PyObject *found = histograms ? bytes_of(c->histograms, (c->n_groups ? c->n_groups : 1) * c->n_ids, 8)
                                 : Py_NewRef(Py_None);
    PyObject *items[] = {snapshots, replaced, roundtrip, found};
    return named(CountResult, items, 4);
}

/* count_texts(texts, snapshots, group_starts=None, roundtrip=False, histograms=False): texts
   (a list of str, encoded a batch at a time: the whole corpus is never copied) replayed up to
   the last snapshot rank; group g is the texts from group_starts[g] (a text index) on. */
static PyObject *Replayer_count_texts(Replayer *self, PyObject *args, PyObject *kwargs) {
    static char *keywords[] = {"texts", "snapshots", "group_starts", "roundtrip", "histograms", NULL};
    PyObject *texts, *snapshots, *groups = Py_None;
    int roundtrip = 0, histograms = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O!O|Opp", keywords, &PyList_Type, &texts,
                                     &snapshots, &groups, &roundtrip, &histograms))
        return NULL;
    PyObject *result = NULL;
    Counting c = {0};
    c.roundtrip = roundtrip;
    Py_INCREF(texts); /* the list is read batch by batch, with the GIL given up between */
    if (counting_init(self, &c, texts, snapshots, groups, histograms) < 0) goto done;
    /* Batches of whole texts: about REPLAY_BATCH bytes, or one text that is larger. */
    for (size_t first = 0; first < c.n_texts;) {
        size_t used = 0;
        c.batch = grow(&c.w.status, c.batch, &c.batch_capacity, 1, 1);
        if (c.w.status.failed) { PyErr_NoMemory(); goto done; }
        c.batch[used++] = SEPARATOR;
        size_t last = first;
        while (last < c.n_texts && last - first < BATCH_TEXTS && (last == first || used <= REPLAY_BATCH)) {
            c.local_starts[last - first] = (int64_t)used;
            if (append_text(texts, (Py_ssize_t)last, &c.batch, &used, &c.batch_capacity, &c.w.status) < 0)
                goto done;
            last++;
        }
        if (used >= (size_t)INT32_MAX) {
            PyErr_SetString(PyExc_ValueError, "the compiled engine counts texts of less than 2 GiB");
            goto done;
        }
        Py_BEGIN_ALLOW_THREADS
        count_batch(self, &c, used, first, last);
        Py_END_ALLOW_THREADS
        if (c.w.status.failed) { PyErr_NoMemory(); goto done; }
        first = last;
    }
    result = count_result(&c, histograms);
done:
    counting_free(&c);
    Py_DECREF(texts);
    return result;
}

/* encode(buffer) -> bytes (int32 ids): the ids of one packed text (0xFF, its bytes, 0xFF). */
static PyObject *Replayer_encode(Replayer *self, PyObject *args) {
    Py_buffer buffer;
    if (!PyArg_ParseTuple(args, "y*", &buffer)) return NULL;
    PyObject *result = NULL;
    Work w;
    int32_t *ids = NULL;
    size_t n_ids = 0, size = (size_t)buffer.len;
    const uint8_t *bytes = buffer.buf;
    if (size < 2 || bytes[0] != SEPARATOR || bytes[size - 1] != SEPARATOR || size >= (size_t)INT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "encode takes one packed text of less than 2 GiB");
        PyBuffer_Release(&buffer);
        return NULL;
    }
    if (work_init(&self->merges, &w) < 0) { PyErr_NoMemory(); goto done; }
    int64_t start = 1;
    Tally nothing = {0};
    Py_BEGIN_ALLOW_THREADS
    replay_batch(&self->merges, &w, bytes, size, self->merges.n_merges, &start, 1, &nothing);
    ids = malloc(size * sizeof(int32_t));
    if (ids && !w.status.failed) {
        for (size_t i = 1; w.tok[i] >= 0; i += (size_t)self->merges.length[w.tok[i]]) ids[n_ids++] = w.tok[i];
    }
    Py_END_ALLOW_THREADS
    if (w.status.failed || !ids) PyErr_NoMemory();
    else result = bytes_of(ids, n_ids, 4);
done:
    work_free(&w);
    free(ids);
    PyBuffer_Release(&buffer);
    return result;
}

/* decode_bytes(ids) -> bytes: the bytes the ids stand for (ValueError for an unknown id). */
static PyObject *Replayer_decode_bytes(Replayer *self, PyObject *ids_object) {
    PyObject *sequence = PySequence_Fast(ids_object, "ids must be a sequence of ints");
    if (!sequence) return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(sequence);
    PyObject **items = PySequence_Fast_ITEMS(sequence);
    size_t total = 0;
    long long size = FIRST_NEW_ID + (long long)self->merges.n_merges;
    for (Py_ssize_t k = 0; k < n; k++) {
        long long id = PyLong_Check(items[k]) ? PyLong_AsLongLong(items[k]) : -2;
        if (id == -1 && PyErr_Occurred()) PyErr_Clear(), id = -2;
        if (id < 0 || id >= size) {
            PyObject *shown = PyObject_Repr(items[k]);
            if (shown) {
                PyErr_Format(PyExc_ValueError, "unknown token id %U: neither a byte nor a learned id", shown);
                Py_DECREF(shown);
            }
            Py_DECREF(sequence);
            return NULL;
        }
        total += (size_t)self->merges.length[id];
    }
    PyObject *result = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)total);
    if (result) {
        char *cursor = PyBytes_AS_STRING(result);
        for (Py_ssize_t k = 0; k < n; k++) {
            long long id = PyLong_AsLongLong(items[k]);
            memcpy(cursor, self->merges.piece[id], (size_t)self->merges.length[id]);
            cursor += self->merges.length[id];
        }
    }
    Py_DECREF(sequence);
    return result;
}

/* piece(id) -> bytes: the bytes of one id (ValueError for an unknown id). */
static PyObject *Replayer_piece(Replayer *self, PyObject *id_object) {
    long long id = PyLong_AsLongLong(id_object);
    if (id == -1 && PyErr_Occurred()) return NULL;
    if (id < 0 || id >= FIRST_NEW_ID + (long long)self->merges.n_merges) {
        PyErr_Format(PyExc_ValueError, "unknown token id %lld: neither a byte nor a learned id", id);
        return NULL;
    }
    return bytes_of(self->merges.piece[id], (size_t)self->merges.length[id], 1);
}

static PyMethodDef Replayer_methods[] = {
    {"count_texts", (PyCFunction)(void (*)(void))Replayer_count_texts, METH_VARARGS | METH_KEYWORDS,
     "count_texts(texts, snapshots, group_starts=None, roundtrip=False, histograms=False) -> "
     "CountResult: token counts per text at each snapshot rank, replacements per merge and "
     "group, whether every text round-trips, and token histograms per group."},
    {"encode", (PyCFunction)Replayer_encode, METH_VARARGS, "encode(buffer) -> bytes: the int32 ids of one packed text"},
    {"decode_bytes", (PyCFunction)Replayer_decode_bytes, METH_O, "decode_bytes(ids) -> bytes"},
    {"piece", (PyCFunction)Replayer_piece, METH_O, "piece(id) -> bytes: the bytes of one id"},
    {NULL, NULL, 0, NULL},
};

PyTypeObject ReplayerType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "analyzer.bpe._engine.Replayer",
    .tp_basicsize = sizeof(Replayer),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Replayer(lefts, rights): a merge list prepared for replay: encode, decode and count.",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Replayer_init,
    .tp_dealloc = (destructor)Replayer_dealloc,
    .tp_methods = Replayer_methods,
};

/* The counts of whole texts from those of their chunks: out[k] = sum of counts[c] for the
   chunks c of text k (chunk_ids[offsets[k]..offsets[k + 1])). */
PyObject *sum_by_text(PyObject *Py_UNUSED(self), PyObject *args) {
    Py_buffer counts_view, ids_view, offsets_view;
    if (!PyArg_ParseTuple(args, "y*y*y*", &counts_view, &ids_view, &offsets_view)) return NULL;
    PyObject *result = NULL;
    const uint32_t *counts = counts_view.buf, *ids = ids_view.buf;
    const int64_t *offsets = offsets_view.buf;
    size_t n_chunks = (size_t)counts_view.len / 4, n_ids = (size_t)ids_view.len / 4;
    Py_ssize_t n_texts = offsets_view.len / 8 - 1;
    int valid = offsets_view.len >= 8 && offsets[0] == 0 && (size_t)offsets[n_texts] == n_ids;
    for (Py_ssize_t k = 0; valid && k < n_texts; k++) valid = offsets[k] <= offsets[k + 1];
    for (size_t i = 0; valid && i < n_ids; i++) valid = ids[i] < n_chunks;
    if (!valid) {
        PyErr_SetString(PyExc_ValueError, "sum_by_text: offsets or chunk ids out of range");
        goto done;
    }
    result = PyBytes_FromStringAndSize(NULL, n_texts * 4);
    if (result) {
        uint32_t *out = (uint32_t *)PyBytes_AS_STRING(result);
        for (Py_ssize_t k = 0; k < n_texts; k++) {
            uint32_t total = 0;
            for (int64_t i = offsets[k]; i < offsets[k + 1]; i++) total += counts[ids[i]];
            out[k] = total;
        }
    }
done:
    PyBuffer_Release(&counts_view);
    PyBuffer_Release(&ids_view);
    PyBuffer_Release(&offsets_view);
    return result;
}
