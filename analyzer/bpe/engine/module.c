/*
 * analyzer.bpe._engine: the Python face of the compiled BPE engine, and the only file of it
 * that knows Python. It reads arguments into the engine's structures (engine.h), runs the
 * trainer (train.c, groups.c) and the replay (replay.c) without the GIL, and builds the
 * results: named tuples (TrainResult, CountResult), typed in analyzer/bpe/_engine.pyi.
 * analyzer/bpe/compiled.py turns them into the engines' shared contract.
 *
 *   train(buffer, starts, weights, vocab_size, min_pair_count, first, progress,
 *         progress_every, groups=None, multiplicities=None, parity=False, global_merges=0,
 *         floor=0, ids=False, first_id=256) -> TrainResult
 *         (ids=True: `buffer` holds int32 ids, one slot each, -1 between texts, all below
 *         first_id; the new ids start at first_id)
 *   Replayer(lefts, rights): .count_texts(texts, snapshots, group_starts=None,
 *         roundtrip=False, histograms=False) -> CountResult; .encode(buffer) -> bytes;
 *         .decode_bytes(ids) -> bytes; .piece(id) -> bytes
 *   pack(texts) -> (buffer, starts)   (analyzer.bpe.packing.pack's layout)
 *   sum_by_text(counts, chunk_ids, offsets) -> bytes
 *   split_text(text, pattern, classes, folds) -> list[str] | None
 *   chunk_texts(texts, pattern, classes, folds, weights=None, keep_ids=True, threads=1)
 *         -> (chunks, counts, ids, offsets, lost)   (split.c: the built-in pre-tokenizers)
 *   ChunkCounter(): .add(chunks, counts=None, first=0); .add_items(data, offsets, counts,
 *         firsts); .merge(other); .items() -> (data, offsets, counts, firsts); .nbytes;
 *         .count_texts(texts, pattern, classes, folds, first=0, threads=1) -> lost
 *         (counter.c: distinct chunks with their counts, gathered from batches)
 */

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdlib.h>
#include <string.h>

#include "engine.h"

/* ---------------------------------------------------------------------------------------- */
/* Arguments                                                                                 */

static int read_int64s(PyObject *object, Py_buffer *view, const char *name) {
    if (PyObject_GetBuffer(object, view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) return -1;
    if (view->itemsize != 8 || !view->format || (view->format[0] != 'q' && view->format[0] != 'Q')) {
        PyBuffer_Release(view);
        PyErr_Format(PyExc_TypeError, "%s must be an array of 64-bit ints", name);
        return -1;
    }
    return 0;
}

/* An optional int64 array with one value per text: 1 when given (the view then held), 0 for
   None, -1 with an exception (nothing held). */
static int read_per_text(PyObject *object, Py_buffer *view, const char *name, Py_ssize_t n_bytes) {
    if (object == Py_None) return 0;
    if (read_int64s(object, view, name) < 0) return -1;
    if (view->len != n_bytes) {
        PyBuffer_Release(view);
        PyErr_Format(PyExc_ValueError, "%s and starts differ in length", name);
        return -1;
    }
    return 1;
}

/* Call progress(done, total) with the GIL held, and let Ctrl-C through; 0, or -1 with an
   exception set. */
static int report(PyObject *progress, Py_ssize_t done, Py_ssize_t total) {
    if (PyErr_CheckSignals() < 0) return -1;
    if (progress == Py_None) return 0;
    PyObject *result = PyObject_CallFunction(progress, "nn", done, total);
    if (!result) return -1;
    Py_DECREF(result);
    return 0;
}

static PyObject *bytes_of(const void *data, size_t items, size_t item) {
    return PyBytes_FromStringAndSize((const char *)data, (Py_ssize_t)(items * item));
}

/* ---------------------------------------------------------------------------------------- */
/* Results                                                                                   */

static PyStructSequence_Field train_fields[] = {
    {"lefts", "int32 per merge: its left id"},
    {"rights", "int32 per merge: its right id"},
    {"counts", "int64 per merge: the pair's count when chosen (in its group, parity-aware)"},
    {"replaced", "int64 per merge: the occurrences it replaced (weights applied)"},
    {"stop_reason", "'vocab_size', or 'min_pair_count' when training stopped early"},
    {"chosen", "int32 per merge: the group whose pair it was, -1: all (None without groups)"},
    {"replaced_by_group", "int64, merge-major: each merge's replacements in each group (None without groups)"},
    {"n_tokens", "tokens before any merge (weights applied)"},
    {NULL, NULL},
};
static PyStructSequence_Desc train_desc = {"analyzer.bpe._engine.TrainResult",
                                           "What one training learned.", train_fields, 8};

static PyStructSequence_Field count_fields[] = {
    {"snapshots", "a bytes per snapshot rank: uint32 per text, its tokens just before that merge"},
    {"replaced", "int64, merge x group: each merge's replacements in each group (or None)"},
    {"roundtrip", "whether every text's tokens spell it again (None unless asked)"},
    {"histograms", "int64, group x id: each id's occurrences after the replay (or None)"},
    {NULL, NULL},
};
static PyStructSequence_Desc count_desc = {"analyzer.bpe._engine.CountResult",
                                           "What one replay counted.", count_fields, 4};

static PyTypeObject *TrainResult, *CountResult;

/* A struct sequence from `n` new references (stolen, even on failure). */
static PyObject *named(PyTypeObject *type, PyObject **items, Py_ssize_t n) {
    PyObject *result = PyStructSequence_New(type);
    for (Py_ssize_t k = 0; k < n; k++) {
        if (!items[k] || !result) {
            for (Py_ssize_t j = k; j < n; j++) Py_XDECREF(items[j]);
            Py_XDECREF(result);
            return NULL;
        }
        PyStructSequence_SetItem(result, k, items[k]);
    }
    return result;
}

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

static PyObject *engine_train(PyObject *Py_UNUSED(self), PyObject *args, PyObject *kwargs) {
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

/* The UTF-8 bytes of texts[index], appended to `batch` (a growing buffer) with a separator;
   -1 with an exception (TypeError for a non-str, ValueError naming the text and character for
   a lone surrogate). */
static int append_text(PyObject *texts, Py_ssize_t index, uint8_t **batch, size_t *used, size_t *capacity,
                       Status *status) {
    PyObject *text = PyList_GET_ITEM(texts, index);
    if (!PyUnicode_Check(text)) {
        PyErr_Format(PyExc_TypeError, "text %zd is %s, not str", index, Py_TYPE(text)->tp_name);
        return -1;
    }
    const char *data;
    Py_ssize_t size;
    PyObject *encoded = NULL;
    if (PyUnicode_IS_COMPACT_ASCII(text)) { /* ASCII is its own UTF-8: no copy, no cache */
        data = (const char *)PyUnicode_DATA(text);
        size = PyUnicode_GET_LENGTH(text);
    } else {
        encoded = PyUnicode_AsUTF8String(text); /* a temporary, not cached in the str */
        if (!encoded) {
            if (PyErr_ExceptionMatches(PyExc_UnicodeEncodeError)) {
                PyObject *type, *value, *traceback;
                PyErr_Fetch(&type, &value, &traceback);
                Py_ssize_t at = 0;
                PyUnicodeEncodeError_GetStart(value, &at);
                Py_XDECREF(type);
                Py_XDECREF(value);
                Py_XDECREF(traceback);
                PyErr_Format(PyExc_ValueError, "text %zd, character %zd: '\\u%04x' is not valid Unicode "
                             "(a lone surrogate) and has no UTF-8 encoding", index, at,
                             (unsigned)PyUnicode_ReadChar(text, at));
            }
            return -1;
        }
        data = PyBytes_AS_STRING(encoded);
        size = PyBytes_GET_SIZE(encoded);
    }
    *batch = grow(status, *batch, capacity, *used + (size_t)size + 1, 1);
    if (status->failed) { Py_XDECREF(encoded); PyErr_NoMemory(); return -1; }
    memcpy(*batch + *used, data, (size_t)size);
    *used += (size_t)size;
    (*batch)[(*used)++] = SEPARATOR;
    Py_XDECREF(encoded);
    return 0;
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

static PyTypeObject ReplayerType = {
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

/* ---------------------------------------------------------------------------------------- */
/* pack, sum_by_text, and the module                                                         */

/* pack(texts) -> (buffer, starts): analyzer.bpe.packing.pack's layout, built here (a trainer
   with a pre-tokenizer packs hundreds of thousands of chunks, which Python encodes and joins
   one by one): the texts' UTF-8 bytes with a separator before, between and after them, and
   each text's first position, int64. The errors are append_text's. */
static PyObject *engine_pack(PyObject *Py_UNUSED(self), PyObject *texts) {
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

/* The counts of whole texts from those of their chunks: out[k] = sum of counts[c] for the
   chunks c of text k (chunk_ids[offsets[k]..offsets[k + 1])). */
static PyObject *sum_by_text(PyObject *Py_UNUSED(self), PyObject *args) {
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

/* ---------------------------------------------------------------------------------------- */
/* The built-in pre-tokenizers (split.c)                                                     */

/* The tables from their bytes: `classes` one byte per code point, `folds` uint32 pairs (code
   point, letter). 0, or -1 with an exception; `fold_store` holds up to 64 pairs. */
static int read_tables(Py_buffer *classes, Py_buffer *folds, uint32_t *fold_store,
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
    *tables = (SplitTables){classes->buf, fold_store, fold_store + 32, n};
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
static PyObject *engine_split_text(PyObject *Py_UNUSED(self), PyObject *args) {
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
static int split_input(PyObject *sequence, int pattern, Py_buffer *classes, Py_buffer *folds,
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
static PyObject *engine_chunk_texts(PyObject *Py_UNUSED(self), PyObject *args, PyObject *kwargs) {
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

static PyTypeObject CounterType;

/* RuntimeError while another thread's count_texts has the counter; 0 when it is free. */
static int counter_in_use(Counter *self) {
    if (!self->busy) return 0;
    PyErr_SetString(PyExc_RuntimeError, "the counter is counting on another thread");
    return -1;
}

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
static PyObject *Counter_add(Counter *self, PyObject *args, PyObject *kwargs) {
    static char *keywords[] = {"chunks", "counts", "first", NULL};
    PyObject *chunks, *counts_object = Py_None;
    long long first = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|OL", keywords, &chunks, &counts_object, &first)
        || counter_in_use(self) < 0)
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
        if (counter_add(&self->counter, (const uint8_t *)data, (size_t)length, count, first + i) < 0) {
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
    PyObject *data = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)c->total_bytes);
    PyObject *offsets = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)((c->n + 1) * 8));
    PyObject *counts = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(c->n * 8));
    PyObject *firsts = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(c->n * 8));
    if (!data || !offsets || !counts || !firsts) {
        Py_XDECREF(data);
        Py_XDECREF(offsets);
        Py_XDECREF(counts);
        Py_XDECREF(firsts);
        return NULL;
    }
    uint8_t *out = (uint8_t *)PyBytes_AS_STRING(data);
    int64_t *at = (int64_t *)PyBytes_AS_STRING(offsets);
    int64_t *count = (int64_t *)PyBytes_AS_STRING(counts);
    int64_t *first = (int64_t *)PyBytes_AS_STRING(firsts);
    size_t position = 0;
    for (size_t k = 0; k < c->n; k++) {
        const CountedChunk *chunk = &c->chunks[k];
        at[k] = (int64_t)position;
        memcpy(out + position, counted_bytes(c, chunk), chunk->length);
        position += chunk->length;
        count[k] = chunk->count;
        first[k] = chunk->first;
    }
    at[c->n] = (int64_t)position;
    return Py_BuildValue("(NNNN)", data, offsets, counts, firsts);
}

static Py_ssize_t Counter_len(Counter *self) { return (Py_ssize_t)self->counter.n; }

static PyObject *Counter_nbytes(Counter *self, void *Py_UNUSED(closure)) {
    const ChunkCounter *c = &self->counter;
    return PyLong_FromSize_t(c->bytes_capacity + c->chunks_capacity * sizeof(CountedChunk)
                             + c->n_slots * sizeof(uint32_t));
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

/* count_texts(texts, pattern, classes, folds, first=0, threads=1) -> lost: the texts split
   under a built-in pattern (split.c, on `threads` threads) and their distinct chunks counted,
   the n-th its order key first + n, all without the GIL. `lost`: the first text the pattern
   would drop a character of (then nothing is counted: the caller lets `regex` say where), or
   -1. */
static PyObject *Counter_count_texts(Counter *self, PyObject *args, PyObject *kwargs) {
    static char *keywords[] = {"texts", "pattern", "classes", "folds", "first", "threads", NULL};
    PyObject *sequence;
    int pattern, threads = 1;
    long long first = 0;
    Py_buffer classes, folds;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "Oiy*y*|Li", keywords, &sequence, &pattern,
                                     &classes, &folds, &first, &threads))
        return NULL;
    PyObject *result = NULL, *texts = NULL;
    uint32_t fold_store[64];
    SplitText *views = NULL;
    Gathered gathered = {.lost = -1};
    SplitTables tables;
    if (counter_in_use(self) < 0 ||
        split_input(sequence, pattern, &classes, &folds, fold_store, &tables, &texts, &views) < 0)
        goto done;
    Py_ssize_t n_texts = PyTuple_GET_SIZE(texts);
    int failed = 0;
    self->busy = 1;
    Py_BEGIN_ALLOW_THREADS
    failed = chunk_gather(pattern, &tables, views, (size_t)n_texts, NULL, threads, &gathered);
    if (!failed && gathered.lost < 0)
        failed = counter_add_gathered(&self->counter, &gathered, views, first);
    Py_END_ALLOW_THREADS
    self->busy = 0;
    if (failed == -2) PyErr_SetString(PyExc_ValueError, "a chunk holds a lone surrogate, which UTF-8 cannot");
    else if (failed) PyErr_NoMemory();
    else result = PyLong_FromSsize_t(gathered.lost);
done:
    chunk_table_free(&gathered.table);
    free(gathered.ids);
    free(views);
    Py_XDECREF(texts);
    PyBuffer_Release(&classes);
    PyBuffer_Release(&folds);
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

static PyTypeObject CounterType = {
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

static PyObject *counter_from_items(PyObject *Py_UNUSED(self), PyObject *args) {
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

static PyMethodDef engine_methods[] = {
    {"train", (PyCFunction)(void (*)(void))engine_train, METH_VARARGS | METH_KEYWORDS,
     "train(buffer, starts, weights, vocab_size, min_pair_count, first, progress, progress_every, "
     "groups=None, multiplicities=None, parity=False, global_merges=0, floor=0) -> TrainResult"},
    {"split_text", engine_split_text, METH_VARARGS,
     "split_text(text, pattern, classes, folds) -> list[str] | None: a text's chunks under a "
     "built-in pattern (None: the pattern drops a character)"},
    {"chunk_texts", (PyCFunction)(void (*)(void))engine_chunk_texts, METH_VARARGS | METH_KEYWORDS,
     "chunk_texts(texts, pattern, classes, folds, weights=None, keep_ids=True, threads=1) -> "
     "(chunks, counts, ids, offsets, lost)"},
    {"pack", engine_pack, METH_O,
     "pack(texts) -> (buffer, starts): the texts' UTF-8 between 0xFF separators, and each "
     "text's first position (int64)"},
    {"sum_by_text", sum_by_text, METH_VARARGS,
     "sum_by_text(counts, chunk_ids, offsets) -> bytes: each text's total from its chunks' counts"},
    {"_counter_from_items", counter_from_items, METH_VARARGS,
     "_counter_from_items(data, offsets, counts, firsts) -> ChunkCounter (for pickling)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef engine_module = {
    PyModuleDef_HEAD_INIT, "_engine", "The compiled BPE engine (see analyzer/bpe/engine/).", -1,
    engine_methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__engine(void) {
    if (PyType_Ready(&ReplayerType) < 0 || PyType_Ready(&CounterType) < 0) return NULL;
    TrainResult = PyStructSequence_NewType(&train_desc);
    CountResult = PyStructSequence_NewType(&count_desc);
    if (!TrainResult || !CountResult) return NULL;
    PyObject *module = PyModule_Create(&engine_module);
    if (!module) return NULL;
    Py_INCREF(&ReplayerType);
    Py_INCREF(&CounterType);
    if (PyModule_AddObject(module, "Replayer", (PyObject *)&ReplayerType) < 0
        || PyModule_AddObject(module, "ChunkCounter", (PyObject *)&CounterType) < 0
        || PyModule_AddObject(module, "TrainResult", Py_NewRef((PyObject *)TrainResult)) < 0
        || PyModule_AddObject(module, "CountResult", Py_NewRef((PyObject *)CountResult)) < 0) {
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
