"""Issue 54: a training that would not fit is refused before it starts, with the figure and the
ways out (never killed halfway); a count floor (`min_chunk_count`) trains exactly on the rest of
the table, and is recorded and shown."""

from __future__ import annotations

import itertools
import json
import re
from array import array
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_sources import make_source, tiny_corpus

from analyzer import unigram
from analyzer.bpe import reference
from analyzer.bpe.counting import ChunkTable
from analyzer.corpus import read_corpus
from analyzer.runs import RunError, RunSettings, execute_run, memory
from analyzer.runs.chunk_cache import ChunkCache
from analyzer.runs.memory import MEMORY_ENV, EngineCost, TooLittleMemory, memory_limit
from analyzer.runs.plan import SourceTables, TrainingTexts
from analyzer.store import get_run, list_runs, open_db, save_corpus, vocabularies

# The count floor: exact on the rest of the table.

TABLE = st.lists(st.tuples(st.text("abé ", min_size=1, max_size=5), st.integers(1, 4)),
                 min_size=1, max_size=12, unique_by=lambda row: row[0])


def cached(cache: ChunkCache, key: str, rows: list[tuple[str, int]]) -> str:
    encoded = [chunk.encode() for chunk, _ in rows]
    table = ChunkTable(b"".join(encoded), array("q", itertools.accumulate(map(len, encoded),
                                                                          initial=0)),
                       array("q", [count for _, count in rows]), array("q", range(len(rows))))
    return str(cache.save(key, table, {"chunks": len(rows)}))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(tables=st.lists(TABLE, min_size=1, max_size=3), floor=st.integers(1, 4),
       tie_break=st.sampled_from(["lexicographic", "first"]))
def test_a_count_floor_trains_exactly_on_the_chunks_it_keeps(tmp_path_factory, tables, floor,
                                                             tie_break):
    """Trained from cached tables with `min_count` K, the merges are the literal reference's on
    the chunks counted K times or more, each as often as counted, languages in order."""
    cache = ChunkCache(tmp_path_factory.mktemp("cache"))
    languages = [f"l{index}" for index in range(len(tables))]
    paths = {(lang, "none"): cached(cache, lang, rows) for lang, rows in zip(languages, tables)}
    source = SourceTables(paths, dict.fromkeys(languages, 0), languages, floor)
    kept = [chunk for rows in tables for chunk, count in rows if count >= floor
            for _ in range(count)]
    trained = source.train_bpe(400, pretokenizer="none", min_pair_count=1, tie_break=tie_break)
    assert trained.merges == reference.train_many(kept, 400, min_pair_count=1, tie_break=tie_break)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(tables=st.lists(TABLE, min_size=1, max_size=3), floor=st.integers(1, 3))
def test_library_training_takes_the_tables_merged_packed_as_the_dict_would_be(
        tmp_path_factory, tables, floor):
    """Unigram and WordPiece train on the languages' tables merged into one packed table (no
    Python str per chunk): each distinct chunk once, in order of first appearance, its counts
    summed over the languages, the floor applied per language: what a dict made them."""
    cache = ChunkCache(tmp_path_factory.mktemp("cache"))
    languages = [f"l{index}" for index in range(len(tables))]
    paths = {(lang, "none"): cached(cache, lang, rows) for lang, rows in zip(languages, tables)}
    source = SourceTables(paths, dict.fromkeys(languages, 0), languages, floor)
    expected: dict[str, int] = {}
    for rows in tables:
        for chunk, count in rows:
            if count >= floor:
                expected[chunk] = expected.get(chunk, 0) + count
    table = source.chunk_table("none")
    assert list(table.items()) == list(expected.items())
    if expected:
        assert unigram.train(table, 260, seed_size=100) == unigram.train(expected, 260, seed_size=100)


def test_texts_give_the_library_their_chunks_packed_weights_applied():
    texts = TrainingTexts({"a": ["x y", "y"], "b": ["y", "z"]}, weights={"b": 3})
    assert list(texts.chunk_table("words").items()) == [("x", 1), (" y", 1), ("y", 4), ("z", 3)]
    assert list(texts.chunk_table("none").items()) == [("x y", 1), ("y", 4), ("z", 3)]


def source_db(tmp_path: Path):
    db = open_db(tmp_path / "a.db")
    save_corpus(db, read_corpus(tiny_corpus(tmp_path / "tiny")), "tiny")
    # word n said n % 5 + 1 times: chunks seen once, twice, ... five times
    said = [f"{stem}{n}" for n in range(120) for _ in range(n % 5 + 1)
            for stem in ["ab" if n % 2 else "ca"]]
    said = said[::2] + said[1::2]
    documents = {lang: [[" ".join(said[k:k + 10]) + suffix for k in range(0, len(said), 10)]]
                 for lang, suffix in (("eng_Latn", " the end"), ("fra_Latn", " la fin"))}
    make_source(db, tmp_path / "mono", documents, [("text", None)])
    return db


SOURCE_RUN = dict(sizes=[300], languages=["eng_Latn", "fra_Latn"], pretokenizers=["words"],
                  train_on="mono", per_language=False, jobs=1)


def test_a_count_floor_is_recorded_and_said_and_needs_a_source(tmp_path):
    db = source_db(tmp_path)
    run_id = execute_run(db, RunSettings(**SOURCE_RUN, min_chunk_count=3))
    run = get_run(db, run_id)
    assert run.min_chunk_count == 3 and run.training["min_chunk_count"] == 3
    stats = run.training["languages"][0]["chunks"]["words"]
    assert 0 < stats["kept_chunks"] < stats["chunks"] and stats["kept_bytes"] < stats["n_bytes"]
    from analyzer.runs.sample import count_floor_said

    said = count_floor_said(run.training)
    assert said is not None and said.startswith("Count floor 3: trained on the chunks seen at "
                                                "least 3 times")
    assert count_floor_said(get_run(db, execute_run(db, RunSettings(**SOURCE_RUN))).training) is None
    with pytest.raises(RunError, match="min_chunk_count is for training on a source"):
        execute_run(db, RunSettings(sizes=[300], min_chunk_count=2))


def test_the_floor_is_shown_by_show_the_report_and_export(tmp_path):
    from helpers import invoke

    db = source_db(tmp_path)
    execute_run(db, RunSettings(**SOURCE_RUN, min_chunk_count=2))
    shown = invoke(tmp_path / "a.db", "show", "1")
    assert shown.exit_code == 0 and "Count floor 2: trained on the chunks seen at least 2 times" \
        in " ".join(shown.output.split())
    export = json.loads(invoke(tmp_path / "a.db", "export", "1").stdout)
    assert export["min_chunk_count"] == 2
    assert invoke(tmp_path / "a.db", "report", "1", "--out", tmp_path / "reports").exit_code == 0
    page = next((tmp_path / "reports").glob("*.html")).read_text()
    assert "Count floor 2: trained on the chunks seen at least 2 times" in page


# What a process may have.

def fake_proc(tmp_path: Path, cgroup: str, available_kb: int | None) -> Path:
    proc = tmp_path / "proc"
    (proc / "self").mkdir(parents=True)
    (proc / "self" / "cgroup").write_text(cgroup)
    if available_kb is not None:
        (proc / "meminfo").write_text(f"MemTotal: 99999999 kB\nMemAvailable: {available_kb} kB\n")
    return proc


def test_the_least_limit_is_found_and_named(tmp_path, monkeypatch):
    monkeypatch.setattr(memory.resource, "getrlimit", lambda _: (memory.resource.RLIM_INFINITY,) * 2)
    proc = fake_proc(tmp_path, "0::/user.slice/job\n", 8_000_000)  # 8.2 GB available
    groups = tmp_path / "cgroup"
    (groups / "user.slice" / "job").mkdir(parents=True)
    (groups / "user.slice" / "job" / "memory.max").write_text("max\n")
    found = memory_limit({}, proc, groups)
    assert found is not None and found.n_bytes == 8_192_000_000 and "available" in found.what
    (groups / "user.slice" / "job" / "memory.max").write_text("4000000000\n")
    (groups / "user.slice" / "job" / "memory.current").write_text("1000000000\n")
    found = memory_limit({}, proc, groups)
    assert found is not None and found.n_bytes == 3_000_000_000 and "cgroup" in found.what
    assert memory_limit({MEMORY_ENV: "2G"}, proc, groups).what == f"{MEMORY_ENV}=2G"
    monkeypatch.setattr(memory.resource, "getrlimit", lambda _: (1_000_000_000, 1_000_000_000))
    assert "ulimit -v" in memory_limit({MEMORY_ENV: "2G"}, proc, groups).what
    v1 = fake_proc(tmp_path / "v1", "4:memory:/job\n3:cpu:/\n", None)
    (groups / "memory" / "job").mkdir(parents=True)
    (groups / "memory" / "job" / "memory.limit_in_bytes").write_text("500000000\n")
    (groups / "memory" / "job" / "memory.usage_in_bytes").write_text("100000000\n")
    assert memory_limit({}, v1, groups).n_bytes == 400_000_000
    with pytest.raises(memory.Invalid, match=f"{MEMORY_ENV}='lots': write a number of bytes"):
        memory_limit({MEMORY_ENV: "lots"}, proc, groups)


# The refusal.

def test_a_run_that_cannot_fit_is_refused_before_training_with_the_figure(tmp_path, monkeypatch):
    """Under a limit set for the test, the run is refused after counting and before any
    training: the message gives the predicted peak, the limit and what says so, and the ways
    out; the run is marked failed with nothing stored."""
    db = source_db(tmp_path)
    trained = []
    monkeypatch.setattr("analyzer.runs.execute.run_jobs",
                        lambda *args, **kwargs: trained.append(args) or [])
    monkeypatch.setenv(MEMORY_ENV, "1k")
    with pytest.raises(TooLittleMemory) as refused:
        execute_run(db, RunSettings(**SOURCE_RUN))
    message = str(refused.value)
    assert message.startswith("Training needs about ") and f"more than 1.0 kB: {MEMORY_ENV}=1k" \
        in message
    assert "Refused before training" in message
    assert f"a higher limit of your own ({MEMORY_ENV}=" in message  # the limit is the user's own
    assert "the counted chunks are cached" in message
    with pytest.raises(TooLittleMemory, match=r"nothing is lost \(with --no-cache, a rerun reads "
                       r"the text again\)"):
        execute_run(db, RunSettings(**SOURCE_RUN, chunk_cache=False))
    assert not trained
    run = list_runs(db)[-1]
    # as the user reads it on the run's page and in `analyzer runs`: no class name before it
    assert run.status == "failed" and (run.error or "").startswith("Training needs about ")
    assert not vocabularies(db, run.id)


def kept_chunks(db, floor: int) -> int:
    """The distinct chunks a run at `floor` trained on (as its record of the sample says)."""
    run = get_run(db, execute_run(db, RunSettings(**SOURCE_RUN, min_chunk_count=floor)))
    return sum(item["chunks"]["words"]["kept_chunks"] for item in run.training["languages"])


def test_the_refusal_offers_the_least_floor_that_fits_and_that_run_reads_no_text(
        tmp_path, monkeypatch):
    """With a need that is the distinct chunks' (a million bytes each, for the test) and room
    for those seen 3 times but not 2, the refusal offers --min-chunk-count 3 with its figure;
    that run reads its counts from the cache and says what it needs before training."""
    db = source_db(tmp_path)
    chunks = {floor: kept_chunks(db, floor) for floor in (1, 2, 3)}
    assert chunks[1] > chunks[2] > chunks[3] > 0
    monkeypatch.setattr(memory, "BPE_COST", EngineCost(per_byte=0.0, per_chunk=1e6, fixed=0))
    monkeypatch.setenv(MEMORY_ENV, str(chunks[3] * 1_000_000 + 1))
    with pytest.raises(TooLittleMemory) as refused:
        execute_run(db, RunSettings(**SOURCE_RUN))
    assert f"--min-chunk-count 3: about {memory.byte_size(chunks[3] * 1e6)}" in str(refused.value)
    said: list[str] = []
    execute_run(db, RunSettings(**SOURCE_RUN, min_chunk_count=3), stage=said.append)
    assert any("counted before" in line for line in said), said
    assert any(line.startswith("training needs about") and f"{chunks[3]:,} distinct chunks" in line
               for line in said), said


@pytest.mark.parametrize("cgroup", ["garbage\n", "0::/\n\n", "\n0::/x\n"])
def test_odd_cgroup_and_meminfo_files_are_no_limits_and_no_crash(tmp_path, monkeypatch, cgroup):
    """A blank or malformed line of /proc/self/cgroup, a negative memory.max or MemAvailable:
    not limits (a negative one would refuse every run), and never a ValueError."""
    monkeypatch.setattr(memory.resource, "getrlimit", lambda _: (memory.resource.RLIM_INFINITY,) * 2)
    proc = fake_proc(tmp_path, cgroup, -3)
    (tmp_path / "cg" / "x").mkdir(parents=True)
    (tmp_path / "cg" / "x" / "memory.max").write_text("-5\n")
    assert memory_limit({}, proc, tmp_path / "cg") is None


@pytest.mark.parametrize("extra", [{}, {"per_language": True}, {"parity": True}])
def test_a_floor_that_keeps_no_chunk_of_a_language_is_refused_not_trained_on_bytes(tmp_path,
                                                                                  extra):
    """Before: the run completed with vocabularies of no merges (trained on 0 bytes)."""
    db = source_db(tmp_path)
    with pytest.raises(RunError, match=r"min_chunk_count 1,000,000 keeps none of the chunks of "
                                       r"eng_Latn \[words\], fra_Latn \[words\]"):
        execute_run(db, RunSettings(**{**SOURCE_RUN, **extra}, min_chunk_count=1_000_000))
    assert list_runs(db)[-1].status == "failed"


def test_a_bad_memory_setting_is_refused_before_the_run_is_recorded(tmp_path, monkeypatch):
    """Before: refused only after the counting pass (hours on a large source), a failed run."""
    db = source_db(tmp_path)
    monkeypatch.setenv(MEMORY_ENV, "lots")
    with pytest.raises(memory.Invalid, match=f"{MEMORY_ENV}='lots'"):
        execute_run(db, RunSettings(**SOURCE_RUN))
    assert list_runs(db) == []


def test_under_a_run_s_own_memory_no_smaller_sample_is_offered(tmp_path, monkeypatch):
    """Below `BPE_COST.least` (what any run takes) a smaller sample would be refused again."""
    db = source_db(tmp_path)
    monkeypatch.setenv(MEMORY_ENV, "700M")
    with pytest.raises(TooLittleMemory) as refused:
        execute_run(db, RunSettings(**SOURCE_RUN))
    assert "--train-bytes" not in str(refused.value) and "--jobs 1" not in str(refused.value)
    assert "about 800.0 MB at its peak (what any run takes, whatever it trains;" \
        in str(refused.value)
    assert f"{MEMORY_ENV}=920.0MB or more" in str(refused.value)


def refusal(db, monkeypatch, cost: EngineCost, limit: float, **settings) -> str:
    monkeypatch.setattr(memory, "BPE_COST", cost)
    monkeypatch.setenv(MEMORY_ENV, str(int(limit)))
    with pytest.raises(TooLittleMemory) as refused:
        execute_run(db, RunSettings(**{**SOURCE_RUN, **settings}))
    return str(refused.value)


def test_one_job_at_a_time_is_offered_only_when_it_fits_and_then_runs(tmp_path, monkeypatch):
    """Before: --jobs 1 was offered whenever it needed less than the jobs together, even when
    one job alone was more than the limit (a rerun that followed it was refused again)."""
    db = source_db(tmp_path)
    cost = EngineCost(per_byte=0.0, per_chunk=1e6, fixed=0)
    shared = kept_chunks(db, 1) * 1e6  # the largest job: the shared vocabulary, every chunk
    two_jobs = dict(per_language=True, jobs=2)
    assert "--jobs 1" not in refusal(db, monkeypatch, cost, shared - 1, **two_jobs)
    assert f"--jobs 1: about {memory.byte_size(shared)}" in refusal(db, monkeypatch, cost,
                                                                     shared + 1, **two_jobs)
    execute_run(db, RunSettings(**{**SOURCE_RUN, **two_jobs, "jobs": 1}))  # as offered: it runs


def test_a_smaller_sample_is_not_offered_when_the_jobs_fixed_parts_alone_do_not_fit(
        tmp_path, monkeypatch):
    """Each job at once is a process with its own fixed part; before, the sample's share was
    reckoned with one fixed part for all (a sample offered that was refused again)."""
    db = source_db(tmp_path)
    cost = EngineCost(per_byte=0.0, per_chunk=1e3, fixed=10**9)
    said = refusal(db, monkeypatch, cost, 2e9 - 1, per_language=True, jobs=2)
    assert "--train-bytes" not in said and "--jobs 1" in said


def test_on_dask_a_job_must_fit_the_smallest_worker():
    """The cluster's limit is its smallest worker's memory_limit, and a worker runs as many
    jobs at once as it has threads; a cluster that says no limit gives none."""
    from analyzer.runs.cluster import DaskExecutor

    class Client:
        def __init__(self, workers):
            self.workers = workers

        def scheduler_info(self):
            return {"workers": self.workers}

    limit, threads = DaskExecutor(Client({
        "tcp://a": {"memory_limit": 8_000_000_000, "nthreads": 1},
        "tcp://b": {"memory_limit": 4_000_000_000, "nthreads": 2}})).memory()
    assert limit is not None and limit.n_bytes == 4_000_000_000 and "Dask worker" in limit.what
    assert threads == 2
    assert DaskExecutor(Client({"tcp://a": {"memory_limit": 0, "nthreads": 1}})).memory() == (None, 1)


def test_the_count_floor_is_called_as_the_report_calls_it_and_its_help_says_what_a_chunk_is():
    """The run form's label and `--min-chunk-count`'s help (both from the setting's definition).
    Before: labelled "Chunks seen at least", and likened to Hugging Face's min_frequency, which
    is a floor on the pairs merged (ours: min_pair_count), not on the chunks trained on."""
    info = RunSettings.__pydantic_fields__["min_chunk_count"]  # type: ignore[attr-defined]
    assert info.title == "Count floor"  # as show, export and the report say it: "Count floor 2"
    assert "the pieces the pre-tokenizer cuts" in info.description
    assert "min_frequency" not in info.description and "exactly" not in info.description


def test_training_bytes_are_taken_as_written_as_the_refusal_writes_them(tmp_path, monkeypatch):
    """The service's form and API take `train_bytes` as the command line does ("19.1MB", the
    way a refusal writes its smaller sample); before, the page refused it: "Input should be a
    valid integer"."""
    from analyzer.settings import SettingsError

    assert RunSettings(train_bytes="19.1MB").train_bytes == 19_100_000
    assert RunSettings(train_bytes="2Gi").train_bytes == 2 * 1024**3
    assert RunSettings(train_bytes=5).train_bytes == 5
    with pytest.raises(SettingsError, match=r"^train_bytes: write a number of bytes, e\.g\. 2G, "
                                            r"500M or 1000000 \(not 'lots'\)$"):
        RunSettings(train_bytes="lots")
    with pytest.raises(SettingsError, match="train_bytes must be from 1 to"):
        RunSettings(train_bytes="9e99G")
    db = source_db(tmp_path)
    said = refusal(db, monkeypatch, EngineCost(per_byte=0.0, per_chunk=1e6, fixed=0),
                   kept_chunks(db, 1) * 1e6 - 1)
    written = re.search(r"--train-bytes (\S+) or less, a sample counted afresh, so that run reads "
                        r"the text again", said)
    assert written and RunSettings(train_bytes=written.group(1)).train_bytes


def test_on_dask_one_job_at_a_time_is_a_worker_of_one_thread_not_jobs_1(tmp_path, monkeypatch):
    """On a cluster a worker runs as many jobs at once as it has threads, which --jobs does not
    change (it sizes a local cluster only): before, the refusal offered --jobs 1 there, and a
    rerun that followed it was refused again."""
    db = source_db(tmp_path)
    plans = []
    monkeypatch.setattr("analyzer.runs.execute.check_memory",
                        lambda found, *args, **kwargs: plans.extend(found))
    execute_run(db, RunSettings(**{**SOURCE_RUN, "per_language": True}))
    monkeypatch.setattr(memory, "BPE_COST", EngineCost(per_byte=0.0, per_chunk=1e6, fixed=0))
    one = memory.at_once(memory.predict_jobs(plans), 1)
    limit = memory.MemoryLimit(one, "the smallest Dask worker's memory limit")
    with pytest.raises(TooLittleMemory) as refused:
        memory.check_memory(plans, 2, limit, cluster=True)
    assert "--jobs 1" not in str(refused.value)
    assert f"workers of one thread, dask worker --nthreads 1: about {memory.byte_size(one)}" \
        in str(refused.value)
    with pytest.raises(TooLittleMemory, match="--jobs 1: about"):
        memory.check_memory(plans, 2, limit)
