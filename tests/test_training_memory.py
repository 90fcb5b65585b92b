"""Issue 54: a training that would not fit is refused before it starts, with the figure and the
ways out (never killed halfway); a count floor (`min_chunk_count`) trains exactly on the rest of
the table, and is recorded and shown."""

from __future__ import annotations

import itertools
import json
import re
from array import array
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_sources import make_source, tiny_corpus

from analyzer import headroom, unigram
from analyzer.bpe import reference
from analyzer.bpe.counting import ChunkTable
from analyzer.corpus import read_corpus
from analyzer.headroom import MEMORY_ENV, Headroom, Limit
from analyzer.runs import RunError, RunSettings, costs, execute_run, memory
from analyzer.runs.chunk_cache import ChunkCache
from analyzer.runs.costs import EngineCost
from analyzer.runs.memory import TooLittleMemory
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


# What a process may have (`analyzer.headroom`).

def fake_proc(tmp_path: Path, cgroup: str, available_kb: int | None, mountinfo: str | None = None
              ) -> Path:
    proc = tmp_path / "proc"
    (proc / "self").mkdir(parents=True)
    (proc / "self" / "cgroup").write_text(cgroup)
    if mountinfo is not None:
        (proc / "self" / "mountinfo").write_text(mountinfo)
    if available_kb is not None:
        (proc / "meminfo").write_text(f"MemTotal: 99999999 kB\nMemAvailable: {available_kb} kB\n")
    return proc


@pytest.fixture
def unlimited(monkeypatch):
    """No `ulimit -v`, and this process holding and mapping nothing (the figures a test sets
    are the only ones)."""
    monkeypatch.setattr(headroom.resource, "getrlimit",
                        lambda which: (headroom.resource.RLIM_INFINITY,) * 2)
    monkeypatch.setattr(headroom, "own_usage", lambda: (0, 0))


def group(root: Path, path: str, limit: str | None, current: int | None = None,
          inactive: int | None = None, v1: bool = False) -> None:
    folder = root.joinpath(*path.strip("/").split("/"))
    folder.mkdir(parents=True, exist_ok=True)
    if limit is not None:
        (folder / ("memory.limit_in_bytes" if v1 else "memory.max")).write_text(limit + "\n")
    if current is not None:
        (folder / ("memory.usage_in_bytes" if v1 else "memory.current")).write_text(f"{current}\n")
    if inactive is not None:
        (folder / "memory.stat").write_text(
            f"anon 1\n{'total_inactive_file' if v1 else 'inactive_file'} {inactive}\n")


def test_every_limit_is_found_and_named(tmp_path, monkeypatch, unlimited):
    """Each limit, as the total it leaves the run: MemAvailable, ANALYZER_MEMORY, and every
    cgroup from the process's own to its ancestors (before, only its own was read: a limit on
    a parent, a systemd slice or a Kubernetes pod, was missed), its reclaimable page cache not
    counted as used; `ulimit -v` apart, as an address-space limit."""
    proc = fake_proc(tmp_path, "0::/user.slice/job\n", 8_000_000)  # 8.2 GB available
    groups = tmp_path / "cgroup"
    group(groups, "user.slice/job", "max")
    found = headroom.headroom({}, proc, groups)
    assert [(limit.total, limit.what) for limit in found.limits] == [
        (8_192_000_000, "the memory this machine has available")]
    group(groups, "user.slice/job", "4000000000", 1_500_000_000, inactive=500_000_000)
    group(groups, "user.slice", "3000000000", 2_000_000_000)  # the slice: a tighter limit
    found = headroom.headroom({MEMORY_ENV: "5G"}, proc, groups)
    assert sorted((limit.total, limit.what) for limit in found.resident) == [
        (1_000_000_000, "the memory limit of cgroup /user.slice (3.0 GB, 2.0 GB in use)"),
        (3_000_000_000, "the memory limit of cgroup /user.slice/job (4.0 GB, 1.0 GB in use)"),
        (5_000_000_000, f"{MEMORY_ENV}=5G"),
        (8_192_000_000, "the memory this machine has available")]
    assert found.address is None
    monkeypatch.setattr(headroom.resource, "getrlimit", lambda _: (1_000_000_000, 1_000_000_000))
    found = headroom.headroom({}, proc, groups)
    assert found.address == Limit(1_000_000_000, "the address-space limit (ulimit -v 976562)",
                                  address=True)
    assert all(not limit.address for limit in found.resident)
    v1 = fake_proc(tmp_path / "v1", "4:memory:/pod/job\n3:cpu:/\n", None)
    group(groups / "memory", "pod/job", "9223372036854771712", 1, v1=True)  # v1's "no limit"
    group(groups / "memory", "pod", "500000000", 100_000_000, inactive=50_000_000, v1=True)
    assert [(limit.total, limit.what) for limit in headroom.headroom({}, v1, groups).resident] \
        == [(450_000_000, "the memory limit of cgroup /pod (500.0 MB, 50.0 MB in use)")]
    with pytest.raises(headroom.Invalid, match=f"{MEMORY_ENV}='lots': write a number of bytes"):
        headroom.headroom({MEMORY_ENV: "lots"}, proc, groups)


def test_cgroups_are_found_where_mountinfo_says_inside_a_namespace_too(tmp_path, unlimited):
    """v1 and v2 mounted elsewhere (mountinfo), a hybrid machine, and a container whose cgroup
    namespace shows its own group as the mount's root: the limit is on the mount itself."""
    mounts = tmp_path / "mnt"
    mountinfo = (f"30 25 0:26 / {mounts}/unified rw - cgroup2 cgroup2 rw\n"
                 f"31 25 0:27 / {mounts}/mem rw,relatime - cgroup cgroup rw,memory\n"
                 f"32 25 0:28 / {mounts}/cpu rw - cgroup cgroup rw,cpu\n")
    proc = fake_proc(tmp_path, "4:memory:/a/b\n0::/c\n", None, mountinfo)
    group(mounts / "mem", "a", "700000000", 200_000_000, v1=True)
    group(mounts / "unified", "c", "900000000", 100_000_000)
    assert sorted(limit.total for limit in headroom.headroom({}, proc).limits) \
        == [500_000_000, 800_000_000]
    inside = fake_proc(tmp_path / "ns", "0::/\n", None,
                       f"40 25 0:26 /kubepods/pod1 {mounts}/ns rw - cgroup2 cgroup2 rw\n")
    group(mounts, "ns", "600000000", 100_000_000)
    assert [limit.what for limit in headroom.headroom({}, inside).limits] \
        == ["the memory limit of cgroup / (600.0 MB, 100.0 MB in use)"]


@pytest.mark.parametrize("cgroup", ["garbage\n", "0::/\n\n", "\n0::/x\n"])
def test_odd_cgroup_and_meminfo_files_are_no_limits_and_no_crash(tmp_path, unlimited, cgroup):
    """A blank or malformed line of /proc/self/cgroup, a negative memory.max or MemAvailable:
    not limits (a negative one would refuse every run), and never a ValueError."""
    proc = fake_proc(tmp_path, cgroup, -3)
    group(tmp_path / "cg", "x", "-5")
    (tmp_path / "cg" / "x" / "memory.stat").write_text("inactive_file lots\n")
    assert headroom.headroom({}, proc, tmp_path / "cg").limits == []


# The refusal.

def test_a_run_that_cannot_fit_is_refused_before_training_with_the_figure(tmp_path, monkeypatch):
    """Under a limit set for the test, the run is refused after counting and before any
    training: the message gives the predicted peak, the limit and what says so, and the ways
    out; the run is marked failed with nothing stored."""
    db = source_db(tmp_path)
    trained = []
    monkeypatch.setattr("analyzer.runs.executor.run_jobs",
                        lambda *args, **kwargs: trained.append(args) or [])
    monkeypatch.setenv(MEMORY_ENV, "1k")
    with pytest.raises(TooLittleMemory) as refused:
        execute_run(db, RunSettings(**SOURCE_RUN))
    message = " ".join(str(refused.value).split())
    assert message.startswith("Training needs about ") and \
        f"more than the 1.0 kB that {MEMORY_ENV}=1k leaves this run" in message
    assert "Refused before training" in message
    assert f"a higher limit of your own ({MEMORY_ENV}=" in message  # the limit is the user's own
    assert "the counted chunks are cached" in message
    with pytest.raises(TooLittleMemory) as refused:
        execute_run(db, RunSettings(**SOURCE_RUN, chunk_cache=False))
    assert "nothing is lost (with --no-cache, a rerun reads the text again)" \
        in " ".join(str(refused.value).split())
    assert not trained
    run = list_runs(db)[-1]
    # as the user reads it on the run's page and in `analyzer runs`: no class name before it
    assert run.status == "failed" and (run.error or "").startswith("Training needs about ")
    assert not vocabularies(db, run.id)


def kept_chunks(db, floor: int, **settings) -> int:
    """The distinct chunks a run at `floor` trained on (as its record of the sample says)."""
    run = get_run(db, execute_run(db, RunSettings(**{**SOURCE_RUN, **settings},
                                                  min_chunk_count=floor)))
    return sum(item["chunks"]["words"]["kept_chunks"] for item in run.training["languages"])


PER_CHUNK = EngineCost("a million bytes a chunk", per_byte=0.0, per_chunk=1e6, fixed=0,
                       address_per_byte=0.0, address_per_chunk=1e6, address_fixed=0)
"""A cost the tests set: the need is the distinct chunks', a million bytes each."""


def refusal(db, monkeypatch, limit: float, cost: EngineCost = PER_CHUNK, kind: str = "env",
            **settings) -> str:
    """The refusal of a run under a limit of `limit` bytes, every engine at `cost`, this process
    holding and mapping nothing. The limit is `ANALYZER_MEMORY` ("env"), a parent cgroup's
    ("cgroup": its files written beside `db`, the machine's own cgroups and MemAvailable not
    read) or `ulimit -v` ("address": the need in address space alone)."""
    if kind == "address":
        cost = replace(cost, per_byte=0.0, per_chunk=0.0, fixed=0)
    for name in ("TABLES", "LISTED", "CONTINUED", "EXTENDED", "UNIGRAM", "WORDPIECE"):
        monkeypatch.setattr(costs, name, cost)
    # Reading a table whole costs nothing here: the need is the kept chunks' alone (else a
    # floor that keeps nothing would not fit for what it reads, and the test would not see it).
    monkeypatch.setattr(costs, "READ", replace(PER_CHUNK, per_chunk=0.0, address_per_chunk=0.0))
    # Nor does counting a sample afresh leave it holding anything (`costs.COUNTED`).
    monkeypatch.setattr(costs, "COUNTED", replace(PER_CHUNK, per_chunk=0.0, address_per_chunk=0.0))
    monkeypatch.setattr(headroom, "own_usage", lambda: (0, 0))
    monkeypatch.delenv(MEMORY_ENV, raising=False)
    if kind == "env":
        monkeypatch.setenv(MEMORY_ENV, str(int(limit)))
    elif kind == "cgroup":
        root = Path(db.path).parent / "limits"
        if not root.exists():
            proc = fake_proc(root, "0::/test.slice/run\n", None)
            group(root / "cgroup", "test.slice/run", "max")
            monkeypatch.setattr(headroom, "PROC", proc)
            monkeypatch.setattr(headroom, "CGROUPS", root / "cgroup")
        group(root / "cgroup", "test.slice", str(int(limit)), 0)  # the parent's limit
    else:
        monkeypatch.setattr(headroom.resource, "getrlimit",
                            lambda which: (int(limit), int(limit))
                            if which == headroom.resource.RLIMIT_AS
                            else (headroom.resource.RLIM_INFINITY,) * 2)
    with pytest.raises(TooLittleMemory) as refused:
        execute_run(db, RunSettings(**{**SOURCE_RUN, **settings}))
    return str(refused.value)


def room_for(need: float) -> float:
    """The least limit under which a way out that needs `need` is offered: it must fit with
    `memory.MARGIN` to spare."""
    return need / (1 - memory.MARGIN) + 1


def ways_out(message: str) -> list[str]:
    """The ways out a refusal lists, each on one line again."""
    found: list[str] = []
    for line in message.split("Ways out:\n", 1)[1].split("\n"):
        if line.startswith("    "):
            found[-1] += " " + line.strip()
        else:
            found.append(line.strip())
    return found


def test_the_refusal_offers_the_least_floor_that_fits_and_that_run_reads_no_text(
        tmp_path, monkeypatch):
    """With a need that is the distinct chunks' (a million bytes each, for the test) and room
    for those seen 3 times but not 2, the refusal offers --min-chunk-count 3 with its figure;
    that run reads its counts from the cache and says what it needs before training."""
    db = source_db(tmp_path)
    chunks = {floor: kept_chunks(db, floor) for floor in (1, 2, 3)}
    assert chunks[1] > chunks[2] > chunks[3] > 0
    said = refusal(db, monkeypatch, room_for(chunks[3] * 1_000_000))
    assert f"min_chunk_count 3: about {memory.byte_size(chunks[3] * 1e6)}" in ways_out(said)[0]
    stages: list[str] = []
    execute_run(db, RunSettings(**SOURCE_RUN, min_chunk_count=3), stage=stages.append)
    assert any("counted before" in line for line in stages), stages
    assert any(line.startswith("training needs about") and f"{chunks[3]:,} distinct chunks" in line
               for line in stages), stages


def test_a_floor_that_keeps_no_chunk_is_never_offered(tmp_path, monkeypatch):
    """Issue 68: under ANALYZER_MEMORY=1G the only floor offered was 100, which keeps no chunk
    (and is refused); now a floor is offered only where every table keeps a chunk."""
    db = source_db(tmp_path)  # no chunk is seen more than 5 times
    whole = kept_chunks(db, 1) * 1e6
    said = refusal(db, monkeypatch, 1)  # nothing fits but a floor that keeps nothing
    assert "min_chunk_count" not in "\n".join(ways_out(said))
    assert ways_out(said) == [f"a higher limit of your own ({MEMORY_ENV}="
                              f"{memory.byte_size(whole * 1.15).replace(' ', '')} or more), on a "
                              "machine that has it"]


@pytest.mark.slow
def test_a_floor_with_one_job_at_a_time_is_offered_when_neither_alone_fits(tmp_path, monkeypatch):
    """Issue 68: floors 2 and 20 were refused again and the combination that fits
    (--min-chunk-count 2 --jobs 1) was never offered. Three jobs (shared, two languages' own),
    two at a time: room for the shared one at floor 2 alone, not for two at once, nor for the
    shared one at floor 1."""
    db = source_db(tmp_path)
    two = dict(per_language=True, jobs=2)
    shared = {floor: kept_chunks(db, floor, **two) for floor in (1, 2)}
    said = refusal(db, monkeypatch, room_for(shared[2] * 1e6), **two)
    assert (f"min_chunk_count 2 with jobs 1: about {memory.byte_size(shared[2] * 1e6)} (the "
            "chunks seen at least 2 times, one job at a time)") in ways_out(said), said
    monkeypatch.setenv(MEMORY_ENV, str(int(room_for(shared[2] * 1e6))))
    execute_run(db, RunSettings(**{**SOURCE_RUN, **two, "jobs": 1}, min_chunk_count=2))  # it runs


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["env", "cgroup", "address"])
def test_every_way_out_offered_fits(tmp_path, monkeypatch, kind):
    """Whatever the limit, and whatever kind (ANALYZER_MEMORY, a parent cgroup's, ulimit -v),
    each way out a refusal offers (a floor, one job at a time, both, a smaller sample) is a run
    that is not refused again under it (the sample's is an estimate from the counts: it fits
    the figure it is offered with)."""
    db = source_db(tmp_path)
    three = dict(per_language=True, jobs=3)
    whole = kept_chunks(db, 1, **three) * 1e6
    if kind == "address":  # one process at a time: the largest job's, not all three's
        whole = kept_chunks(db, 1) * 1e6 / 2
    offered = set()
    for share in (0.3, 0.5, 0.7, 0.9, 1.2, 1.6, 1.9):  # all three at once: 2.0
        for way in ways_out(refusal(db, monkeypatch, whole * share, kind=kind, **three))[:-1]:
            options = dict(three)
            if (found := re.search(r"min_chunk_count (\d+)", way)):
                options["min_chunk_count"] = int(found.group(1))
            if "jobs 1" in way:
                options["jobs"] = 1
            if (found := re.search(r"train_bytes ([^\s:]+)", way)):
                options["train_bytes"] = found.group(1)
            offered.add(tuple(sorted(options.items())))
            said: list[str] = []
            execute_run(db, RunSettings(**{**SOURCE_RUN, **options}), stage=said.append)
    kinds = {tuple(sorted(set(dict(option)) - set(three))) for option in offered}
    # One job at a time changes no process's address space: never offered under ulimit -v.
    expected = {("min_chunk_count",), ("train_bytes",)} | (set() if kind == "address" else {()})
    assert expected <= kinds, offered
    assert kind != "address" or all(dict(option)["jobs"] == 3 for option in offered), offered


def test_under_what_the_run_holds_already_only_more_memory_is_offered(tmp_path, monkeypatch):
    """When what the run holds before training is more than the limit, no floor, sample or
    --jobs 1 can fit, and only more memory is offered (before: a sample was offered that a
    rerun refused again)."""
    db = source_db(tmp_path)
    monkeypatch.setenv(MEMORY_ENV, "1M")
    with pytest.raises(TooLittleMemory) as refused:
        execute_run(db, RunSettings(**{**SOURCE_RUN, "per_language": True, "jobs": 2}))
    assert len(ways_out(str(refused.value))) == 1
    assert "this run holds" in " ".join(str(refused.value).split())


def test_one_job_at_a_time_is_offered_only_when_it_fits_and_then_runs(tmp_path, monkeypatch):
    """Before: --jobs 1 was offered whenever it needed less than the jobs together, even when
    one job alone was more than the limit (a rerun that followed it was refused again)."""
    db = source_db(tmp_path)
    two = dict(per_language=True, jobs=2)
    shared = kept_chunks(db, 1, **two) * 1e6  # the largest job: the shared vocabulary
    assert not any(way.startswith("jobs 1") for way in ways_out(refusal(db, monkeypatch,
                                                                        shared - 1, **two)))
    assert f"jobs 1: about {memory.byte_size(shared)}" in refusal(db, monkeypatch,
                                                                   room_for(shared), **two)
    execute_run(db, RunSettings(**{**SOURCE_RUN, **two, "jobs": 1}))  # as offered: it runs


def test_address_space_is_compared_with_ulimit_v_and_what_is_mapped_already(tmp_path,
                                                                            monkeypatch):
    """Issue 68: under `ulimit -v 1300000` the check compared predicted resident memory with
    the address-space limit, which a process with numpy and pyarrow loaded passes long before
    (then MemoryError, exit 70). Now the address need is what the process maps already plus
    what the largest job adds, against `ulimit -v` alone; one job at a time does not shrink it
    (each process has its own), so it is not offered."""
    db = source_db(tmp_path)
    shared = kept_chunks(db, 1) * 1e6
    for name in ("TABLES", "LISTED"):
        monkeypatch.setattr(costs, name, replace(PER_CHUNK, per_chunk=0.0))
    mapped = 3_000_000_000
    monkeypatch.setattr(headroom, "own_usage", lambda: (100, mapped))
    monkeypatch.setattr(headroom.resource, "getrlimit",
                        lambda which: (mapped + 1000, mapped + 1000)
                        if which == headroom.resource.RLIMIT_AS
                        else (headroom.resource.RLIM_INFINITY,) * 2)
    with pytest.raises(TooLittleMemory) as refused:
        execute_run(db, RunSettings(**{**SOURCE_RUN, "per_language": True, "jobs": 2}))
    said = " ".join(str(refused.value).split())
    assert f"of address space in one process, more than the {memory.byte_size(mapped + 1000)} " \
        "that the address-space limit (ulimit -v 2929688) allows" in said
    assert f"adds {memory.byte_size(shared)} to the {memory.byte_size(mapped)} this process maps " \
        "already" in said
    assert "jobs 1" not in said and "a higher address-space limit (ulimit -v" in said


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
    assert limit is not None and limit.total == 4_000_000_000 and "Dask worker" in limit.what
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
    said = refusal(db, monkeypatch, kept_chunks(db, 1) * 1e6 * 0.8)
    written = re.search(r"train_bytes (\S+): about", " ".join(said.split()))
    assert written and RunSettings(train_bytes=written.group(1)).train_bytes


def test_on_dask_one_job_at_a_time_is_a_worker_of_one_thread_not_jobs_1(tmp_path, monkeypatch):
    """On a cluster a worker runs as many jobs at once as it has threads, which --jobs does not
    change (it sizes a local cluster only): before, the refusal offered --jobs 1 there, and a
    rerun that followed it was refused again."""
    db = source_db(tmp_path)
    plans = []
    monkeypatch.setattr("analyzer.runs.executor.LocalExecutor.check_memory",
                        lambda self, found, *args, **kwargs: plans.extend(found))
    execute_run(db, RunSettings(**{**SOURCE_RUN, "per_language": True}))
    monkeypatch.setattr(costs, "TABLES", PER_CHUNK)
    one = memory.needed(memory.predict_jobs(plans), 1, 0, 0).resident
    room = Headroom(0, 0, [Limit(int(room_for(one)), "the smallest Dask worker's memory limit")])
    with pytest.raises(TooLittleMemory) as refused:
        memory.check_memory(plans, 2, room, cluster=True)
    said = " ".join(str(refused.value).split())
    assert "jobs 1" not in said
    assert f"workers of one thread (dask worker --nthreads 1): about {memory.byte_size(one)}" \
        in said
    with pytest.raises(TooLittleMemory, match="jobs 1: about"):
        memory.check_memory(plans, 2, room)


# Every kind of job predicted (issue 73, item 4), the refusal's width, and memory that runs out
# where no prediction reached.

@pytest.mark.slow
def test_every_kind_of_job_is_predicted_by_its_own_engine(tmp_path):
    """Parity, SuperBPE (both stages, the second on its own pre-tokenizer's tables), Unigram,
    WordPiece and an extension each get the cost of the engine that trains them (before, only
    BPE jobs were predicted: SuperBPE and parity as plain BPE, the others not at all)."""
    from analyzer.runs.builders import local_costs, make_plans
    from analyzer.runs.resolution import resolve

    db = source_db(tmp_path)
    plans: list = []
    run = resolve(db, RunSettings(**{**SOURCE_RUN, "sizes": [600]}, parity=True, superbpe=[280],
                                  algorithms=["unigram", "wordpiece"], extend=["o200k_base"],
                                  added=[10]))
    source_run = execute_run(db, RunSettings(**SOURCE_RUN))  # the tables, counted and cached
    assert source_run
    from analyzer.runs.builders import run_splitters
    from analyzer.runs.counting import count_locally

    tables, taken = count_locally(run.source, run_splitters(run),
                                  ChunkCache.beside(tmp_path / "a.db"), lambda n: None,
                                  lambda said: None)
    source = SourceTables({key: str(path) for key, path in tables.items()},
                          {lang: taken[lang]["bytes"] for lang in run.source.languages},
                          list(run.source.languages))
    plans = make_plans(run, source)
    jobs = memory.predict_jobs(plans, source, local=local_costs(run))
    engines = {job.label.split(" [")[0].split(" size")[0]: [stage[0] for stage in job.stages]
               for job in jobs}
    assert engines == {
        "shared": [costs.TABLES.name], "parity": [costs.LISTED.name],
        "superbpe@280": [costs.TABLES.name, costs.CONTINUED.name],
        "unigram": [costs.UNIGRAM.name], "wordpiece": [costs.WORDPIECE.name],
        "extend:o200k_base": [costs.EXTENDED.name]}
    superbpe = next(job for job in jobs if job.label.startswith("superbpe"))
    stage_two = sum(memory.table_stats(Path(source.tables[(lang, "superbpe")])).chunks
                    for lang in source.order)
    assert superbpe.stages[1][1].chunks == stage_two
    assert [stage[2] for stage in superbpe.stages] == [280 - 256, 600 - 280]  # merges of each
    assert next(job for job in jobs if job.label.startswith("extend")).local


def test_the_refusal_fits_80_columns_where_it_is_printed(tmp_path):
    """Issue 68 (item 9): a memory refusal of ~490 characters printed as one line, by `run`
    and again by `runs`. Now its lines are at most 80 wide in both, its ways out one a line."""
    from helpers import invoke

    source_db(tmp_path)
    result = invoke(tmp_path / "a.db", "run", "--vocab", "300", "--langs", "eng_Latn,fra_Latn",
                    "--pretokenize", "words", "--train-on", "mono", "--per-language",
                    "--jobs", "2", "--no-report", env={MEMORY_ENV: "1k"})
    assert result.exit_code == 1
    error = result.output[result.output.index("Error: "):]
    assert "Ways out:\n  --min-chunk-count" in error or "Ways out:\n  a higher limit" in error
    assert max(map(len, error.splitlines())) <= 80, error
    listed = invoke(tmp_path / "a.db", "runs")
    assert "run 1 failed: Training needs about" in listed.output
    assert max(map(len, listed.output.splitlines())) <= 80, listed.output


def test_memory_that_runs_out_while_training_is_said_in_words_not_as_a_bug(tmp_path,
                                                                          monkeypatch):
    """Where no prediction reached (a limit lowered while it ran, another process's growth), a
    MemoryError or a thread that cannot start is said as memory that ran out, naming the limit,
    the run marked failed: not "This is a bug", exit 70."""
    from helpers import invoke

    source_db(tmp_path)
    limit = 64 * 10**9
    monkeypatch.setattr(headroom.resource, "getrlimit",
                        lambda which: (limit, limit) if which == headroom.resource.RLIMIT_AS
                        else (headroom.resource.RLIM_INFINITY,) * 2)
    for error in (MemoryError(), RuntimeError("can't start new thread")):
        def fail(*args, error=error, **kwargs):
            raise error

        monkeypatch.setattr("analyzer.runs.executor.run_jobs", fail)
        result = invoke(tmp_path / "a.db", "run", "--vocab", "300", "--langs",
                        "eng_Latn,fra_Latn", "--pretokenize", "words", "--train-on", "mono",
                        "--no-report")
        said = " ".join(result.output.split())
        assert result.exit_code == 1, result.output
        assert "The run ran out of memory while training (" in said
        assert f"), under the address-space limit (ulimit -v {limit // 1024}) of 64.0 GB; " \
            "nothing was stored" in said
        assert "bug" not in said
    assert [run.status for run in list_runs(open_db(tmp_path / "a.db"))] == ["failed"] * 2


def test_a_good_cache_entry_is_not_called_damaged_when_memory_runs_out(tmp_path, monkeypatch):
    """Issue 68: at `ulimit -v 600000` a good entry of the chunk-count cache was called damaged
    (Arrow's MemoryError taken for a broken file) and counted again. Now memory that runs out
    while an entry is read is a MemoryError, and the entry stays."""
    import pyarrow as pa

    from analyzer.runs import chunk_cache

    db = source_db(tmp_path)
    execute_run(db, RunSettings(**SOURCE_RUN))
    entry = next((tmp_path / "a.db.chunks").glob("*.arrow"))
    assert chunk_cache.read_entry(entry)

    def short(*args, **kwargs):
        raise pa.ArrowMemoryError("malloc of size 4096 failed")

    for failing in (short, lambda *args: (_ for _ in ()).throw(
            OSError(12, "Memory mapping file failed: Cannot allocate memory"))):
        with monkeypatch.context() as patched:
            patched.setattr(chunk_cache.pa, "memory_map", failing)
            with pytest.raises(MemoryError):
                chunk_cache.read_entry(entry)
    said: list[str] = []
    execute_run(db, RunSettings(**SOURCE_RUN), stage=said.append)
    assert not any("damaged" in line for line in said)


@pytest.mark.slow
def test_arrow_maps_what_it_uses(tmp_path):
    """Issue 68: Arrow's default allocator (mimalloc) reserved a gigabyte of address space at
    its first allocation, which alone refused a run under `ulimit -v`. The analyzer chooses the
    system's allocator for Arrow before it is loaded."""
    import subprocess
    import sys

    found = subprocess.run(
        [sys.executable, "-c", "import analyzer.runs.memory, pyarrow as pa; "
         "pa.array(range(1000)); print(pa.default_memory_pool().backend_name)"],
        capture_output=True, text=True, check=True, env={"PATH": "/usr/bin:/bin"})
    assert found.stdout.strip() == "system"
