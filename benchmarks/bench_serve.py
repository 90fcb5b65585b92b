"""Service load benchmark: 32 concurrent clients posting tokenize requests (1 KB texts) to
`analyzer serve` on loopback for 20 s, against a trained 32768 vocabulary.

Bounded: it stops by itself after the duration (and each request has a timeout). Prints
requests per second, p50 and p99 latency and the errors. Target (issue 15): zero errors, p99
under 100 ms. Uses NTREX-128 from ../shared when present (the shared vocabulary reaches 32768
there); else the shipped sample, whose vocabulary stops earlier (it says so).

With `--hostile` (issue 37), instead: while heavy clients count long texts under many
tokenizers (`/api/compare`), slow clients trickle request bodies and 45 long polls wait, a
probe asks `GET /api/runs` five times a second; it prints the probe's latencies (target: every
one under a second) and how the heavy requests were answered (200, or 503 when the counting
threads were all busy).

    pip install -e '.[serve,bench]'
    python benchmarks/bench_serve.py [--clients 32] [--seconds 20] [--hostile]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

NTREX = Path(__file__).resolve().parents[2] / "shared" / "corpora" / "ntrex128" / "text"
SAMPLE = Path(__file__).resolve().parents[1] / "parallel_corpora" / "harbour_town"


def analyzer(*args: str) -> str:
    done = subprocess.run([sys.executable, "-m", "analyzer", *args], capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"analyzer {' '.join(args)} failed:\n{done.stderr}")
    return done.stdout


def texts_of_1kb(corpus: Path) -> list[str]:
    """Lines of the corpus joined into texts of about 1,000 bytes, every language."""
    texts = []
    for path in sorted(corpus.glob("*.txt")):
        current = ""
        for line in path.read_text(encoding="utf-8").splitlines():
            if len((current + line).encode()) > 1000:
                texts.append(current)
                current = ""
            current += line + " "
    return [text for text in texts if text]


class Connection:
    """A minimal keep-alive HTTP/1.1 client on asyncio streams: the load generator shares the
    machine with the server, so it must cost little (httpx's own overhead dominated)."""

    def __init__(self, host: str, port: int):
        self.host, self.port = host, port

    async def open(self) -> None:
        self.reader, self.writer = await asyncio.open_connection(self.host, self.port)

    async def post(self, path: str, document: dict) -> tuple[int, bytes]:
        body = json.dumps(document, ensure_ascii=False).encode()
        self.writer.write(f"POST {path} HTTP/1.1\r\nHost: {self.host}\r\nContent-Type: "
                          f"application/json\r\nContent-Length: {len(body)}\r\n\r\n".encode() + body)
        head = await self.reader.readuntil(b"\r\n\r\n")
        status = int(head.split(b" ", 2)[1])
        length = next(int(line.split(b":")[1]) for line in head.split(b"\r\n")
                      if line.lower().startswith(b"content-length"))
        return status, await self.reader.readexactly(length)


async def client(url: str, texts: list[str], offset: int, until: float, latencies: list[float],
                 errors: list[str]) -> None:
    host, port = url.split("//")[1].split(":")
    connection = Connection(host, int(port))
    await connection.open()
    index = offset
    while time.monotonic() < until:
        text = texts[index % len(texts)]
        index += 32
        start = time.perf_counter()
        try:
            status, body = await asyncio.wait_for(
                connection.post("/api/tokenize", {"text": text, "run": 1}), timeout=10)
            if status != 200:
                errors.append(f"{status}: {body[:200]!r}")
        except Exception as error:  # a timeout or a refused connection is an error to count
            errors.append(f"{type(error).__name__}: {error}")
            await connection.open()
        latencies.append(time.perf_counter() - start)


async def load(url: str, texts: list[str], clients: int, seconds: float) -> tuple[list[float], list[str]]:
    latencies: list[float] = []
    errors: list[str] = []
    host, port = url.split("//")[1].split(":")
    warm = Connection(host, int(port))
    await warm.open()
    await warm.post("/api/tokenize", {"text": "warm up", "run": 1})  # loads the vocabulary
    until = time.monotonic() + seconds
    await asyncio.gather(*(client(url, texts, i, until, latencies, errors) for i in range(clients)))
    return latencies, errors


async def get(url: str, path: str, timeout: float = 90) -> tuple[int, float]:
    """One GET on a connection of its own: (status, seconds)."""
    host, port = url.split("//")[1].split(":")
    start = time.perf_counter()
    reader, writer = await asyncio.open_connection(host, int(port))
    try:
        writer.write(f"GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n".encode())
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), timeout)
        await reader.read()
    finally:
        writer.close()
    return int(head.split(b" ", 2)[1]), time.perf_counter() - start


async def hostile(url: str, text: str, tokenizers: list[str], seconds: float) -> None:
    """The probe's latencies while heavy, slow and waiting clients hold the server."""
    host, port = url.split("//")[1].split(":")
    until = time.monotonic() + seconds
    answers: dict[int, int] = {}

    async def heavy() -> None:
        connection = Connection(host, int(port))
        await connection.open()
        while time.monotonic() < until:
            status, _ = await connection.post("/api/compare", {"texts": {"eng_Latn": text},
                                                               "tokenizers": tokenizers})
            answers[status] = answers.get(status, 0) + 1

    async def slow() -> None:
        while time.monotonic() < until:
            reader, writer = await asyncio.open_connection(host, int(port))
            writer.write(f"POST /api/tokenize HTTP/1.1\r\nHost: {host}\r\nContent-Length: "
                         "1000\r\n\r\n{".encode())
            with contextlib.suppress(Exception):
                while time.monotonic() < until:
                    writer.write(b" ")
                    await writer.drain()
                    if await asyncio.wait_for(reader.read(1), 2) == b"":
                        break  # closed by the server at its deadline
            with contextlib.suppress(Exception):
                await asyncio.wait_for(reader.read(1), max(0.0, until - time.monotonic()))
            writer.close()

    with urllib.request.urlopen(url + "/api/runs/1") as answer:  # the server's count of changes
        changes = answer.headers["Analyzer-Changes"]

    async def poll() -> None:  # waits for the next change (there is none): held to the end
        with contextlib.suppress(Exception):
            await asyncio.wait_for(get(url, f"/api/runs/1?after={changes}&wait=60"),
                                   max(0.1, until - time.monotonic()))

    async def probe() -> list[float]:
        latencies = []
        while time.monotonic() < until:
            status, elapsed = await get(url, "/api/runs")
            assert status == 200, status
            latencies.append(elapsed)
            await asyncio.sleep(0.2)
        return latencies

    tasks = [asyncio.ensure_future(task) for task in
             [heavy() for _ in range(4)] + [slow() for _ in range(200)] + [poll() for _ in range(45)]]
    latencies = sorted(await probe())
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    print(f"while 4 heavy clients (compare, {len(text.encode()):,} bytes x {len(tokenizers)} "
          f"tokenizers), 200 slow bodies and 45 long polls: GET /api/runs x {len(latencies)}: "
          f"p50 {statistics.median(latencies) * 1000:.1f} ms, p99 "
          f"{latencies[int(0.99 * (len(latencies) - 1))] * 1000:.1f} ms, max "
          f"{latencies[-1] * 1000:.1f} ms (target: all under 1,000 ms)")
    print(f"heavy requests answered: {dict(sorted(answers.items()))} (503: every counting process "
          "was busy)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--hostile", action="store_true", help="the latency of GET /api/runs "
                        "under heavy, slow and waiting clients instead")
    args = parser.parse_args()
    corpus = NTREX if NTREX.is_dir() else SAMPLE
    with tempfile.TemporaryDirectory() as folder:
        db = str(Path(folder) / "bench.db")
        analyzer("ingest", str(corpus), "--db", db)
        analyzer("run", "--vocab", "32768", "--no-per-language", "--no-report", "--db", db)
        vocabulary = json.loads(analyzer("export", "1", "--db", db))["vocabularies"][0]
        print(f"corpus {corpus.name}; shared vocabulary: {256 + vocabulary['merges_learned']:,} "
              f"tokens (asked 32,768)")
        server = subprocess.Popen([sys.executable, "-m", "analyzer", "serve", "--port", "0",
                                   "--db", db], stderr=subprocess.PIPE, text=True)
        try:
            line = server.stderr.readline()
            url = line.split(" on ")[1].split()[0]
            texts = texts_of_1kb(corpus)
            if args.hostile:
                names = [item["name"] for item in json.loads(analyzer("tokenizers", "--json"))
                         if item["available"]][:10]
                budget = 3_900_000 // max(1, len(names))  # under the service's 4 MB per request
                long_text = " ".join(texts).encode()[:budget].decode("utf-8", errors="ignore")
                asyncio.run(hostile(url, long_text, names, args.seconds))
                return
            latencies, errors = asyncio.run(load(url, texts, args.clients, args.seconds))
        finally:
            server.terminate()
            server.wait(30)
    latencies.sort()
    p50 = statistics.median(latencies) * 1000
    p99 = latencies[int(0.99 * (len(latencies) - 1))] * 1000
    print(f"{args.clients} clients x {args.seconds:.0f} s, tokenize, 1 KB texts: "
          f"{len(latencies):,} requests = {len(latencies) / args.seconds:,.0f} per second; "
          f"p50 {p50:.1f} ms, p99 {p99:.1f} ms (target < 100); errors {len(errors)} (target 0)")
    for error in errors[:5]:
        print("  ", error)


if __name__ == "__main__":
    main()
