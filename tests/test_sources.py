"""Training sources (issue 39): documents read from every format and compression, sources found
in their layouts and registered, and runs that train on a source's sample equal to training
on that sample passed as texts, merge for merge, for every kind of vocabulary; the sample the
same on one core, two, and a Dask cluster; the chunk-count cache used again and never half
written; bad input refused naming the file and where."""

from __future__ import annotations

import gzip
import itertools
import json
import lzma
import os
import re
import signal
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from analyzer.corpus import read_corpus
from analyzer.corpus.sources import find_source_files, scan_files
from analyzer.corpus.streams import StreamError, file_kind, read_documents
from analyzer.errors import AnalyzerError
from analyzer.external.extension import extension_base
from analyzer.runs import RunError, RunSettings, counting, execute_run
from analyzer.runs.builders import build_vocabulary, make_plans
from analyzer.runs.chunk_cache import IN_USE
from analyzer.runs.plan import TrainingTexts
from analyzer.runs.resolution import resolve
from analyzer.runs.sample import selected
from analyzer.store import get_run, load_merges, open_db, save_corpus, save_source, vocabularies

pyarrow = pytest.importorskip("pyarrow")
zstandard = pytest.importorskip("zstandard")

COMPRESSIONS = {None: lambda data: data, "gzip": lambda data: gzip.compress(data, mtime=0),
                "xz": lzma.compress, "zstd": lambda data: zstandard.ZstdCompressor().compress(data)}
SUFFIX = {None: "", "gzip": ".gz", "xz": ".xz", "zstd": ".zst"}


def write_documents(path: Path, documents: list[str], format: str, compression: str | None) -> Path:
    """The documents as a file of `format` (text, jsonl, parquet), compressed or not."""
    if format == "text":
        data = "".join(f"{text}\n" for text in documents).encode()
        name = path.with_name(path.name + ".txt")
    elif format == "jsonl":
        data = "".join(json.dumps({"text": text}) + "\n" for text in documents).encode()
        name = path.with_name(path.name + ".jsonl")
    else:
        import pyarrow.parquet as pq

        sink = pyarrow.BufferOutputStream()
        pq.write_table(pyarrow.table({"text": pyarrow.array(documents, pyarrow.string()),
                                      "id": list(range(len(documents)))}), sink)
        data = sink.getvalue().to_pybytes()
        name = path.with_name(path.name + ".parquet")
    final = name.with_name(name.name + SUFFIX[compression])
    final.write_bytes(COMPRESSIONS[compression](data))
    return final


# Documents from every format and compression.

@pytest.mark.parametrize("format", ["text", "jsonl", "parquet"])
@pytest.mark.parametrize("compression", [None, "gzip", "xz", "zstd"])
def test_every_format_and_compression_gives_the_same_documents(tmp_path, format, compression):
    documents = ["the first", "a second, é ü 中文", "x" * 10_000, "last one"] * 3
    path = write_documents(tmp_path / "fra_Latn", documents, format, compression)
    kind = file_kind(path)
    assert (kind.compression, kind.format) == (compression, format)
    found = [text for batch in read_documents(path, kind, batch_bytes=5_000) for text in batch.texts]
    assert found == documents
    # Told by content, not by name: the same bytes under a name that says nothing.
    bare = tmp_path / "bare"
    bare.write_bytes(path.read_bytes())
    assert file_kind(bare) == kind


def test_blank_lines_are_no_documents_and_paragraphs_are_blocks(tmp_path):
    path = tmp_path / "a.txt"
    path.write_text("one\r\n\n   \ntwo\nthree\n\n\nfour")
    assert [t for b in read_documents(path) for t in b.texts] == ["one", "two", "three", "four"]
    assert [t for b in read_documents(path, documents="paragraphs") for t in b.texts] == \
        ["one", "two\nthree", "four"]


@pytest.mark.parametrize("content, said", [
    (b"good\nbad \xff here\nok\n", "not valid UTF-8 at byte offset 9 of its text (line 2, byte 0xff)"),
    (b'{"text": "a"}\n{"body": "b"}\n{"text": "c"}\n', "line 2 has no 'text' field"),
    (b'{"text": "a"}\nnot json\n{"text": "c"}', "line 2 is not JSON (Expecting value at column 1)"),
    (b'{"text": "a"}\n[1, 2]\n{"text": "c"}', "line 2 is not a JSON object"),
])
def test_what_cannot_be_read_is_named_or_skipped_and_counted(tmp_path, content, said):
    path = tmp_path / ("a.jsonl" if content.startswith(b"{") else "a.txt")
    path.write_bytes(content)
    with pytest.raises(StreamError, match=re.escape(said)) as raised:
        list(read_documents(path))
    assert str(path) in str(raised.value)
    batches = list(read_documents(path, skip_invalid=True))
    assert sum(len(b.texts) for b in batches) == 2 and sum(b.skipped_documents for b in batches) == 1


def test_a_broken_compressed_stream_and_a_wrong_name_are_said(tmp_path):
    data = gzip.compress(b"".join(b"line %d\n" % i for i in range(300_000)))
    broken = tmp_path / "a.txt.gz"
    broken.write_bytes(data[:len(data) // 2])
    with pytest.raises(StreamError, match="its gzip stream is broken after"):
        list(read_documents(broken))
    kept = list(read_documents(broken, skip_invalid=True))
    assert sum(len(b.texts) for b in kept) > 0 and "the rest of the file was skipped" in kept[-1].notes[0]
    lying = tmp_path / "b.txt.zst"
    lying.write_text("plain text")
    with pytest.raises(StreamError, match="named as zstd-compressed, but its bytes are not compressed"):
        file_kind(lying)


def test_a_parquet_file_without_the_column_is_refused_naming_the_columns(tmp_path):
    path = write_documents(tmp_path / "a", ["x"], "parquet", None)
    with pytest.raises(StreamError, match="no column 'body' \\(it has: text, id\\)"):
        list(read_documents(path, text_field="body"))


# Sources in their layouts.

def test_the_layouts_are_found_and_codes_normalised(tmp_path):
    flat = tmp_path / "flat"
    flat.mkdir()
    write_documents(flat / "fr", ["un"], "text", "gzip")
    write_documents(flat / "eng_Latn", ["one"], "jsonl", None)
    (flat / "README.md").write_text("about")
    sharded = tmp_path / "sharded"
    for lang, shard in (("deu_Latn", "train/000"), ("deu_Latn", "train/001"), ("rus_Cyrl", "a")):
        (sharded / lang / shard).parent.mkdir(parents=True, exist_ok=True)
        write_documents(sharded / lang / shard, [f"{lang} {shard}"], "parquet", None)
    single = write_documents(tmp_path / "kor", ["하나"], "text", None)
    files = find_source_files([flat, sharded, single])
    assert [(f.lang, f.path.name) for f in files] == [
        ("eng_Latn", "eng_Latn.jsonl"), ("fra_Latn", "fr.txt.gz"),
        ("deu_Latn", "000.parquet"), ("deu_Latn", "001.parquet"), ("rus_Cyrl", "a.parquet"),
        ("kor_Kore", "kor.txt")]
    scanned = scan_files(files)
    assert scanned.languages["deu_Latn"] == (len("deu_Latn train/000") * 2, 2)
    (flat / "notes-2024.txt").write_text("x")
    with pytest.raises(AnalyzerError, match="notes-2024.txt: its name is not a language"):
        find_source_files([flat])


# Runs that train on a source.

TINY = {"eng_Latn": ["the cat sat", "a dog ran far", "the end"],
        "fra_Latn": ["le chat", "un chien court", "la fin"]}


def tiny_corpus(folder: Path) -> Path:
    folder.mkdir()
    for lang, lines in TINY.items():
        (folder / f"{lang}.txt").write_text("\n".join(lines) + "\n")
    return folder


def make_source(db, folder: Path, documents: dict[str, list[list[str]]], formats) -> None:
    """A source of each language's files (each a list of documents), registered as 'mono'."""
    folder.mkdir(exist_ok=True)
    kinds = itertools.cycle(formats)
    for lang, files in documents.items():
        (folder / lang).mkdir(exist_ok=True)
        for index, texts in enumerate(files):
            format, compression = next(kinds)
            write_documents(folder / lang / f"{index:03d}", texts, format, compression)
    files = find_source_files([folder])
    save_source(db, "mono", scan_files(files), documents="lines", text_field="text", replace=True)


def the_sample(db, settings: RunSettings) -> dict[str, list[str]]:
    """What a run takes of the source, read again here with the sampling rule: the texts today's
    path would train on."""
    plan = resolve(db, settings).source
    sample = {}
    for lang, language in plan.languages.items():
        taken = []
        for base, item in zip(language.bases(), language.files):
            from analyzer.corpus.streams import FileKind

            for batch in read_documents(Path(item.path), FileKind(item.compression, item.format),
                                        skip_invalid=True):
                places = base + batch.first + np.arange(len(batch.texts), dtype=np.int64)
                mask = selected(plan.seed, lang, places, language.threshold)
                taken += list(itertools.compress(batch.texts, mask))
        sample[lang] = taken
    return sample


WORDS = st.lists(st.sampled_from(["ab", "ba", "abc", "é", "aé", "ccc", "中", "b", " "]),
                 min_size=1, max_size=8).map(" ".join).filter(str.strip)
"""A document with text: a language whose files are blank is refused when its source is added
(`CorpusError`), which other tests check."""
DOCUMENT_FILES = st.lists(st.lists(WORDS, min_size=1, max_size=6), min_size=1, max_size=3)
FORMATS = st.lists(st.tuples(st.sampled_from(["text", "jsonl", "parquet"]),
                             st.sampled_from([None, "gzip", "xz", "zstd"])), min_size=1, max_size=4)


@pytest.mark.slow
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(documents=st.fixed_dictionaries({"eng_Latn": DOCUMENT_FILES, "fra_Latn": DOCUMENT_FILES}),
       formats=FORMATS, seed=st.integers(0, 5), budget=st.none() | st.integers(10, 400),
       mix=st.sampled_from(["natural", "uniform", "temperature:0.3", "eng_Latn=1,fra_Latn=3"]),
       tie_break=st.sampled_from(["lexicographic", "first"]))
def test_training_on_a_source_is_training_on_its_sample_as_texts(
        tmp_path_factory, documents, formats, seed, budget, mix, tie_break):
    """Every job of the run, built from the counted sample and from the same sample as texts
    (today's path): the same merges, counts and replacements; the run stores the former."""
    folder = tmp_path_factory.mktemp("source")
    db = open_db(folder / "a.db")
    save_corpus(db, read_corpus(tiny_corpus(folder / "tiny")), "tiny")
    make_source(db, folder / "mono", documents, formats)
    settings_ = RunSettings(sizes=[260, 290], pretokenizers=["words"], parity=True,
                            superbpe=[270], train_on="mono", train_bytes=budget, mix=mix,
                            seed=seed, tie_break=tie_break, min_pair_count=1, jobs=1)
    run_id = execute_run(db, settings_)
    sample = the_sample(db, settings_)
    taken = get_run(db, run_id).training["languages"]
    assert [item["documents"] for item in taken] == [len(sample[lang]) for lang in sample]
    resolved = resolve(db, settings_)
    texts = {lang: [TINY[lang][u] for u in range(3)] for lang in TINY}
    for plan in make_plans(resolved):  # today's path: the sample as texts
        job = plan.job(texts)
        job.training = TrainingTexts({lang: sample[lang] for lang in plan.train_on})
        job.dev = {lang: texts[lang] for lang in plan.train_on} if plan.kind == "parity" else None
        if not any(sample[lang] for lang in plan.train_on):
            continue
        record = build_vocabulary(job)
        stored = load_merges(db, run_id, plan.scope, plan.pretokenizer)
        assert [(m.left, m.right, m.new_id, m.pair_count) for m in stored] == \
            [(m.left, m.right, m.new_id, m.pair_count) for m in record.merges], plan.label


def test_every_kind_of_vocabulary_trains_on_the_source(tmp_path):
    """Shared, per language, parity-aware, SuperBPE, Unigram, WordPiece and an extension: each
    learns from the source (its trained bytes are the sample's) and is measured on the corpus."""
    pytest.importorskip("tokenizers")
    db = open_db(tmp_path / "a.db")
    save_corpus(db, read_corpus(tiny_corpus(tmp_path / "tiny")), "tiny")
    texts = [f"word{i % 17} other{i % 5} thing{i % 3}" for i in range(200)]
    make_source(db, tmp_path / "mono", {"eng_Latn": [texts], "fra_Latn": [texts[::-1]]},
                [("text", "gzip"), ("parquet", None)])
    settings_ = RunSettings(sizes=[600], pretokenizers=["words"], parity=True, superbpe=[560],
                            algorithms=["bpe", "unigram", "wordpiece"], extend=["cl100k_base"],
                            added=[8], train_on="mono", jobs=1)
    run_id = execute_run(db, settings_)
    sample_bytes = sum(len(t.encode()) for t in texts) * 2
    found = {v.scope: v for v in vocabularies(db, run_id)}
    assert found["shared"].trained_bytes == found["parity"].trained_bytes == sample_bytes
    assert found["eng_Latn"].trained_bytes == sample_bytes // 2
    for scope in ("superbpe@560", "unigram", "wordpiece"):
        assert found[scope].trained_bytes == sample_bytes, scope
    # An extension starts from its base's tokens, so its training counts those.
    base = extension_base("cl100k_base")
    assert found["extend:cl100k_base"].trained_bytes == sum(base.count(texts)) * 2
    merges = load_merges(db, run_id, "shared", "words")
    assert any(m.token == b"word" for m in merges)  # learned from the source, not the corpus


@pytest.mark.slow
@pytest.mark.cluster
def test_the_sample_is_the_same_on_one_core_two_and_a_dask_cluster(tmp_path):
    pytest.importorskip("distributed")
    db = open_db(tmp_path / "a.db")
    save_corpus(db, read_corpus(tiny_corpus(tmp_path / "tiny")), "tiny")
    rng = np.random.default_rng(3)
    words = ["alpha", "beta", "gamma", "delta", "é", "中文", "x"]
    shards = [[" ".join(rng.choice(words, 6)) for _ in range(300)] for _ in range(4)]
    make_source(db, tmp_path / "mono", {"eng_Latn": shards[:2], "fra_Latn": shards[2:]},
                [("jsonl", "zstd"), ("text", None), ("parquet", "gzip")])
    results = []
    for jobs, executor in ((1, "local"), (2, "local"), (2, "dask")):
        settings_ = RunSettings(sizes=[300], pretokenizers=["words"], train_on="mono",
                                train_bytes=20_000, mix="uniform", jobs=jobs, executor=executor,
                                chunk_cache=False)
        run_id = execute_run(db, settings_)
        results.append((load_merges(db, run_id, "shared", "words"),
                        get_run(db, run_id).training["languages"]))
    assert results[0] == results[1] == results[2]


def test_a_second_run_takes_its_counts_from_the_cache_and_reads_no_text(tmp_path, monkeypatch):
    db = open_db(tmp_path / "a.db")
    save_corpus(db, read_corpus(tiny_corpus(tmp_path / "tiny")), "tiny")
    make_source(db, tmp_path / "mono", {"eng_Latn": [["a b c"] * 50], "fra_Latn": [["d e f"] * 50]},
                [("text", None)])
    stages: list[str] = []
    first = execute_run(db, RunSettings(sizes=[260], pretokenizers=["words"], train_on="mono"),
                        stage=stages.append)
    assert "counting eng_Latn" in stages
    cache = tmp_path / "a.db.chunks"
    assert len(list(cache.glob("*.arrow"))) == 2

    def no_reading(*args, **kwargs):
        raise AssertionError("the source was read again")

    monkeypatch.setattr(counting, "read_documents", no_reading)
    stages.clear()
    second = execute_run(db, RunSettings(sizes=[260, 270], pretokenizers=["words"], train_on="mono"),
                         stage=stages.append)
    assert not any(stage.startswith("counting") for stage in stages)
    assert "eng_Latn: counted before, taken from the chunk-count cache (no text read)" in stages
    assert load_merges(db, first, "shared", "words") == \
        load_merges(db, second, "shared", "words")[:len(load_merges(db, first, "shared", "words"))]


def test_a_table_that_cannot_be_written_fails_the_run_and_a_damaged_one_is_not_trained_on(
        tmp_path, monkeypatch):
    """The writer thread's error (a full disk, say) is the run's, raised where the run waits
    for it; a table damaged after it was written is refused when a job reads it, named."""
    from analyzer.runs.chunk_cache import table_chunks

    db = open_db(tmp_path / "a.db")
    save_corpus(db, read_corpus(tiny_corpus(tmp_path / "tiny")), "tiny")
    make_source(db, tmp_path / "mono", {"eng_Latn": [["a b"] * 9], "fra_Latn": [["c d"] * 9]},
                [("text", None)])
    settings_ = RunSettings(sizes=[260], pretokenizers=["words"], train_on="mono")

    def full(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(counting, "save_table", full)
    with pytest.raises(OSError, match="No space left on device"):
        execute_run(db, settings_)
    monkeypatch.undo()
    execute_run(db, settings_)
    entry = next((tmp_path / "a.db.chunks").glob("*.arrow"))
    entry.write_bytes(entry.read_bytes()[:100])
    with pytest.raises(OSError, match="is not a whole chunk-count table"):
        table_chunks(entry)


def test_a_half_written_cache_entry_is_never_read(tmp_path):
    """A file in the cache that is not a whole entry (a crash mid-write in another program,
    a truncated copy) is counted again, not read."""
    db = open_db(tmp_path / "a.db")
    save_corpus(db, read_corpus(tiny_corpus(tmp_path / "tiny")), "tiny")
    make_source(db, tmp_path / "mono", {"eng_Latn": [["a b"] * 9], "fra_Latn": [["c d"] * 9]},
                [("text", None)])
    settings_ = RunSettings(sizes=[260], pretokenizers=["words"], train_on="mono")
    first = execute_run(db, settings_)
    for entry in (tmp_path / "a.db.chunks").glob("*.arrow"):
        entry.write_bytes(entry.read_bytes()[:100])
    stages: list[str] = []
    second = execute_run(db, settings_, stage=stages.append)
    assert "counting eng_Latn" in stages
    assert load_merges(db, first, "shared", "words") == load_merges(db, second, "shared", "words")


def test_the_temporary_file_of_a_run_that_died_writing_is_removed(tmp_path):
    """A run stopped while its writer thread wrote an entry leaves `.<entry>.<pid>.partial`:
    the next run's cache removes it once that process is gone, and never a living one's."""
    from analyzer.runs.chunk_cache import ChunkCache

    folder = tmp_path / "a.db.chunks"
    folder.mkdir()
    dead = folder / f".{'0' * 64}.arrow.{2**31 - 1}.partial"  # above any pid_max: no process
    living = folder / f".{'1' * 64}.arrow.{os.getpid()}.partial"
    for path in (dead, living):
        path.write_bytes(b"half an entry")
    ChunkCache(folder)
    assert not dead.exists() and living.exists()


@pytest.mark.parametrize("change, said", [
    ("vanish", "is gone since it was registered"), ("touch", "changed since it was registered")])
def test_a_file_that_changed_or_vanished_is_refused_naming_it(tmp_path, change, said):
    db = open_db(tmp_path / "a.db")
    save_corpus(db, read_corpus(tiny_corpus(tmp_path / "tiny")), "tiny")
    make_source(db, tmp_path / "mono", {"eng_Latn": [["a b"]], "fra_Latn": [["c d"]]},
                [("text", None)])
    target = next((tmp_path / "mono" / "fra_Latn").iterdir())
    if change == "vanish":
        target.unlink()
    else:
        target.write_text("c d e\n")
    with pytest.raises(RunError, match=said) as raised:
        execute_run(db, RunSettings(sizes=[260], pretokenizers=["words"], train_on="mono"))
    assert str(target) in str(raised.value)


def test_a_run_language_the_source_lacks_and_mixed_up_settings_are_refused(tmp_path, monkeypatch):
    from analyzer.runs import resolution

    db = open_db(tmp_path / "a.db")
    save_corpus(db, read_corpus(tiny_corpus(tmp_path / "tiny")), "tiny")
    make_source(db, tmp_path / "mono", {"eng_Latn": [["a b"]]}, [("text", None)])
    monkeypatch.setattr(resolution, "NONE_LIMIT", 2)  # "a b" is past it
    cases = [
        (dict(train_on="mono"), "mono has no text in fra_Latn (it has: eng_Latn)"),
        (dict(train_on="nope"), "no training source named 'nope' (registered: mono)"),
        (dict(mix="uniform"), "mix is for training on a source: add train_on"),
        (dict(train_bytes=10), "train_bytes is for training on a source"),
        (dict(train_on="mono", languages=["eng"], weights={"eng": 2}),
         "weights is the corpus's training mix; training on a source, its mix is mix"),
        (dict(train_on="mono", languages=["eng"], holdout=0.5), "holdout holds units"),
        (dict(train_on="mono", languages=["eng"], mix="eng=1,fra=1"),
         "names fra_Latn, not a language of this run"),
        (dict(train_on="mono", languages=["eng"], mix="temperature:x"),
         "the temperature's exponent is a number"),
        (dict(train_on="mono", languages=["eng"], pretokenizers=["none"]),
         "none makes every document of the sample one chunk"),
    ]
    for extra, said in cases:
        with pytest.raises(AnalyzerError, match=re.escape(said)):
            execute_run(db, RunSettings(**{"sizes": [260], "pretokenizers": ["words"], **extra}))
    assert db.execute("SELECT count(*) FROM runs").fetchone()[0] == 0


def test_unreadable_documents_are_refused_or_skipped_and_reported(tmp_path):
    db = open_db(tmp_path / "a.db")
    save_corpus(db, read_corpus(tiny_corpus(tmp_path / "tiny")), "tiny")
    folder = tmp_path / "mono"
    folder.mkdir()
    (folder / "eng_Latn.txt").write_bytes(b"good one\nbad \xff one\ngood two\n")
    (folder / "fra_Latn.txt").write_text("bon\n")
    save_source(db, "mono", scan_files(find_source_files([folder])), documents="lines",
                text_field="text")
    settings_ = RunSettings(sizes=[260], pretokenizers=["words"], train_on="mono")
    with pytest.raises(RunError, match="not valid UTF-8 at byte offset 13.*skip_invalid skips them") as raised:
        execute_run(db, settings_)
    assert raised.value.file.endswith("eng_Latn.txt")
    run_id = execute_run(db, RunSettings(sizes=[260], pretokenizers=["words"], train_on="mono",
                                         skip_invalid=True))
    eng = get_run(db, run_id).training["languages"][0]
    assert (eng["documents"], eng["skipped_documents"]) == (2, 1)


def test_the_counting_pass_never_holds_the_text(tmp_path):
    """Memory goes with the distinct chunks: counting ten times the text adds nothing to the
    counter but its counts."""
    from analyzer.bpe.counting import chunk_counter, count_texts
    from analyzer.bpe.pretokenize import resolve as resolve_pretokenizer

    words = resolve_pretokenizer("words")
    counter = chunk_counter()
    count_texts(counter, ["the cat sat on the mat"] * 1000, words)
    size = len(counter), getattr(counter, "nbytes", 0)
    for batch in range(10):
        count_texts(counter, ["the cat sat on the mat"] * 1000, words, first=batch << 24)
    assert (len(counter), getattr(counter, "nbytes", 0)) == size


def test_the_compiled_and_the_python_counters_agree(tmp_path):
    """Batches with repeated chunks and order keys in any order: the same table, and merging a
    counter into another adds its counts and keeps the smaller keys."""
    from array import array

    from analyzer.bpe.counting import ChunkTable, PureCounter, chunk_counter

    compiled = chunk_counter()
    if isinstance(compiled, PureCounter):
        pytest.skip("the compiled engine is not built")
    rng = np.random.default_rng(5)
    pure = PureCounter()
    for _ in range(20):
        chunks = ["".join(rng.choice(list("abé中 "), rng.integers(1, 5))) for _ in range(50)]
        counts = array("q", [int(n) for n in rng.integers(1, 9, len(chunks))])
        first = int(rng.integers(0, 1 << 40))
        for counter in (compiled, pure):
            counter.add(chunks, counts, first)
    assert compiled.items() == pure.items()
    for counter, other in ((merged_compiled := chunk_counter(), compiled),
                           (merged_pure := PureCounter(), pure)):
        counter.add(["zz", "a"], array("q", [1, 1]), -1)
        counter.merge(other)
        counter.merge(other)
    assert merged_compiled.items() == merged_pure.items()
    data, offsets, counts, firsts = merged_compiled.items()
    assert data.startswith(b"zza") and array("q", firsts)[:2].tolist() == [-1, 0]
    doubled, single = (dict(zip(table.chunks(), table.counts))
                       for table in map(ChunkTable.of, (merged_compiled, compiled)))
    assert all(doubled[chunk] == 2 * n + (chunk == "a") for chunk, n in single.items())


def test_the_cli_registers_lists_shows_and_removes_a_source(tmp_path):
    from helpers import invoke

    db = tmp_path / "a.db"
    assert invoke(db, "ingest").exit_code == 0
    folder = tmp_path / "mono"
    folder.mkdir()
    write_documents(folder / "eng_Latn", ["one two"] * 20, "jsonl", "zstd")
    write_documents(folder / "fra_Latn", ["un deux"] * 20, "text", "gzip")
    result = invoke(db, "sources", "add", "mono", folder)
    assert result.exit_code == 0 and "Created source 'mono': 2 languages, 2 files" in result.output
    assert "already registered" in invoke(db, "sources", "add", "mono", folder).output
    listed = json.loads(invoke(db, "sources", "--json").stdout)
    assert listed[0]["name"] == "mono" and listed[0]["document_count"] == 40
    run = invoke(db, "run", "--vocab", "300", "--langs", "eng_Latn,fra_Latn", "--train-on", "mono",
                 "--train-bytes", "1k", "--pretokenize", "words", "--no-report", "--jobs", "1")
    assert run.exit_code == 0, run.output
    assert "Trained on source mono (mix natural, seed 0" in " ".join(run.output.split())
    shown = json.loads(invoke(db, "sources", "show", "mono", "--json").stdout)
    assert len(shown["cache"]) == 2 and shown["cache"][0]["source"] == "mono"
    export = json.loads(invoke(db, "export", "1").stdout)
    assert export["train_on"] == "mono" and export["train_bytes"] == 1000
    assert export["training"]["languages"][0]["budget"] == 500
    assert "Removed 2 cached chunk counts" in invoke(db, "sources", "clear-cache").output
    assert invoke(db, "sources", "remove", "mono").exit_code == 0
    bad = invoke(db, "run", "--vocab", "300", "--train-on", "mono", "--no-report")
    assert bad.exit_code == 1 and "no training source named 'mono'" in bad.output
    assert invoke(db, "run", "--vocab", "300", "--train-bytes", "lots", "--no-report").exit_code == 1
    assert os.path.exists(db)


@pytest.mark.slow
@pytest.mark.parametrize("pause_at, whole_entries", [
    ("analyzer.runs.counting.count_utf8", 0),  # mid-read: the first batch not yet counted
    ("analyzer.runs.chunk_cache.write_atomically", 1),  # the second language's entry next
])
def test_sigterm_while_counting_leaves_no_half_entry(tmp_path, pause_at, whole_entries):
    """Stopped at a known point of the counting pass: exit 130, the cache holds only whole
    entries (and no temporary file), and the next run counts what is missing and trains as a
    run that was never stopped."""
    from helpers import RunProcess, cli_output, invoke

    db = tmp_path / "a.db"
    cli_output(db, "ingest", tiny_corpus(tmp_path / "tiny"))
    documents = {"eng_Latn": ["a b c d", "e f g"] * 40, "fra_Latn": ["h i j", "k l"] * 40}
    (tmp_path / "mono").mkdir()
    for lang, texts in documents.items():
        write_documents(tmp_path / "mono" / lang, texts, "text", "gzip")
    cli_output(db, "sources", "add", "mono", tmp_path / "mono")
    go = tmp_path / "go"
    os.mkfifo(go)
    name = pause_at.rpartition(".")[2]
    run = RunProcess("run", "--train-on", "mono", "--vocab", "300", "--pretokenize", "words",
                     "--jobs", "1", "--no-report", "--db", str(db),
                     env={"ANALYZER_TEST_PAUSE_AT": f"{pause_at}:{go}"})
    for _ in range(whole_entries):  # let this many entries be written whole
        run.wait_for(f"analyzer-test: paused before {name}")
        go.write_text("go\n")
    run.wait_for(f"analyzer-test: paused before {name}")
    os.kill(run.pid, signal.SIGTERM)
    code, _, stderr = run.finish()
    assert code == 130, stderr
    cache = tmp_path / "a.db.chunks"
    left = sorted(p.name for p in cache.iterdir() if p.name != IN_USE) if cache.is_dir() else []
    assert len(left) == whole_entries and all(p.endswith(".arrow") for p in left), left
    interrupted = cli_output(db, "runs")
    assert "interrupted" in interrupted
    again = invoke(db, "run", "--train-on", "mono", "--vocab", "300", "--pretokenize", "words",
                   "--jobs", "1", "--no-report")
    assert again.exit_code == 0, again.output
    assert ("counted before" in again.stderr) == bool(whole_entries)
    cli_output(db, "run", "--train-on", "mono", "--vocab", "300", "--pretokenize", "words",
               "--jobs", "1", "--no-report", "--no-cache")
    database = open_db(db)
    assert load_merges(database, 2, "shared", "words") == load_merges(database, 3, "shared", "words")


@pytest.mark.slow
@pytest.mark.cluster
def test_a_dask_worker_that_cannot_read_a_file_fails_the_run_naming_it_and_itself(tmp_path):
    """The file changed after it was registered, though its size and time did not (so only
    reading it finds out): a worker's read fails, and the run says which file, on which
    worker, and that it is not the file registered (its SHA-256)."""
    pytest.importorskip("distributed")
    db = open_db(tmp_path / "a.db")
    save_corpus(db, read_corpus(tiny_corpus(tmp_path / "tiny")), "tiny")
    make_source(db, tmp_path / "mono", {"eng_Latn": [["a b"] * 20, ["c d"] * 20],
                                        "fra_Latn": [["e f"] * 20]}, [("text", None)])
    target = tmp_path / "mono" / "eng_Latn" / "001.txt"
    before = target.stat()
    target.write_bytes(b"\xff" * before.st_size)
    os.utime(target, ns=(before.st_atime_ns, before.st_mtime_ns))
    with pytest.raises(RunError) as raised:
        execute_run(db, RunSettings(sizes=[260], pretokenizers=["words"], train_on="mono",
                                    executor="dask", jobs=2, chunk_cache=False))
    message = str(raised.value)
    assert str(target) in message and "Dask worker tcp://" in message, message
    assert "is not the file registered" in message


@pytest.mark.slow
@pytest.mark.cluster
def test_the_cluster_lets_go_of_each_language_s_counters_once_the_client_has_them(
        tmp_path, monkeypatch):
    """The counting pass fetches each language's merged counters in turn: the future is
    released as soon as they are here, so the workers never end holding every language's
    counters at once (the whole source's tables, at 100 GB more than a worker has)."""
    distributed = pytest.importorskip("distributed")
    from analyzer.runs.chunk_cache import ChunkCache
    from analyzer.runs.cluster import connect
    from analyzer.runs.execute import run_splitters

    db = open_db(tmp_path / "a.db")
    save_corpus(db, read_corpus(tiny_corpus(tmp_path / "tiny")), "tiny")
    make_source(db, tmp_path / "mono", {"eng_Latn": [["a b"] * 20, ["c d"] * 20, ["e"] * 20],
                                        "fra_Latn": [["e f"] * 20, ["g"] * 20]},
                [("text", None)])
    released: list[str] = []
    release = distributed.Future.release

    def recorded(future):
        if not future._cleared:
            released.append(future.key)
        release(future)
    monkeypatch.setattr(distributed.Future, "release", recorded)
    resolved = resolve(db, RunSettings(sizes=[260], pretokenizers=["words"], train_on="mono"))
    assert resolved.source is not None and len(resolved.source.languages) == 2
    seen: list[int] = []  # how many futures were released when each language's text was done
    with connect(None, workers=2) as executor:
        tables, _ = executor.count(resolved.source, run_splitters(resolved),
                                   ChunkCache(tmp_path / "cache"),
                                   progress=lambda _: seen.append(len(released)))
    assert len(tables) == 2 and len(seen) == 2
    assert seen[1] == seen[0] + 1  # the first language's, before the second was fetched


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.lists(st.text("abé中 ", min_size=1, max_size=6), max_size=8), min_size=1,
                max_size=3), st.lists(st.text("ab ", max_size=5), max_size=3))
def test_chunks_laid_out_from_their_bytes_train_as_their_strings(engine, languages, dev):
    """A source's tables go to the engine as bytes (`PackedChunks.packed`, `join_packed`),
    without a str per chunk: the layout is `pack`'s, and every engine trains on it as on
    the strings, group for group."""
    from analyzer.bpe.packing import PackedChunks, join_packed, pack

    parts = []
    for chunks in languages:
        encoded = [chunk.encode() for chunk in chunks]
        offsets = list(itertools.accumulate(map(len, encoded), initial=0))
        parts.append(PackedChunks(b"".join(encoded), offsets))
    assert [list(part) for part in parts] == languages
    laid_out = join_packed([*(part.packed() for part in parts), pack(dev)])
    strings = [chunk for chunks in languages for chunk in chunks] + dev
    assert (laid_out.buffer, list(laid_out.starts)) == (pack(strings).buffer, pack(strings).starts)
    groups = [g for g, chunks in enumerate(languages) for _ in chunks] + [len(languages) - 1] * len(dev)
    weights = [1 + k % 3 for k in range(len(strings))]
    for parity in (False, True):
        assert engine.train_grouped(laid_out, groups, 300, weights=weights, parity=parity) == \
            engine.train_grouped(strings, groups, 300, weights=weights, parity=parity)


def test_training_from_tables_is_training_from_their_chunks():
    """`train_by_language` on `ChunkCounts` backed by tables (the lean path) and on the same
    chunks as lists of str: the same merges, for whom, parity-aware with dev texts too."""
    from array import array

    from analyzer.bpe import ChunkCounts, train_by_language
    from analyzer.bpe.counting import ChunkTable, PureCounter
    from analyzer.bpe.packing import PackedChunks

    rng = np.random.default_rng(11)
    tables, lists = {}, {}
    for lang in ("eng", "fra", "kor"):
        counter = PureCounter()
        counter.add(["".join(rng.choice(list("abcé한 "), rng.integers(1, 6))) for _ in range(300)])
        table = ChunkTable.of(counter)
        tables[lang] = ChunkCounts(PackedChunks(table.data, table.offsets), table.counts)
        lists[lang] = ChunkCounts(table.chunks(), array("q", table.counts))
    dev = {lang: ["abc ab", "é한"] for lang in tables}
    for options in ({}, {"parity": True, "dev": dev}, {"parity": True, "weights": {"kor": 3}}):
        lean = train_by_language(tables, 400, pretokenizer="words", **options)
        plain = train_by_language(lists, 400, pretokenizer="words", **options)
        assert lean == plain and len(lean.merges) > 20
