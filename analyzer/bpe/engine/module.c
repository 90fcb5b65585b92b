/*
 * analyzer.bpe._engine: the Python face of the compiled BPE engine. Four files of it know
 * Python (bindings.h): this one (the module, its method table, and what the others share:
 * reading arguments into the engine's structures, engine.h, and the results' named tuples,
 * TrainResult and CountResult), bind_train.c (the trainer: train.c, groups.c), bind_replay.c
 * (the replay: replay.c) and bind_count.c (splitting and counting: split.c, counter.c). Each
 * runs its part without the GIL. The results are typed in analyzer/bpe/_engine.pyi;
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
 *   PartedCounter(parts): .count_texts(texts, pattern, classes, folds, first=0) -> lost;
 *         .count_utf8(data, starts, ends, pattern, classes, folds, first=0) -> lost; .add;
 *         .items(limit=-1); .rewind() (bind_parted.c: one part per counting thread)
 *   utf8_lines(block) -> (starts, ends, characters) or None   (lines.c)
 *   RankedEncoder(pieces, starts, merges, byte_ids, characters, whole_first): .encode(text,
 *         steps, classes, folds); .count(texts, steps, classes, folds, spaces, threads=1,
 *         split_words=True) (bind_ranked.c: production tokenizers, ranked.c)
 *         (counter.c: distinct chunks with their counts, gathered from batches)
 */

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdlib.h>
#include <string.h>

#include "bindings.h"

/* ---------------------------------------------------------------------------------------- */
/* Arguments                                                                                 */

int read_int64s(PyObject *object, Py_buffer *view, const char *name) {
    if (PyObject_GetBuffer(object, view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) return -1;
    /* 'q' (array, bytes cast) or, where long is 64 bits, 'l' (numpy's int64) */
    const char *format = view->format ? view->format + (view->format[0] == '<' || view->format[0] == '=') : NULL;
    if (view->itemsize != 8 || !format || !strchr("qQlL", format[0]) || !format[0]) {
        PyBuffer_Release(view);
        PyErr_Format(PyExc_TypeError, "%s must be an array of 64-bit ints", name);
        return -1;
    }
    return 0;
}

/* An optional int64 array with one value per text: 1 when given (the view then held), 0 for
   None, -1 with an exception (nothing held). */
int read_per_text(PyObject *object, Py_buffer *view, const char *name, Py_ssize_t n_bytes) {
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
int report(PyObject *progress, Py_ssize_t done, Py_ssize_t total) {
    if (PyErr_CheckSignals() < 0) return -1;
    if (progress == Py_None) return 0;
    PyObject *result = PyObject_CallFunction(progress, "nn", done, total);
    if (!result) return -1;
    Py_DECREF(result);
    return 0;
}

PyObject *bytes_of(const void *data, size_t items, size_t item) {
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

PyTypeObject *TrainResult, *CountResult;

/* A struct sequence from `n` new references (stolen, even on failure). */
PyObject *named(PyTypeObject *type, PyObject **items, Py_ssize_t n) {
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

/* The UTF-8 bytes of texts[index], appended to `batch` (a growing buffer) with a separator;
   -1 with an exception (TypeError for a non-str, ValueError naming the text and character for
   a lone surrogate). */
int append_text(PyObject *texts, Py_ssize_t index, uint8_t **batch, size_t *used, size_t *capacity,
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

/* ---------------------------------------------------------------------------------------- */
/* The module                                                                                */

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
    {"split_steps", engine_split_steps, METH_VARARGS,
     "split_steps(text, steps, classes, folds, digits=None) -> list[str]: a text's chunks under "
     "a production tokenizer's pre-tokenizer steps"},
    {"split_words_by_ids", engine_split_words_by_ids, METH_VARARGS,
     "split_words_by_ids(texts, ids, offsets, pieces, starts, spaces) -> bytes: int64 per text, "
     "the words its tokens split (-1: they do not spell it)"},
    {"utf8_lines", engine_utf8_lines, METH_VARARGS,
     "utf8_lines(block) -> (starts, ends, characters) or None: the documents of whole lines of "
     "UTF-8 (None: not UTF-8)"},
    {"_counter_from_items", counter_from_items, METH_VARARGS,
     "_counter_from_items(data, offsets, counts, firsts) -> ChunkCounter (for pickling)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef engine_module = {
    PyModuleDef_HEAD_INIT, "_engine", "The compiled BPE engine (see analyzer/bpe/engine/).", -1,
    engine_methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__engine(void) {
    if (PyType_Ready(&ReplayerType) < 0 || PyType_Ready(&CounterType) < 0
        || PyType_Ready(&PartedType) < 0 || PyType_Ready(&RankedType) < 0) return NULL;
    TrainResult = PyStructSequence_NewType(&train_desc);
    CountResult = PyStructSequence_NewType(&count_desc);
    if (!TrainResult || !CountResult) return NULL;
    PyObject *module = PyModule_Create(&engine_module);
    if (!module) return NULL;
    Py_INCREF(&ReplayerType);
    Py_INCREF(&CounterType);
    if (PyModule_AddObject(module, "Replayer", (PyObject *)&ReplayerType) < 0
        || PyModule_AddObject(module, "ChunkCounter", (PyObject *)&CounterType) < 0
        || PyModule_AddObject(module, "PartedCounter", Py_NewRef((PyObject *)&PartedType)) < 0
        || PyModule_AddObject(module, "RankedEncoder", Py_NewRef((PyObject *)&RankedType)) < 0
        || PyModule_AddObject(module, "TrainResult", Py_NewRef((PyObject *)TrainResult)) < 0
        || PyModule_AddObject(module, "CountResult", Py_NewRef((PyObject *)CountResult)) < 0) {
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
