/* analyzer.wordpiece._engine: the Python face of the compiled WordPiece trainer.

   pack(chunks) lays out chunks (str, taken as UTF-8 with surrogate escapes, or bytes) end to
   end with their offsets; train(data, offsets, counts, size) trains on such a layout (views
   of the caller's buffers, without the GIL) and gives each id's string. */

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <time.h>

#include "wordpiece.h"

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
        PyObject *chunk = PyList_GET_ITEM(chunks, k), *escaped = NULL;
        const char *bytes;
        Py_ssize_t length;
        if (PyUnicode_Check(chunk)) {
            bytes = PyUnicode_AsUTF8AndSize(chunk, &length);
            if (!bytes) {  /* a lone surrogate: the byte it escapes (as to_byte_chars does) */
                PyErr_Clear();
                escaped = PyUnicode_AsEncodedString(chunk, "utf-8", "surrogateescape");
                if (!escaped) goto fail;
                bytes = PyBytes_AS_STRING(escaped);
                length = PyBytes_GET_SIZE(escaped);
            }
        } else if (PyBytes_Check(chunk)) {
            bytes = PyBytes_AS_STRING(chunk);
            length = PyBytes_GET_SIZE(chunk);
        } else {
            PyErr_Format(PyExc_TypeError, "pack: chunk %zd is %s, not str or bytes", k,
                         Py_TYPE(chunk)->tp_name);
            goto fail;
        }
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
    static char *keywords[] = {"data", "offsets", "counts", "size", "let_in", NULL};
    Py_buffer data, offsets, counts;
    Py_ssize_t size, let_in = 4096;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "y*y*y*n|$n", keywords, &data, &offsets,
                                     &counts, &size, &let_in))
        return NULL;
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
    if (check_layout(&data, &offsets, &counts, &chunks) < 0) goto done;
    Poll poll = {NULL, now_ns(), 0};
    Interrupt interrupt = {handlers_raised, &poll};
    poll.thread = PyEval_SaveThread();
    const char *problem = train(&chunks, (uint32_t)size, (size_t)let_in, &interrupt, &vocab);
    PyEval_RestoreThread(poll.thread);
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
    PyBuffer_Release(&data);
    PyBuffer_Release(&offsets);
    PyBuffer_Release(&counts);
    return result;
}

static PyMethodDef engine_methods[] = {
    {"pack", engine_pack, METH_O,
     "pack(chunks) -> (data, offsets): str (UTF-8, surrogate escapes as their bytes) or bytes "
     "end to end, and int64 offsets, one more than the chunks"},
    {"train", (PyCFunction)(void (*)(void))engine_train, METH_VARARGS | METH_KEYWORDS,
     "train(data, offsets, counts, size, *, let_in=4096) -> list[bytes]: each id's string ('##' "
     "inside a chunk); let_in changes only the speed (entries the queue lets into its heap at "
     "once)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef engine_module = {
    PyModuleDef_HEAD_INIT, "_engine",
    "The compiled WordPiece trainer (see analyzer/wordpiece/engine/).", -1, engine_methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__engine(void) { return PyModule_Create(&engine_module); }
