/*
 * What the files of analyzer.bpe._engine's Python face share (they are the only ones that
 * know Python): module.c defines the argument readers, the result types and the module;
 * bind_train.c, bind_replay.c and bind_count.c each bind one part of the engine (engine.h)
 * and give module.c the functions and types its method table lists.
 */

#ifndef ANALYZER_BINDINGS_H
#define ANALYZER_BINDINGS_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "engine.h"

/* module.c: arguments and results. */
int read_int64s(PyObject *object, Py_buffer *view, const char *name);
int read_per_text(PyObject *object, Py_buffer *view, const char *name, Py_ssize_t n_bytes);
int report(PyObject *progress, Py_ssize_t done, Py_ssize_t total);
PyObject *bytes_of(const void *data, size_t items, size_t item);
PyObject *named(PyTypeObject *type, PyObject **items, Py_ssize_t n);
int append_text(PyObject *texts, Py_ssize_t index, uint8_t **batch, size_t *used, size_t *capacity,
                Status *status);
extern PyTypeObject *TrainResult, *CountResult;

/* bind_train.c: train() and pack(). */
PyObject *engine_train(PyObject *self, PyObject *args, PyObject *kwargs);
PyObject *engine_pack(PyObject *self, PyObject *texts);

/* bind_replay.c: the Replayer type and sum_by_text(). */
extern PyTypeObject ReplayerType;
PyObject *sum_by_text(PyObject *self, PyObject *args);

/* bind_count.c: split_text(), chunk_texts() and the ChunkCounter type. */
PyObject *engine_split_text(PyObject *self, PyObject *args);
PyObject *engine_chunk_texts(PyObject *self, PyObject *args, PyObject *kwargs);
extern PyTypeObject CounterType;
PyObject *counter_from_items(PyObject *self, PyObject *args);
int read_tables(Py_buffer *classes, Py_buffer *folds, uint32_t *fold_store, SplitTables *tables);
int split_input(PyObject *sequence, int pattern, Py_buffer *classes, Py_buffer *folds,
                uint32_t *fold_store, SplitTables *tables, PyObject **texts, SplitText **views);

/* bind_count.c, for both counters' count_texts(texts, pattern, classes, folds, first=0,
   threads=1): the call's arguments read and its texts viewed for the splitter (open: 0, or -1
   with the error set; close it either way), and a batch gathered and added (without the GIL)
   through `add` on `counter`: the first text the pattern would drop a character of (nothing is
   counted then) or -1; -2 with the error set. */
typedef struct {
    PyObject *texts; /* held as a tuple while they are split: no other thread drops one */
    SplitText *views;
    size_t n;
    SplitTables tables;
    uint32_t fold_store[64]; /* the tables' case folds, when they are read into it */
    Py_buffer classes, folds;
    int pattern, threads, parsed;
    long long first;
} CountCall;
int count_call_open(CountCall *call, PyObject *args, PyObject *kwargs);
/* RuntimeError while another thread's count_texts has a counter (`busy`); 0 when it is free. */
int refused_while_busy(int busy);
void count_call_close(CountCall *call);
typedef int (*AddGathered)(void *counter, const Gathered *gathered, const SplitText *views,
                           int64_t first);
Py_ssize_t gather_and_add(int pattern, const SplitTables *tables, const SplitText *views,
                          size_t n, int threads, int64_t first, AddGathered add, void *counter);

/* bind_count.c, for both counters' types: add(chunks, counts=None, first=0) through `add`
   (on `counter`), and the four bytes objects of an items() listing. */
typedef int (*AddChunk)(void *counter, const uint8_t *data, size_t length, int64_t count,
                        int64_t first);
PyObject *add_chunks(PyObject *args, PyObject *kwargs, AddChunk add, void *counter);
typedef struct {
    PyObject *data, *offsets, *counts, *firsts;
    size_t position; /* bytes written to data so far */
} Listing;
int listing_new(Listing *out, size_t bytes, size_t n);
void listing_put(Listing *out, size_t k, int64_t offset, const ChunkCounter *c,
                 const CountedChunk *chunk);
PyObject *listing_done(Listing *out, size_t n, int64_t end);
size_t counter_nbytes(const ChunkCounter *c);

/* bind_ranked.c: the RankedEncoder type (production tokenizers) and split_steps(). */
extern PyTypeObject RankedType;
PyObject *engine_split_steps(PyObject *self, PyObject *args);
PyObject *engine_split_words_by_ids(PyObject *self, PyObject *args);

/* bind_parted.c: the PartedCounter type and utf8_lines(). */
extern PyTypeObject PartedType;
PyObject *engine_utf8_lines(PyObject *self, PyObject *args);

#endif
