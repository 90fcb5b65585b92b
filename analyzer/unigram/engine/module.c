/* analyzer.unigram._engine: the Python face of the compiled Unigram trainer.

   Trainer(data, offsets, counts, max_piece_bytes, threads) holds the chunks (views of the
   caller's buffers, kept until it goes) and the model; its methods are the reference's steps
   (analyzer/unigram/reference.py: seed, em, prune, finalize, model), each run without the GIL. */

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "unigram.h"

typedef struct {
    PyObject_HEAD
    Training t;
    Py_buffer data, offsets, counts;
    int have_buffers;
    int busy;  /* a step is running without the GIL: a second call on the object is refused */
} Trainer;

static void Trainer_dealloc(Trainer *self) {
    model_free(&self->t.model);
    nodes_free(&self->t.nodes);
    if (self->have_buffers) {
        PyBuffer_Release(&self->data);
        PyBuffer_Release(&self->offsets);
        PyBuffer_Release(&self->counts);
    }
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int Trainer_init(Trainer *self, PyObject *args, PyObject *kwargs) {
    static char *keywords[] = {"data", "offsets", "counts", "max_piece_bytes", "threads",
                               "cache_limit", "seed_batch", NULL};
    int max_piece = MAX_PIECE, threads = 1;
    long long cache_limit = (long long)6 << 30, seed_batch = (long long)1 << 25;
    if (self->have_buffers) {
        PyErr_SetString(PyExc_RuntimeError, "a Trainer is initialized once");
        return -1;
    }
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "y*y*y*|iiLL", keywords, &self->data,
                                     &self->offsets, &self->counts, &max_piece, &threads,
                                     &cache_limit, &seed_batch))
        return -1;
    self->have_buffers = 1;
    size_t n = (size_t)self->counts.len / 8;
    const int64_t *offsets = self->offsets.buf, *counts = self->counts.buf;
    if (self->counts.len % 8 || (size_t)self->offsets.len != 8 * (n + 1)) {
        PyErr_SetString(PyExc_ValueError, "counts must be int64, offsets int64 and one longer");
        return -1;
    }
    if (n >= UINT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "at most 2^32 - 1 distinct chunks");
        return -1;
    }
    for (size_t k = 0; k < n; k++)
        if (offsets[k] < 0 || offsets[k] > offsets[k + 1] || offsets[k + 1] > self->data.len
            || counts[k] < 1) {
            PyErr_Format(PyExc_ValueError, "chunk %zu: offsets %lld..%lld or count %lld out of range",
                         k, (long long)offsets[k], (long long)offsets[k + 1], (long long)counts[k]);
            return -1;
        }
    /* The int64 sums (a seed's frequency times its length, a pruning's total and frequencies)
       stay within 16 times the chunks' bytes weighted by their counts, and the E-step's
       expected counts, in units of 2^-24, within 2^24 times them (a chunk's marginals sum to
       its expected number of pieces, at most its bytes): that weight kept below 2^37, none
       wraps (the caller trains such counts on the reference, whose integers do not). */
    uint64_t weight = 0;
    for (size_t k = 0; k < n; k++) {
        uint64_t part;
        if (__builtin_mul_overflow((uint64_t)(offsets[k + 1] - offsets[k]), (uint64_t)counts[k],
                                   &part)
            || __builtin_add_overflow(weight, part, &weight) || weight > INT64_MAX >> 26) {
            PyErr_SetString(PyExc_OverflowError, "the counts are too large to sum in 64 bits: "
                            "their chunks' bytes times their counts reach 2^37");
            return -1;
        }
    }
    if (max_piece < 1 || max_piece > MAX_PIECE || threads < 1 || seed_batch < 1) {
        PyErr_Format(PyExc_ValueError, "max_piece_bytes must be 1..%d, threads and seed_batch at least 1",
                     MAX_PIECE);
        return -1;
    }
    self->t.chunks.data = self->data.buf;
    self->t.chunks.offsets = offsets;
    self->t.chunks.counts = counts;
    self->t.chunks.n = n;
    self->t.max_piece = max_piece;
    self->t.threads = threads;
    self->t.cache_limit = cache_limit;
    self->t.seed_batch = seed_batch;
    return 0;
}

/* 0 when the trainer may run a step now; -1 with an exception otherwise. */
static int claim(Trainer *self) {
    if (!self->have_buffers) {
        PyErr_SetString(PyExc_RuntimeError, "the Trainer was not initialized");
        return -1;
    }
    if (self->busy) {
        PyErr_SetString(PyExc_RuntimeError, "the Trainer is running a step in another thread");
        return -1;
    }
    self->busy = 1;
    return 0;
}

/* A step's outcome: None, or its refusal as the exception it means. */
static PyObject *outcome(Trainer *self, const char *problem) {
    self->busy = 0;
    if (!problem) Py_RETURN_NONE;
    if (strncmp(problem, "out of memory", 13) == 0) return PyErr_NoMemory();
    PyErr_SetString(PyExc_RuntimeError, problem);
    return NULL;
}

static PyObject *Trainer_seed(Trainer *self, PyObject *args) {
    Py_ssize_t seed_size;
    if (!PyArg_ParseTuple(args, "n", &seed_size)) return NULL;
    if (seed_size < 0) {
        PyErr_SetString(PyExc_ValueError, "seed_size must not be negative");
        return NULL;
    }
    if (claim(self) < 0) return NULL;
    const char *problem;
    Py_BEGIN_ALLOW_THREADS
    problem = seed_model(&self->t, (size_t)seed_size);
    Py_END_ALLOW_THREADS
    return outcome(self, problem);
}

static PyObject *Trainer_em(Trainer *self, PyObject *Py_UNUSED(ignored)) {
    if (claim(self) < 0) return NULL;
    const char *problem;
    Py_BEGIN_ALLOW_THREADS
    problem = em_step(&self->t);
    Py_END_ALLOW_THREADS
    return outcome(self, problem);
}

static PyObject *Trainer_prune(Trainer *self, PyObject *args) {
    Py_ssize_t desired;
    double shrink;
    if (!PyArg_ParseTuple(args, "nd", &desired, &shrink)) return NULL;
    if (desired < 0 || !(shrink >= 0.0 && shrink <= 1.0)) {
        PyErr_SetString(PyExc_ValueError, "desired must not be negative, shrink in [0, 1]");
        return NULL;
    }
    if (claim(self) < 0) return NULL;
    const char *problem;
    Py_BEGIN_ALLOW_THREADS
    problem = prune_step(&self->t, (size_t)desired, shrink);
    Py_END_ALLOW_THREADS
    return outcome(self, problem);
}

/* A model's live pieces as (list of bytes, list of float). */
static PyObject *as_lists(const Model *m) {
    PyObject *pieces = PyList_New((Py_ssize_t)m->live), *scores = PyList_New((Py_ssize_t)m->live);
    if (!pieces || !scores) goto fail;
    for (size_t r = 0, at = 0; r < in_order(m); r++) {
        const size_t i = piece_at(m, r);
        if (is_dead(m, i)) continue;
        uint8_t bytes[MAX_PIECE];
        uint32_t length = key_spell(m->keys[i], bytes);
        PyObject *piece = PyBytes_FromStringAndSize((const char *)bytes, length);
        PyObject *score = PyFloat_FromDouble(m->scores[i]);
        if (!piece || !score) {
            Py_XDECREF(piece);
            Py_XDECREF(score);
            goto fail;
        }
        PyList_SET_ITEM(pieces, (Py_ssize_t)at, piece);
        PyList_SET_ITEM(scores, (Py_ssize_t)at, score);
        at++;
    }
    PyObject *both = PyTuple_Pack(2, pieces, scores);
    Py_DECREF(pieces);
    Py_DECREF(scores);
    return both;
fail:
    Py_XDECREF(pieces);
    Py_XDECREF(scores);
    return NULL;
}

static PyObject *Trainer_finalize(Trainer *self, PyObject *args) {
    Py_ssize_t size;
    if (!PyArg_ParseTuple(args, "n", &size)) return NULL;
    if (size < 0) {
        PyErr_SetString(PyExc_ValueError, "size must not be negative");
        return NULL;
    }
    if (claim(self) < 0) return NULL;
    Model out = {0};
    const char *problem;
    Py_BEGIN_ALLOW_THREADS
    problem = finalize(&self->t, (size_t)size, &out);
    Py_END_ALLOW_THREADS
    if (!outcome(self, problem)) return NULL;
    Py_DECREF(Py_None);
    PyObject *result = as_lists(&out);
    model_free(&out);
    return result;
}

static PyObject *Trainer_model(Trainer *self, PyObject *Py_UNUSED(ignored)) {
    PyObject *lists = as_lists(&self->t.model);
    if (!lists) return NULL;
    PyObject *pairs = PyList_New((Py_ssize_t)self->t.model.live);
    if (!pairs) {
        Py_DECREF(lists);
        return NULL;
    }
    for (size_t i = 0; i < self->t.model.live; i++) {
        PyObject *pair = PyTuple_Pack(2, PyList_GET_ITEM(PyTuple_GET_ITEM(lists, 0), i),
                                      PyList_GET_ITEM(PyTuple_GET_ITEM(lists, 1), i));
        if (!pair) {
            Py_DECREF(pairs);
            Py_DECREF(lists);
            return NULL;
        }
        PyList_SET_ITEM(pairs, (Py_ssize_t)i, pair);
    }
    Py_DECREF(lists);
    return pairs;
}

static Py_ssize_t Trainer_length(Trainer *self) { return (Py_ssize_t)self->t.model.live; }

static PyMethodDef Trainer_methods[] = {
    {"seed", (PyCFunction)Trainer_seed, METH_VARARGS,
     "seed(seed_size): the seed model (bytes that occur, then the best substrings)"},
    {"em", (PyCFunction)Trainer_em, METH_NOARGS, "em(): one E-step and M-step"},
    {"prune", (PyCFunction)Trainer_prune, METH_VARARGS,
     "prune(desired, shrink): keep max(desired, shrink x pieces) pieces"},
    {"finalize", (PyCFunction)Trainer_finalize, METH_VARARGS,
     "finalize(size) -> (pieces, scores): the vocabulary, ids in order"},
    {"model", (PyCFunction)Trainer_model, METH_NOARGS,
     "model() -> list of (piece, score): the model as it stands"},
    {NULL, NULL, 0, NULL},
};

static PyObject *Trainer_work(Trainer *self, void *Py_UNUSED(closure)) {
    return PyLong_FromUnsignedLongLong(self->t.work);
}

static PyGetSetDef Trainer_getset[] = {
    {"work", (getter)Trainer_work, NULL,
     "steps taken so far: each byte and node a pass visits, each key the seeding bins or scans",
     NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PySequenceMethods Trainer_sequence = {.sq_length = (lenfunc)Trainer_length};

static PyTypeObject TrainerType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "analyzer.unigram._engine.Trainer",
    .tp_basicsize = sizeof(Trainer),
    .tp_dealloc = (destructor)Trainer_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Trainer(data, offsets, counts, max_piece_bytes=16, threads=1, cache_limit=6 * 2**30, "
              "seed_batch=2**25): a Unigram training on the chunks data[offsets[k]:offsets[k+1]], "
              "each counts[k] times; their lattice nodes are kept between steps when they may "
              "take at most cache_limit bytes; the seeding sorts seed_batch keys at a time",
    .tp_methods = Trainer_methods,
    .tp_getset = Trainer_getset,
    .tp_as_sequence = &Trainer_sequence,
    .tp_init = (initproc)Trainer_init,
    .tp_new = PyType_GenericNew,
};

static struct PyModuleDef unigram_module = {
    PyModuleDef_HEAD_INIT, "_engine",
    "The compiled Unigram trainer (see analyzer/unigram/engine/).", -1, NULL, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__engine(void) {
    if (PyType_Ready(&TrainerType) < 0) return NULL;
    PyObject *module = PyModule_Create(&unigram_module);
    if (!module) return NULL;
    Py_INCREF(&TrainerType);
    if (PyModule_AddObject(module, "Trainer", (PyObject *)&TrainerType) < 0) {
        Py_DECREF(&TrainerType);
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
