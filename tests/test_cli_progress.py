"""A run's progress where no terminal reads it (issue 52): a few plain lines, one when a
vocabulary starts, then at most one every few seconds, said in merges, and one when it is done
if it took that long."""

from __future__ import annotations

import io
from pathlib import Path

from rich.console import Console

from analyzer.cli.progress import PLAIN_EVERY, VocabularyBars, progress_bars
from helpers import invoke

SAMPLE = Path(__file__).parent.parent / "parallel_corpora" / "harbour_town"


def plain_bars(clock):
    out = io.StringIO()
    console = Console(file=out, force_terminal=False, width=80)
    bars = progress_bars(console)
    return VocabularyBars(bars, plain_lines=True, clock=clock), out


def test_plain_progress_is_a_line_per_vocabulary_every_few_seconds_and_one_when_done():
    now = [0.0]
    tracker, out = plain_bars(lambda: now[0])
    for done in range(0, 1001):  # 1,000 merges over 3.5 intervals of the clock
        now[0] = done * PLAIN_EVERY * 3.5 / 1000
        tracker.report("shared", "train", done, 1000)
    tracker.report("shared", "count", 0, 0)  # at 17.5 s: 2.5 s after the last line
    now[0] += PLAIN_EVERY
    tracker.report("shared", "done", 0, 0)
    assert out.getvalue().splitlines() == [
        "shared: training, 1,000 merges",  # merges, said as such, not a size
        "shared: 286 of 1,000 merges", "shared: 572 of 1,000 merges",
        "shared: 858 of 1,000 merges", "shared: done"]


def test_a_quick_vocabulary_is_one_line():
    now = [0.0]
    tracker, out = plain_bars(lambda: now[0])
    for done in range(10):
        tracker.report("fra_Latn", "train", done, 10)
    tracker.report("fra_Latn", "count", 0, 0)
    tracker.report("fra_Latn", "done", 0, 0)
    tracker.report("cl100k_base", "count", 0, 0)
    tracker.report("cl100k_base", "done", 0, 0)
    assert out.getvalue().splitlines() == ["fra_Latn: training, 10 merges", "cl100k_base: counting"]


def test_vocabularies_trained_side_by_side_each_get_their_own_pace():
    now = [0.0]
    tracker, out = plain_bars(lambda: now[0])
    for step in range(7):
        now[0] = step * PLAIN_EVERY / 2
        for scope in ("shared", "fra_Latn"):
            tracker.report(scope, "train", step, 10)
    lines = out.getvalue().splitlines()
    assert lines.count("fra_Latn: 2 of 10 merges") == 1 and lines.count("shared: 2 of 10 merges") == 1
    assert len(lines) == 8  # each at its start, then at 5, 10 and 15 seconds


def test_unigram_says_its_rounds_not_merges():
    now = [0.0]
    tracker, out = plain_bars(lambda: now[0])
    tracker.report("unigram [words] size 4096", "train", 0, 1)
    for step in range(3):
        now[0] = step * PLAIN_EVERY
        tracker.report("unigram [words] size 4096", "rounds", step, 15)
    assert out.getvalue().splitlines() == ["unigram [words] size 4096: training",
                                           "unigram [words] size 4096: 1 of 15 rounds",
                                           "unigram [words] size 4096: 2 of 15 rounds"]


def test_a_source_read_says_its_bytes_and_rate_not_its_time_left_twice():
    now = [0.0]
    tracker, out = plain_bars(lambda: now[0])
    for step in range(3):
        now[0] = step * PLAIN_EVERY
        tracker.report("web", "read", step * 1_000_000, 4_000_000)
    assert out.getvalue().splitlines() == ["web: read 0 B of 4.0 MB",
                                           "web: read 1.0 MB of 4.0 MB, 200.0 kB/s",
                                           "web: read 2.0 MB of 4.0 MB, 200.0 kB/s"]


def test_the_sample_run_into_a_pipe_is_under_30_lines_of_progress(tmp_path):
    db = tmp_path / "a.db"
    assert invoke(db, "ingest", SAMPLE).exit_code == 0
    result = invoke(db, "run", "--vocab", "512", "--no-report", "--jobs", "1")
    assert result.exit_code == 0, result.output
    progress = result.stderr.splitlines()
    assert len(progress) < 30, progress
    assert "shared: training, 256 merges" in progress and "storing results" in progress


def test_a_reader_that_goes_away_never_fails_the_run():
    """`analyzer run ... 2>&1 | head -1`: the progress's reader closes its end; the run goes
    on unseen (it was marked failed by a BrokenPipeError from a progress line)."""

    class Gone(io.StringIO):
        def write(self, text: str) -> int:
            raise BrokenPipeError(32, "Broken pipe")

    from analyzer.cli.app import Console as CommandConsole  # the command line's, as run's

    console = CommandConsole(file=Gone(), force_terminal=False, width=80)
    tracker = VocabularyBars(progress_bars(console), plain_lines=True, clock=lambda: 0.0)
    tracker.stage("loading texts")
    tracker.report("shared", "train", 1, 10)
    assert tracker.gone


def test_a_bar_says_training_until_it_counts_steps():
    """In a terminal, a Unigram or WordPiece bar said `merges 0/1` before (or, WordPiece's,
    instead of) any count: a training whose steps are not counted says `training`, Unigram's
    says its rounds once it counts them."""
    console = Console(file=io.StringIO(), force_terminal=True, width=120)
    bars = progress_bars(console, disable=True)
    tracker = VocabularyBars(bars)
    tracker.report("wordpiece size 1024", "train", 0, 1)
    tracker.report("unigram size 1024", "train", 0, 1)
    tasks = {task.description: task for task in bars.tasks}
    assert "wordpiece size 1024: training" in tasks
    assert not tasks["unigram size 1024: training"].fields["merges"]
    tracker.report("unigram size 1024", "rounds", 2, 9)
    rounds = next(task for task in bars.tasks if task.description.startswith("unigram"))
    assert rounds.description == "unigram size 1024: rounds"
    assert rounds.fields["merges"] and (rounds.completed, rounds.total) == (2, 9)
