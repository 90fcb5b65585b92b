/* analyzer.wordpiece._engine: the Python face of the compiled WordPiece trainer.

   pack(chunks) lays out chunks (str, taken as UTF-8 with surrogate escapes, or bytes) end to
   end with their offsets; train(data, offsets, counts, size) trains on such a layout (views
   of the caller's buffers, without the GIL) and gives each id's string; Encoder(vocab) encodes
   chunks as that vocabulary does (encode.c). */

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <time.h>

#include "wordpiece.h"

/* A chunk's bytes: a str's UTF-8 (a lone surrogate: the byte it escapes, as to_byte_chars
   does; *escaped then holds them, for the caller to release), or a bytes' own. 0, or -1 with
   a TypeError naming `who` and the chunk's place. */
static int chunk_bytes(PyObject *chunk, const char *who, Py_ssize_t k, const char **bytes,
                       Py_ssize_t *length, PyObject **escaped) {
    if (PyUnicode_Check(chunk)) {
        *bytes = PyUnicode_AsUTF8AndSize(chunk, length);
        if (*bytes) return 0;
        PyErr_Clear();
        *escaped = PyUnicode_AsEncodedString(chunk, "utf-8", "surrogateescape");
        if (!*escaped) return -1;
        *bytes = PyBytes_AS_STRING(*escaped);
        *length = PyBytes_GET_SIZE(*escaped);
        return 0;
    }
    if (PyBytes_Check(chunk)) {
        *bytes = PyBytes_AS_STRING(chunk);
        *length = PyBytes_GET_SIZE(chunk);
        return 0;
    }
    PyErr_Format(PyExc_TypeError, "%s: chunk %zd is %s, not str or bytes", who, k,
                 Py_TYPE(chunk)->tp_name);
    return -1;
}

/* pack(chunks) -> (data, offsets): the chunks' bytes end to end, and int64 offsets, one more
   than the chunks (chunk k is data[offsets[k]:offsets[k + 1]]). A run's chunks are hundreds of
   thousands of str, which Python would encode and join one by one. */
static PyObject *engine_pack(PyObject *Py_UNUSED(self), PyObject *chunks) {
    if (!PyList_Check(chunks)) {
        PyErr_SetString(PyExc_TypeError, "pack: chunks must be a list of str or bytes");
        return NULL;
    }
    Py_ssize_t n = PyList_GET_SIZE(chunks);
    PyObject *offsets = PyBytes_FromStringAndSize(NULL, (n + 1) * (Py_ssize_t)sizeof(int64_t));
    if (!offsets) return NULL;
    int64_t *at = (int64_t *)PyBytes_AS_STRING(offsets);
    size_t used = 0, room = 1024;
    char *data = malloc(room);
    if (!data) {
        Py_DECREF(offsets);
        return PyErr_NoMemory();
    }
    for (Py_ssize_t k = 0; k < n; k++) {
        PyObject *escaped = NULL;
        const char *bytes;
        Py_ssize_t length;
        if (chunk_bytes(PyList_GET_ITEM(chunks, k), "pack", k, &bytes, &length, &escaped) < 0)
            goto fail;
        if (used + (size_t)length > room) {
            while (used + (size_t)length > room) room *= 2;
            char *grown = realloc(data, room);
            if (!grown) {
                Py_XDECREF(escaped);
                PyErr_NoMemory();
                goto fail;
            }
            data = grown;
        }
        memcpy(data + used, bytes, (size_t)length);
        at[k] = (int64_t)used;
        used += (size_t)length;
        Py_XDECREF(escaped);
    }
    at[n] = (int64_t)used;
    PyObject *packed = PyBytes_FromStringAndSize(data, (Py_ssize_t)used);
    free(data);
    if (!packed) {
        Py_DECREF(offsets);
        return NULL;
    }
    PyObject *both = PyTuple_Pack(2, packed, offsets);
    Py_DECREF(packed);
    Py_DECREF(offsets);
    return both;
fail:
    free(data);
    Py_DECREF(offsets);
    return NULL;
}

/* The chunks' layout checked into *out: 0, or -1 with a ValueError. */
static int check_layout(const Py_buffer *data, const Py_buffer *offsets, const Py_buffer *counts,
                        Chunks *out) {
    size_t n = (size_t)counts->len / 8;
    if (counts->len % 8 || (size_t)offsets->len != 8 * (n + 1)) {
        PyErr_SetString(PyExc_ValueError, "counts must be int64, offsets int64 and one longer");
        return -1;
    }
    if (n >= UINT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "at most 2^32 - 2 distinct chunks");
        return -1;
    }
    const int64_t *at = offsets->buf, *count = counts->buf;
    for (size_t k = 0; k < n; k++)
        if (at[k] < 0 || at[k] > at[k + 1] || at[k + 1] > data->len || at[k + 1] - at[k] >= UINT32_MAX
            || count[k] < 1) {
            PyErr_Format(PyExc_ValueError, "chunk %zu: offsets %lld..%lld or count %lld out of range",
                         k, (long long)at[k], (long long)at[k + 1], (long long)count[k]);
            return -1;
        }
    /* Every pair count stays within 3 times the chunks' bytes weighted by their counts (the
       first counts, plus at most two gains an occurrence merged, each a chunk's count): kept
       below 2^63, no int64 sum wraps (the caller trains such counts on the reference). */
    uint64_t weight = 0;
    for (size_t k = 0; k < n; k++) {
        uint64_t bytes = (uint64_t)(at[k + 1] - at[k]), part;
        if (__builtin_mul_overflow(bytes, (uint64_t)count[k], &part)
            || __builtin_add_overflow(weight, part, &weight) || weight > INT64_MAX / 3) {
            PyErr_SetString(PyExc_OverflowError, "the counts are too large to sum in 64 bits: "
                            "their chunks' bytes times their counts reach 2^63 / 3");
            return -1;
        }
    }
    if (n == 0 && offsets->len == 8 && (((const int64_t *)offsets->buf)[0] < 0
                                        || ((const int64_t *)offsets->buf)[0] > data->len)) {
        PyErr_SetString(PyExc_ValueError, "offsets out of range");
        return -1;
    }
    out->data = data->buf;
    out->offsets = at;
    out->counts = count;
    out->n = n;
    return 0;
}

/* A training without the GIL lets Python's signal handlers run (Ctrl-C's KeyboardInterrupt)
   every POLL_NS of it: the GIL taken back for a moment, never more often (another thread
   busy in Python keeps it up to its switch interval, 5 ms), the clock read every 16 steps
   (later steps take microseconds, the first ones milliseconds). */
#define POLL_NS 50000000  /* 50 ms */

typedef struct {
    PyThreadState *thread;  /* the caller's, while the GIL is released */
    int64_t last;           /* when handlers last ran (ns) */
    unsigned steps;
} Poll;

static int64_t now_ns(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
}

/* Interrupt's test: nonzero when a handler raised (its exception is then set). */
static int handlers_raised(void *context) {
    Poll *poll = context;
    if (++poll->steps % 16) return 0;
    int64_t now = now_ns();
    if (now - poll->last < POLL_NS) return 0;
    poll->last = now;
    PyEval_RestoreThread(poll->thread);
    int raised = PyErr_CheckSignals() < 0;
    poll->thread = PyEval_SaveThread();
    return raised;
}

static PyObject *engine_train(PyObject *Py_UNUSED(self), PyObject *args, PyObject *kwargs) {
    static char *keywords[] = {"data", "offsets", "counts", "size", "let_in", "work", NULL};
    Py_buffer data, offsets, counts, work = {0};
    Py_ssize_t size, let_in = 4096;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "y*y*y*n|$nw*", keywords, &data, &offsets,
                                     &counts, &size, &let_in, &work))
        return NULL;
    uint64_t steps = 0;
    PyObject *result = NULL;
    Chunks chunks;
    Vocab vocab = {0};
    if (size < 0 || size > INT32_MAX) {  /* ids below 2^31: train.c's notes flag a bit above */
        PyErr_SetString(PyExc_ValueError, "size must be 0..2^31 - 1");
        goto done;
    }
    if (let_in < 1) {
        PyErr_SetString(PyExc_ValueError, "let_in must be 1 or more");
        goto done;
    }
    if (work.buf && work.len != sizeof steps) {
        PyErr_SetString(PyExc_ValueError, "work must be a writable buffer of one uint64");
        goto done;
    }
    if (check_layout(&data, &offsets, &counts, &chunks) < 0) goto done;
    Poll poll = {NULL, now_ns(), 0};
    Interrupt interrupt = {handlers_raised, &poll};
    poll.thread = PyEval_SaveThread();
    const char *problem = train(&chunks, (uint32_t)size, (size_t)let_in, &interrupt, &vocab,
                                &steps);
    PyEval_RestoreThread(poll.thread);
    if (work.buf) {  /* the steps, added (also when the training stopped) */
        uint64_t total;
        memcpy(&total, work.buf, sizeof total);
        total += steps;
        memcpy(work.buf, &total, sizeof total);
    }
    if (problem) {
        if (strcmp(problem, INTERRUPTED) == 0) goto done;  /* the handler's exception is set */
        if (strcmp(problem, "out of memory") == 0) PyErr_NoMemory();
        else PyErr_SetString(PyExc_RuntimeError, problem);
        goto done;
    }
    result = PyList_New(vocab.n);
    if (!result) goto done;
    for (uint32_t id = 0; id < vocab.n; id++) {
        PyObject *piece = PyBytes_FromStringAndSize((const char *)vocab.bytes + vocab.start[id],
                                                    vocab.length[id]);
        if (!piece) {
            Py_CLEAR(result);
            goto done;
        }
        PyList_SET_ITEM(result, id, piece);
    }
done:
    vocab_free(&vocab);
    if (work.buf) PyBuffer_Release(&work);
    PyBuffer_Release(&data);
    PyBuffer_Release(&offsets);
    PyBuffer_Release(&counts);
    return result;
}

/* --- Encoder --------------------------------------------------------------------------- */

typedef struct {
    PyObject_HEAD
    Encoder encoder;
    Ids ids;
} EncoderObject;

static void encoder_dealloc(EncoderObject *self) {
    encoder_free(&self->encoder);
    free(self->ids.at);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *encoder_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    static char *keywords[] = {"vocab", NULL};
    PyObject *vocab;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O!", keywords, &PyList_Type, &vocab))
        return NULL;
    const Py_ssize_t n = PyList_GET_SIZE(vocab);
    for (Py_ssize_t id = 0; id < n; id++)
        if (!PyBytes_Check(PyList_GET_ITEM(vocab, id))) {
            PyErr_Format(PyExc_TypeError, "Encoder: piece %zd is %s, not bytes", id,
                         Py_TYPE(PyList_GET_ITEM(vocab, id))->tp_name);
            return NULL;
        }
    EncoderObject *self = (EncoderObject *)type->tp_alloc(type, 0);
    if (!self) return NULL;
    const uint8_t **pieces = malloc((n ? (size_t)n : 1) * sizeof *pieces);
    size_t *lengths = malloc((n ? (size_t)n : 1) * sizeof *lengths);
    int status = -1;
    if (pieces && lengths) {
        for (Py_ssize_t id = 0; id < n; id++) {
            PyObject *piece = PyList_GET_ITEM(vocab, id);
            pieces[id] = (const uint8_t *)PyBytes_AS_STRING(piece);
            lengths[id] = (size_t)PyBytes_GET_SIZE(piece);
        }
        status = encoder_init(&self->encoder, pieces, lengths, (size_t)n);
    }
    free(pieces);
    free(lengths);
    if (status < 0) {
        Py_DECREF(self);
        return PyErr_NoMemory();
    }
    return (PyObject *)self;
}

/* encode(chunks) -> each chunk's ids (a list), or None where it has none. */
static PyObject *encoder_encode_chunks(EncoderObject *self, PyObject *chunks) {
    if (!PyList_Check(chunks)) {
        PyErr_SetString(PyExc_TypeError, "encode: chunks must be a list of str or bytes");
        return NULL;
    }
    const Py_ssize_t n = PyList_GET_SIZE(chunks);
    PyObject *result = PyList_New(n);
    if (!result) return NULL;
    for (Py_ssize_t k = 0; k < n; k++) {
        PyObject *escaped = NULL, *found = NULL;
        const char *bytes;
        Py_ssize_t length;
        if (chunk_bytes(PyList_GET_ITEM(chunks, k), "encode", k, &bytes, &length, &escaped) < 0)
            goto fail;
        const int status = encoder_encode(&self->encoder, (const uint8_t *)bytes, (size_t)length,
                                          &self->ids);
        Py_XDECREF(escaped);
        if (status < 0) {
            PyErr_NoMemory();
            goto fail;
        }
        if (status > 0) {
            found = Py_NewRef(Py_None);
        } else {
            found = PyList_New((Py_ssize_t)self->ids.n);
            if (!found) goto fail;
            for (size_t i = 0; i < self->ids.n; i++) {
                PyObject *id = PyLong_FromLong(self->ids.at[i]);
                if (!id) {
                    Py_DECREF(found);
                    goto fail;
                }
                PyList_SET_ITEM(found, (Py_ssize_t)i, id);
            }
        }
        PyList_SET_ITEM(result, k, found);
    }
    return result;
fail:
    Py_DECREF(result);
    return NULL;
}

static PyObject *encoder_work(EncoderObject *self, void *Py_UNUSED(closure)) {
    return PyLong_FromUnsignedLongLong(self->encoder.work);
}

static PyMethodDef encoder_methods[] = {
    {"encode", (PyCFunction)encoder_encode_chunks, METH_O,
     "encode(chunks) -> list[list[int] | None]: each chunk's ids (None: it has none)"},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef encoder_getset[] = {
    {"work", (getter)encoder_work, NULL,
     "steps taken so far: bytes read, failure links followed, pops written", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject EncoderType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "analyzer.wordpiece._engine.Encoder",
    .tp_basicsize = sizeof(EncoderObject),
    .tp_dealloc = (destructor)encoder_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Encoder(vocab: list[bytes]): encodes chunks as the vocabulary does (each id's "
              "string, '##' before a piece inside a chunk), Hugging Face's greedy longest match",
    .tp_methods = encoder_methods,
    .tp_getset = encoder_getset,
    .tp_new = encoder_new,
};

static PyMethodDef engine_methods[] = {
    {"pack", engine_pack, METH_O,
     "pack(chunks) -> (data, offsets): str (UTF-8, surrogate escapes as their bytes) or bytes "
     "end to end, and int64 offsets, one more than the chunks"},
    {"train", (PyCFunction)(void (*)(void))engine_train, METH_VARARGS | METH_KEYWORDS,
     "train(data, offsets, counts, size, *, let_in=4096, work) -> list[bytes]: each id's "
     "string ('##' inside a chunk); let_in changes only the speed (entries the queue lets into "
     "its heap at once); work, a writable buffer of one uint64 (array('Q', [0])), gets the "
     "steps taken added"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef engine_module = {
    PyModuleDef_HEAD_INIT, "_engine",
    "The compiled WordPiece trainer (see analyzer/wordpiece/engine/).", -1, engine_methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__engine(void) {
    if (PyType_Ready(&EncoderType) < 0) return NULL;
    PyObject *module = PyModule_Create(&engine_module);
    if (!module) return NULL;
    if (PyModule_AddObjectRef(module, "Encoder", (PyObject *)&EncoderType) < 0) {
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
