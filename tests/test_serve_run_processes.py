"""How the service starts a run's process (issue 69: a run asked from the form waited seconds
for its process to import the service and the runs before it recorded the run): forked from a
fork server that has them loaded, SIGINT ignored from its first instruction (a Ctrl-C at the
server's terminal reaches every process of its group), ended with the server; spawned where a
fork server cannot be made."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

pytest.importorskip("fastapi")

SCRIPT = '''
import json, multiprocessing, os, signal, sys

def state(queue, server):
    from analyzer.runs.pool import watch_parent
    loaded = "analyzer.runs.execute" in sys.modules and "analyzer.serve.runner" in sys.modules
    watch_parent(server)  # the server that asked for it, whoever forked it
    queue.put({"loaded": loaded, "sigint_ignored": signal.getsignal(signal.SIGINT) is signal.SIG_IGN,
               "marker": os.environ.get("ANALYZER_FORK_SERVER")})

if __name__ == "__main__":
    from analyzer.serve.runner import run_processes
    context = run_processes()
    queue = context.Queue()
    process = context.Process(target=state, args=(queue, os.getpid()))
    process.start()
    found = queue.get(timeout=300)
    process.join(60)
    print(json.dumps({"method": context.get_start_method(), "exit": process.exitcode, **found}))
'''


def started(tmp: Path) -> dict:
    """What a run's process found as it started, with TMPDIR `tmp`."""
    script = tmp / "script.py"
    script.write_text(SCRIPT)
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          env={**os.environ, "TMPDIR": str(tmp)}, timeout=600)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_a_run_s_process_is_forked_with_the_run_loaded_and_sigint_ignored():
    with tempfile.TemporaryDirectory(dir="/tmp") as tmp:  # a short path: the server's socket
        found = started(Path(tmp))
    assert found == {"method": "forkserver", "exit": 0, "loaded": True, "sigint_ignored": True,
                     "marker": None}


@pytest.mark.slow
def test_where_no_fork_server_can_be_made_a_run_s_process_is_spawned(tmp_path):
    """A temporary folder whose path is too long for a socket: the server still starts its
    runs (it refused to start at all)."""
    deep = tmp_path / ("x" * 90)
    deep.mkdir()
    found = started(deep)
    assert found["method"] == "spawn" and found["exit"] == 0 and found["marker"] is None
