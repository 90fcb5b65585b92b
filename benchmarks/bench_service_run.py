"""A run from the service's form to its report: 12 NTREX languages x 8 production tokenizers,
as a browser's "Start the run" sends it, timed to the moment the report's data is served.

    pip install -e '.[serve,bench]'
    python benchmarks/bench_service_run.py [--repeat 3]

It starts `analyzer serve --port 0` on a fresh database holding the 12 languages (needs
../shared/corpora/ntrex128), then, each time: POST /api/runs (the form's JSON), the long poll
of GET /api/runs/{id} until it is complete (the watch page does the same), and its report
document (the complete run's answer, what the page draws). Prints each phase's seconds, their
medians over the repeats, and the target (issue 69: under 10 s in all).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

NTREX = Path(__file__).resolve().parents[2] / "shared" / "corpora" / "ntrex128" / "text"
LANGUAGES = ["eng_Latn", "fra_Latn", "deu_Latn", "spa_Latn", "rus_Cyrl", "hin_Deva", "arb_Arab",
             "zho_Hans", "jpn_Jpan", "kor_Hang", "tha_Thai", "amh_Ethi"]
TOKENIZERS = ["cl100k_base", "o200k_base", "llama3", "llama4", "mistral-v3", "gemma3", "qwen3",
              "command-r-plus"]


def serve(db: Path) -> tuple[subprocess.Popen, str]:
    process = subprocess.Popen([sys.executable, "-m", "analyzer", "serve", "--port", "0", "--db",
                                str(db)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               text=True)
    assert process.stdout is not None
    for line in process.stdout:
        if "Serving" in line:
            return process, line.split(" on ")[1].split()[0]
    raise SystemExit("analyzer serve ended before it served")


def one_run(client: httpx.Client, tokenizers: list[str]) -> dict[str, float]:
    start = time.perf_counter()
    answer = client.post("/api/runs", json={"corpus": "ntrex12", "sizes": [],
                                            "tokenizers": tokenizers})
    answer.raise_for_status()
    run_id = answer.json()["run"]
    started = time.perf_counter()
    changes = None
    while True:
        params = {"wait": 30} if changes is None else {"wait": 30, "after": changes}
        polled = client.get(f"/api/runs/{run_id}", params=params, timeout=60)
        polled.raise_for_status()
        changes = int(polled.headers.get("Analyzer-Changes", 0))
        state = polled.json()
        if state.get("status") in ("failed", "interrupted"):
            raise SystemExit(f"run {run_id} {state['status']}: {state.get('error')}")
        if state.get("records"):
            break
    done = time.perf_counter()
    client.get(f"/runs/{run_id}").raise_for_status()  # the page itself
    return {"accepted": started - start, "ran": done - started,
            "report": time.perf_counter() - done, "total": time.perf_counter() - start}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    options = parser.parse_args()
    if not NTREX.is_dir():
        raise SystemExit(f"{NTREX} is absent: this benchmark needs ../shared/corpora")
    from analyzer.external import available_tokenizers

    here = set(available_tokenizers()[0])
    tokenizers = [name for name in TOKENIZERS if name in here]
    with tempfile.TemporaryDirectory() as tmp:
        corpus = Path(tmp) / "ntrex12"
        corpus.mkdir()
        for lang in LANGUAGES:
            shutil.copy(NTREX / f"{lang}.txt", corpus / f"{lang}.txt")
        db = Path(tmp) / "service.db"
        subprocess.run([sys.executable, "-m", "analyzer", "ingest", str(corpus), "--db", str(db)],
                       check=True, capture_output=True, env={**os.environ})
        process, url = serve(db)
        try:
            with httpx.Client(base_url=url, timeout=60,
                              headers={"Origin": url, "Sec-Fetch-Site": "same-origin"}) as client:
                found = [one_run(client, tokenizers) for _ in range(options.repeat)]
        finally:
            process.terminate()
            process.wait(10)
    print(f"{len(LANGUAGES)} languages x {len(tokenizers)} tokenizers ({', '.join(tokenizers)}),"
          f" from POST /api/runs to the complete run's report; seconds:")
    for phase in found[0]:
        print(f"  {phase:9}" + "".join(f"{run[phase]:7.2f}" for run in found)
              + f"   median {statistics.median(run[phase] for run in found):.2f}")
    print("target (issue 69): the total under 10 s")


if __name__ == "__main__":
    main()
