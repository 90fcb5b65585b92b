/*
 * analyzer.bpe._engine's training: train() reads its arguments into train.c's input, learns
 * the merges without the GIL (reporting progress), and returns a TrainResult; pack() lays
 * texts out as training reads them (analyzer.bpe.packing.pack's layout).
 */

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdlib.h>
#include <string.h>

#include "bindings.h"

/* ---------------------------------------------------------------------------------------- */
/* train                                                                                     */

typedef struct {
    Py_buffer buffer, starts, weights, groups, multiplicities;
    int have_buffer, have_starts, have_weights, have_groups, have_multiplicities;
    PyObject *progress;
    Py_ssize_t vocab_size, progress_every, global_merges, n_texts, n_merges;
    Py_ssize_t first_id; /* the first new id: 256, or a continued vocabulary's size */
    Py_ssize_t n_slots;  /* positions in the buffer: bytes, or int32 ids */
    long long min_pair_count, floor;
    int first, parity, ids;
} TrainArgs;

static void release_train_args(TrainArgs *a) {
    /* have_* is -1 for a read that failed: it holds nothing */
    if (a->have_weights > 0) PyBuffer_Release(&a->weights);
    if (a->have_groups > 0) PyBuffer_Release(&a->groups);
    if (a->have_multiplicities > 0) PyBuffer_Release(&a->multiplicities);
    if (a->have_starts) PyBuffer_Release(&a->starts);
    if (a->have_buffer) PyBuffer_Release(&a->buffer);
}

static int parse_train_args(PyObject *args, PyObject *kwargs, TrainArgs *a) {
    static char *keywords[] = {"buffer", "starts", "weights", "vocab_size", "min_pair_count",
                               "first", "progress", "progress_every", "groups", "multiplicities",
                               "parity", "global_merges", "floor", "ids", "first_id", NULL};
    PyObject *starts, *weights, *groups = Py_None, *multiplicities = Py_None;
    a->first_id = FIRST_NEW_ID;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "y*OOnLpOn|OOpnLpn", keywords, &a->buffer, &starts,
                                     &weights, &a->vocab_size, &a->min_pair_count, &a->first,
                                     &a->progress, &a->progress_every, &groups, &multiplicities,
                                     &a->parity, &a->global_merges, &a->floor, &a->ids,
                                     &a->first_id))
        return -1;
    a->have_buffer = 1;
    if (a->ids && a->buffer.len % 4) {
        PyErr_SetString(PyExc_ValueError, "ids must be an int32 array");
        return -1;
    }
    a->n_slots = a->ids ? a->buffer.len / 4 : a->buffer.len;
    if ((size_t)a->n_slots >= (size_t)INT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "the compiled engine trains on at most 2 GiB of text at once");
        return -1;
    }
    if (a->first_id < FIRST_NEW_ID || a->first_id > a->vocab_size || (!a->ids && a->first_id != FIRST_NEW_ID)
        || a->vocab_size > MAX_IDS || a->min_pair_count < 1 || a->progress_every < 1
        || a->global_merges < 0) {
        PyErr_SetString(PyExc_ValueError, "vocab_size, first_id, min_pair_count, progress_every "
                                          "or global_merges out of range");
        return -1;
    }
    if (a->ids) {
        /* Every id must be an id of the base (below first_id), or GAP between texts: the
           trainer indexes lengths and keys by them. */
        const int32_t *ids = a->buffer.buf;
        for (Py_ssize_t p = 0; p < a->n_slots; p++) {
            if (ids[p] < GAP || ids[p] >= a->first_id) {
                PyErr_Format(PyExc_ValueError, "id %ld at slot %zd is not below first_id %zd",
                             (long)ids[p], p, a->first_id);
                return -1;
            }
        }
    }
    if (read_int64s(starts, &a->starts, "starts") < 0) return -1;
    a->have_starts = 1;
    a->n_texts = a->starts.len / 8;
    a->n_merges = a->vocab_size - a->first_id;
    if ((a->have_groups = read_per_text(groups, &a->groups, "groups", a->starts.len)) < 0
        || (a->have_multiplicities = read_per_text(multiplicities, &a->multiplicities,
                                                   "multiplicities", a->starts.len)) < 0
        || (a->have_weights = read_per_text(weights, &a->weights, "weights", a->starts.len)) < 0)
        return -1;
    if (a->parity && !a->have_groups) {
        PyErr_SetString(PyExc_ValueError, "parity-aware training needs groups");
        return -1;
    }
    return 0;
}

/* The training's input, as train.c takes it, from the parsed arguments. */
static TrainInput train_input(const TrainArgs *a) {
    TrainInput in = {0};
    in.buffer = a->ids ? NULL : a->buffer.buf;
    in.ids = a->ids ? a->buffer.buf : NULL;
    in.n_slots = (size_t)a->n_slots;
    in.starts = a->starts.buf;
    in.n_texts = (size_t)a->n_texts;
    in.weights = a->have_weights ? a->weights.buf : NULL;
    in.groups = a->have_groups ? a->groups.buf : NULL;
    in.multiplicities = a->have_multiplicities ? a->multiplicities.buf : NULL;
    in.parity = a->parity;
    in.first = a->first;
    in.global_merges = a->global_merges;
    in.min_pair_count = a->min_pair_count;
    in.floor = a->floor;
    in.first_id = (int32_t)a->first_id;
    in.n_merges = a->n_merges;
    return in;
}

/* train.c's setup, its refusal raised as the Python exception it means; 0 or -1. */
static int setup(const TrainInput *in, Trainer *t, Groups *groups, Learned *l) {
    const char *problem = training_setup(in, t, groups, l);
    if (!problem) return 0;
    if (strncmp(problem, "out of memory", 13) == 0) PyErr_NoMemory();
    else PyErr_SetString(PyExc_ValueError, problem);
    return -1;
}

/* Learn up to n_merges merges, progress_every at a time without the GIL, reporting (and
   letting Ctrl-C through) in between; 0, or -1 with an exception. */
static int learn(const TrainArgs *a, const TrainInput *in, Trainer *t, Learned *l) {
    int stopped = 0;
    Py_BEGIN_ALLOW_THREADS
    trainer_start(t, a->floor);
    Py_END_ALLOW_THREADS
    while (l->learned < a->n_merges && !t->status.failed && !stopped) {
        Py_ssize_t until = l->learned + a->progress_every < a->n_merges ? l->learned + a->progress_every
                                                                        : a->n_merges;
        Py_BEGIN_ALLOW_THREADS
        while (l->learned < until && !stopped) stopped = !training_step(in, t, l);
        Py_END_ALLOW_THREADS
        if (t->status.failed) break;
        if (report(a->progress, l->learned, a->n_merges) < 0) return -1;
    }
    if (t->status.failed) { PyErr_NoMemory(); return -1; }
    return 0;
}

static PyObject *train_result(const TrainArgs *a, const Learned *l, const Groups *groups, int grouped) {
    Py_ssize_t n = l->learned;
    const char *stop = n < a->n_merges ? "min_pair_count" : "vocab_size";
    PyObject *chosen = Py_None, *by_group = Py_None;
    if (grouped) {
        chosen = bytes_of(l->chosen, (size_t)n, 4);
        by_group = bytes_of(l->replaced_by_group, (size_t)n * (size_t)groups->n, 8);
    } else {
        Py_INCREF(Py_None);
        Py_INCREF(Py_None);
    }
    PyObject *items[] = {bytes_of(l->lefts, (size_t)n, 4), bytes_of(l->rights, (size_t)n, 4),
                         bytes_of(l->counts, (size_t)n, 8), bytes_of(l->replaced, (size_t)n, 8),
                         PyUnicode_FromString(stop), chosen, by_group, PyLong_FromLongLong(l->n_tokens)};
    return named(TrainResult, items, 8);
}

PyObject *engine_train(PyObject *Py_UNUSED(self), PyObject *args, PyObject *kwargs) {
    TrainArgs a = {0};
    Trainer t = {0};
    Groups groups = {0};
    Learned l = {0};
    PyObject *result = NULL;
    if (parse_train_args(args, kwargs, &a) == 0) {
        TrainInput in = train_input(&a);
        if (setup(&in, &t, &groups, &l) == 0 && learn(&a, &in, &t, &l) == 0)
            result = train_result(&a, &l, &groups, t.groups != NULL);
    }
    t.groups = NULL;
    trainer_free(&t);
    groups_free(&groups);
    learned_free(&l);
    release_train_args(&a);
    return result;
}


/* ---------------------------------------------------------------------------------------- */
/* pack                                                                                      */

/* pack(texts) -> (buffer, starts): analyzer.bpe.packing.pack's layout, built here (a trainer
   with a pre-tokenizer packs hundreds of thousands of chunks, which Python encodes and joins
   one by one): the texts' UTF-8 bytes with a separator before, between and after them, and
   each text's first position, int64. The errors are append_text's. */
PyObject *engine_pack(PyObject *Py_UNUSED(self), PyObject *texts) {
    if (!PyList_Check(texts)) {
        PyErr_SetString(PyExc_TypeError, "pack: texts must be a list of str");
        return NULL;
    }
    Py_ssize_t n = PyList_GET_SIZE(texts);
    size_t used = 0, capacity = 1; /* about the size: one byte a character, and separators */
    for (Py_ssize_t k = 0; k < n; k++) {
        PyObject *text = PyList_GET_ITEM(texts, k);
        capacity += (PyUnicode_Check(text) ? (size_t)PyUnicode_GET_LENGTH(text) : 0) + 1;
    }
    Status status = {0};
    uint8_t *buffer = malloc(capacity);
    int64_t *starts = malloc(((size_t)n + 1) * sizeof(int64_t));
    PyObject *result = NULL;
    if (!buffer || !starts) {
        PyErr_NoMemory();
        goto done;
    }
    buffer[used++] = SEPARATOR;
    for (Py_ssize_t k = 0; k < n; k++) {
        starts[k] = (int64_t)used;
        if (append_text(texts, k, &buffer, &used, &capacity, &status) < 0) goto done;
    }
    result = Py_BuildValue("(y#y#)", (const char *)buffer, (Py_ssize_t)used, (const char *)starts,
                           n * (Py_ssize_t)sizeof(int64_t));
done:
    free(buffer);
    free(starts);
    return result;
}
