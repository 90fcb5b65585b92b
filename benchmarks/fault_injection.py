"""Fault injection: runs SIGKILLed at random points, then everything checked.

    python benchmarks/fault_injection.py              # 25 kills (about two minutes)
    python benchmarks/fault_injection.py --kills 100 --jobs 2 --seed 7

Each round starts `analyzer run` in a session of its own on the shipped sample corpus (cross
matrix, several sizes, worker processes) and SIGKILLs the command at a random moment between
its start and a little after the time an uninterrupted run takes, so kills land everywhere:
before the run is recorded, while workers train, while results are written, after the end.
After every round: no process of the session may survive, and the next command must mark the
run. At the end: SQLite's integrity and foreign-key checks, the earlier complete run compared
byte for byte with its state before the first kill, no run left `running`, no partial results
of any killed run, and every run that completed complete in full.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from sqlite_utils import Database

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from helpers import wait_until_gone  # noqa: E402


def analyzer(*args: str, db: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "analyzer", *args, "--db", str(db)],
                          capture_output=True, text=True)


def fingerprint(db: Database, run_id: int) -> str:
    """SHA-256 of everything a run stored: its row, vocabularies, merges and counts."""
    digest = hashlib.sha256()
    queries = [
        ("SELECT * FROM runs WHERE id = ?", [run_id]),
        ("SELECT * FROM vocabularies WHERE run_id = ? ORDER BY id", [run_id]),
        ("SELECT m.* FROM merges m JOIN vocabularies v ON v.id = m.vocab_id WHERE v.run_id = ? "
         "ORDER BY m.vocab_id, m.rank", [run_id]),
        ("SELECT c.* FROM token_counts c JOIN vocabularies v ON v.id = c.vocab_id "
         "WHERE v.run_id = ? ORDER BY c.vocab_id, c.size, c.lang", [run_id]),
    ]
    for sql, params in queries:
        for row in db.execute(sql, params):
            digest.update(repr(row).encode())
    return digest.hexdigest()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kills", type=int, default=25, help="rounds (default 25)")
    parser.add_argument("--jobs", type=int, default=2, help="worker processes per run")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    run_args = ["run", "--vocab", "300,512,1024,2048", "--cross", "--jobs", str(args.jobs),
                "--no-report"]
    with tempfile.TemporaryDirectory() as folder:
        db_path = Path(folder) / "faults.db"
        assert analyzer("ingest", db=db_path).returncode == 0
        start = time.perf_counter()
        done = analyzer(*run_args, db=db_path)
        assert done.returncode == 0, done.stderr
        typical = time.perf_counter() - start
        earlier = fingerprint(Database(db_path), 1)
        outcomes = {"complete": 0, "interrupted": 0, "not recorded": 0}
        survivors, times = 0, []
        for _ in range(args.kills):
            before = Database(db_path).execute("SELECT max(id) FROM runs").fetchone()[0]
            process = subprocess.Popen([sys.executable, "-m", "analyzer", *run_args, "--db",
                                        str(db_path)], stdout=subprocess.DEVNULL,
                                       stderr=subprocess.DEVNULL, start_new_session=True)
            delay = rng.uniform(0, typical * 1.2)
            times.append(delay)
            time.sleep(delay)  # a random point: this is the experiment, not a synchronisation
            os.kill(process.pid, signal.SIGKILL)
            process.wait()
            left = wait_until_gone(process.pid, timeout=30)
            survivors += len(left)
            for pid in left:
                os.kill(pid, signal.SIGKILL)
            listing = analyzer("runs", "--json", db=db_path)  # the next command marks the run
            assert listing.returncode == 0, listing.stderr
            runs = json.loads(listing.stdout)
            newest = runs[-1]
            if newest["id"] == before:
                outcomes["not recorded"] += 1
            else:
                outcomes[newest["status"]] = outcomes.get(newest["status"], 0) + 1
        db = Database(db_path)
        integrity = db.execute("PRAGMA integrity_check").fetchone()[0]
        foreign = db.execute("PRAGMA foreign_key_check").fetchall()
        running = db.execute("SELECT count(*) FROM runs WHERE status = 'running'").fetchone()[0]
        partial = db.execute(
            "SELECT count(*) FROM vocabularies v JOIN runs r ON r.id = v.run_id "
            "WHERE r.status != 'complete'").fetchone()[0]
        complete_sizes = {row[0] for row in db.execute(
            "SELECT count(*) FROM vocabularies v JOIN runs r ON r.id = v.run_id "
            "WHERE r.status = 'complete' GROUP BY r.id")}
        unchanged = fingerprint(db, 1) == earlier
    print(f"{args.kills} runs SIGKILLed at random points (0 to {typical * 1.2:.1f} s; an "
          f"uninterrupted run takes {typical:.1f} s with {args.jobs} workers)")
    print(f"  outcome of the kill: {outcomes}")
    print(f"  surviving processes after a kill: {survivors}")
    print(f"  integrity_check: {integrity}; foreign key violations: {len(foreign)}")
    print(f"  runs left 'running': {running}; result rows of runs not complete: {partial}")
    print(f"  vocabularies per complete run: {sorted(complete_sizes)} (13 expected)")
    print(f"  the earlier run, byte for byte: {'unchanged' if unchanged else 'CHANGED'}")
    ok = (survivors == 0 and integrity == "ok" and not foreign and running == 0 and partial == 0
          and complete_sizes <= {13} and unchanged)
    print("PASS" if ok else "FAIL")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
