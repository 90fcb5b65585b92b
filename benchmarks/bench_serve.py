"""Service load benchmark: 32 concurrent clients posting tokenize requests (1 KB texts) to
`analyzer serve` on loopback for 20 s, against a trained 32768 vocabulary.

Bounded: it stops by itself after the duration (and each request has a timeout). Prints
requests per second, p50 and p99 latency and the errors. Target (issue 15): zero errors, p99
under 100 ms. Uses NTREX-128 from ../shared when present (the shared vocabulary reaches 32768
there); else the shipped sample, whose vocabulary stops earlier (it says so).

    pip install -e '.[serve,bench]'
    python benchmarks/bench_serve.py [--clients 32] [--seconds 20]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import tempfile
import time
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
        body = json.dumps(document).encode()
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--seconds", type=float, default=20)
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
