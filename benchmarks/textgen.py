"""Realistic multilingual text at any scale, for the training-source benchmarks (issue 39).

No test or benchmark may download, and the real text here is small (NTREX-128: about 300 KB per
language), so text at gigabyte scale is made, one language at a time, from a model fitted on
that language's real text:

- Languages written with spaces: words drawn independently from a Zipf-like law. The head is
  the real words seen twice or more, at their real frequencies; the tail (Good-Turing: the
  share of words seen once) falls as rank^-s over up to 10^7 ranks, its first ranks the real
  words seen once, the rest new word forms spelled by a character trigram model of the
  language's words. New forms keep appearing as the text grows, as Heaps' law says
  (distinct words ~ K n^beta); `s` is chosen so that the expected number of distinct words
  follows the real text's growth curve at 1/8, 1/4, 1/2 and all of it.
- Languages written without spaces between words (Chinese, Japanese, Thai, Lao, Khmer,
  Tibetan: under 8% whitespace): a character trigram model of the real text, spaces and
  punctuation included, so that a pre-tokenizer's chunks (runs of letters between
  punctuation) are as long and as varied as in the real text.

Documents are lines of a few sentences (geometric, mean 4), each sentence as long as a real one
(drawn from the real lengths). `--check` says how close the growth curve is: the distinct
o200k chunks of made text against the real text's at each eighth of the real size, fitted on
the real text's first half (so its second half is a prediction), per language and in median.

    python benchmarks/textgen.py OUT --bytes 1G            # 58 languages, skewed sizes
    python benchmarks/textgen.py OUT --bytes 100M --languages eng_Latn,zho_Hans --equal
    python benchmarks/textgen.py --check                   # the growth curves, no text written
"""

from __future__ import annotations

import argparse
import collections
import concurrent.futures
import math
import os
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

NTREX = Path(__file__).resolve().parents[2] / "shared" / "corpora" / "ntrex128" / "text"
MAX_RANK = 10_000_000
"""Ranks of the word law: far more word forms than 200 MB of one language shows."""
UNSPACED = 0.08
"""Under this share of whitespace among its characters, a language is modelled by characters."""
SENTENCES_PER_DOCUMENT = 4.0
END = 0
"""The character models' start and end mark (code point 0 never occurs in the text)."""


@dataclass
class Characters:
    """A character trigram model: the next character drawn given the two before it. Each
    context's next characters are a cumulative table in one array, shifted by the context's
    row (row r's values lie in [r, r+1)), so that one `searchsorted` draws the next character
    of many chains at once."""

    symbols: np.ndarray
    """Code point of each symbol index (index 0: END)."""
    contexts: np.ndarray
    """Sorted keys of the contexts seen (first * n_symbols + second); a context's row is its
    place here."""
    cumulative: np.ndarray
    nexts: np.ndarray

    @classmethod
    def fit(cls, sequences: list[str]) -> Characters:
        triples: collections.Counter = collections.Counter()
        for text in sequences:
            codes = [END, END, *map(ord, text), END]
            triples.update(zip(codes, codes[1:], codes[2:]))
        symbols = np.array(sorted({END} | {code for triple in triples for code in triple}))
        index = {int(code): k for k, code in enumerate(symbols)}
        n = len(symbols)
        rows: dict[int, list[tuple[int, int]]] = collections.defaultdict(list)
        for (a, b, c), count in triples.items():
            rows[index[a] * n + index[b]].append((index[c], count))
        contexts = np.array(sorted(rows), dtype=np.int64)
        cumulative, nexts = [], []
        for row, key in enumerate(contexts.tolist()):
            found = rows[key]
            total = sum(count for _, count in found)
            running = 0
            for following, count in found:
                running += count
                cumulative.append(row + running / total)
                nexts.append(following)
            cumulative[-1] = row + 1.0 - 1e-12
        return cls(symbols, contexts, np.array(cumulative), np.array(nexts, dtype=np.int64))

    def step(self, before: np.ndarray, last: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        keys = before * len(self.symbols) + last
        rows = np.searchsorted(self.contexts, keys)
        unseen = (rows >= len(self.contexts)) | (self.contexts[rows.clip(max=len(self.contexts) - 1)] != keys)
        rows = np.where(unseen, 0, rows)  # a context never seen (only after an end): start over
        draws = rows + rng.random(len(rows))
        return self.nexts[np.searchsorted(self.cumulative, draws, side="right").clip(
            max=len(self.nexts) - 1)]

    def pieces(self, n: int, mean_length: float, rng: np.random.Generator, lanes: int = 1024
               ) -> list[str]:
        """At least n pieces (a word, or a sentence: what the model was fitted on), drawn by
        `lanes` chains side by side, each going on from one piece's end into the next."""
        found: list[str] = []
        before = np.zeros(lanes, dtype=np.int64)
        last = np.zeros(lanes, dtype=np.int64)
        while len(found) < n:
            steps = max(8, int((n - len(found)) * (mean_length + 1) / lanes * 1.1) + 1)
            grid = np.empty((lanes, steps), dtype=np.int64)
            for column in range(steps):
                following = self.step(before, last, rng)
                before, last = np.where(following == END, END, last), following
                grid[:, column] = following
            codes = self.symbols[grid].astype("<u4")  # END is code point 0
            for lane in codes:
                found += [piece for piece in lane.tobytes().decode("utf-32-le").split("\0")
                          if piece]
        return found[:n]


@dataclass
class LanguageModel:
    lang: str
    spaced: bool
    characters: Characters
    """Of the distinct words (spaced), or of the sentences (unspaced)."""
    mean_piece: float
    """The mean characters of what `characters` makes: a word, or a sentence."""
    sentence_lengths: np.ndarray
    """Words in each real sentence (spaced only)."""
    forms: list[bytes]
    """The real words by rank (spaced only)."""
    cumulative: np.ndarray | None
    """The word law's cumulative probabilities by rank (spaced only)."""
    exponent: float = 0.0

    @classmethod
    def fit(cls, lang: str, lines: list[str]) -> LanguageModel:
        lines = [line for line in lines if line.strip()]
        text = "\n".join(lines)
        spaced = sum(c.isspace() for c in text) / max(1, len(text)) >= UNSPACED
        if not spaced:
            return cls(lang, False, Characters.fit(lines),
                       statistics.mean(map(len, lines)), np.array([1]), [], None)
        words = text.split()
        counts = collections.Counter(words)
        ranked = sorted(counts, key=lambda w: (-counts[w], w))
        model = cls(lang, True, Characters.fit(list(counts)), statistics.mean(map(len, counts)),
                    np.array([len(line.split()) for line in lines]), [w.encode() for w in ranked],
                    None)
        model.exponent, model.cumulative = fit_law(np.array([counts[w] for w in ranked]), words)
        return model

    def sentences_per_document(self, rng: np.random.Generator, n: int) -> np.ndarray:
        return rng.geometric(1 / SENTENCES_PER_DOCUMENT, n)


def law(counts: np.ndarray, exponent: float) -> np.ndarray:
    """Each rank's probability: the words seen twice or more at their frequencies, the rest
    (Good-Turing: the share of words seen once) as rank^-exponent beyond them."""
    total = counts.sum()
    head = counts[counts >= 2] / total
    tail_mass = 1.0 - head.sum()
    ranks = np.arange(len(head) + 1, MAX_RANK + 1, dtype=np.float64)
    tail = ranks ** -exponent
    tail *= tail_mass / tail.sum()
    return np.concatenate((head, tail))


def expected_distinct(probabilities: np.ndarray, n: float) -> float:
    """The expected number of distinct ranks among n draws."""
    return float(-np.expm1(n * np.log1p(-probabilities)).sum())


def growth(words: list[str], points: list[int]) -> list[int]:
    """Distinct words in the first n words, at each n of `points`."""
    seen: set[str] = set()
    found, k = [], 0
    for n in points:
        seen.update(words[k:n])
        k = n
        found.append(len(seen))
    return found


def fit_law(counts: np.ndarray, words: list[str]) -> tuple[float, np.ndarray]:
    """The tail exponent whose expected growth is closest (in log) to the real growth at an
    eighth, a quarter, half and all of the words; the law's cumulative table at it."""
    points = [len(words) // 8, len(words) // 4, len(words) // 2, len(words)]
    real = np.log(growth(words, points))

    def error(exponent: float) -> float:
        probabilities = law(counts, exponent)
        made = np.log([expected_distinct(probabilities, n) for n in points])
        return float(((made - real) ** 2).sum())

    low, high = 1.01, 2.5  # a golden-section search: the error has one minimum here
    ratio = (math.sqrt(5) - 1) / 2
    for _ in range(16):
        a, b = high - ratio * (high - low), low + ratio * (high - low)
        if error(a) < error(b):
            high = b
        else:
            low = a
    best = (0.0, (low + high) / 2)
    cumulative = np.cumsum(law(counts, best[1]))
    cumulative /= cumulative[-1]
    return best[1], cumulative


class Writer:
    """Text of one language, made a batch of documents at a time."""

    def __init__(self, model: LanguageModel, seed: int):
        self.model = model
        self.rng = np.random.default_rng(seed)
        self.forms = list(model.forms)
        self.known = set(self.forms)
        self.slot = np.full(MAX_RANK if model.spaced else 0, -1, dtype=np.int64)
        self.slot[:len(self.forms)] = np.arange(len(self.forms))

    def batch(self, documents: int = 4096) -> bytes:
        """`documents` lines of text, each ending in a newline."""
        model, rng = self.model, self.rng
        sentences = model.sentences_per_document(rng, documents)
        if not model.spaced:
            made = model.characters.pieces(int(sentences.sum()), model.mean_piece, rng)
            ends = np.cumsum(sentences).tolist()
            return "".join("".join(made[start:end]) + "\n"
                           for start, end in zip([0, *ends[:-1]], ends)).encode()
        assert model.cumulative is not None
        lengths = np.add.reduceat(rng.choice(model.sentence_lengths, int(sentences.sum())),
                                  np.concatenate(([0], np.cumsum(sentences)[:-1])))
        ranks = np.searchsorted(model.cumulative, rng.random(int(lengths.sum())), side="right")
        ranks = ranks.clip(max=MAX_RANK - 1)
        new = np.unique(ranks[self.slot[ranks] < 0])
        if len(new):
            self.slot[new] = np.arange(len(self.forms), len(self.forms) + len(new))
            self.forms += self._new_forms(len(new))
        words = [self.forms[k] for k in self.slot[ranks].tolist()]
        ends = np.cumsum(lengths).tolist()
        return b"".join(b" ".join(words[start:end]) + b"\n"
                        for start, end in zip([0, *ends[:-1]], ends))

    def _new_forms(self, n: int) -> list[bytes]:
        """n word forms, none of them already a form, spelled like the real words."""
        found: list[bytes] = []
        while len(found) < n:
            for word in self.model.characters.pieces(n - len(found), self.model.mean_piece,
                                                     self.rng):
                form = word.encode()
                if form not in self.known:
                    self.known.add(form)
                    found.append(form)
        return found[:n]


def real_lines(lang: str) -> list[str]:
    return (NTREX / f"{lang}.txt").read_text(encoding="utf-8").splitlines()


def languages_here() -> list[str]:
    if not NTREX.is_dir():
        sys.exit(f"{NTREX} is absent: the text generator fits its models on NTREX-128")
    return sorted(path.stem for path in NTREX.glob("*.txt"))


def shares(languages: list[str], equal: bool) -> dict[str, float]:
    """Each language's share of the bytes: equal, or skewed as web text is (the n-th language
    of a fixed shuffle, English first, gets a share ~ 1/n^0.8: the largest about 20 times the
    smallest of 58)."""
    if equal:
        return {lang: 1 / len(languages) for lang in languages}
    order = sorted(languages, key=lambda lang: (lang != "eng_Latn", hash_of(lang)))
    weights = {lang: (k + 1) ** -0.8 for k, lang in enumerate(order)}
    total = sum(weights.values())
    return {lang: weights[lang] / total for lang in languages}


def hash_of(text: str) -> int:
    import hashlib

    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")


def write(out: Path, total: int, languages: list[str], equal: bool, compression: str | None,
          seed: int, jobs: int) -> None:
    """Each language's file, `jobs` languages at a time (each its own seed: the same text
    whatever the number of jobs)."""
    out.mkdir(parents=True, exist_ok=True)
    share = shares(languages, equal)
    start, written = time.perf_counter(), 0
    work = [(out, lang, int(total * share[lang]), compression, seed + index)
            for index, lang in enumerate(languages)]
    work.sort(key=lambda item: -item[2])  # the largest first: the jobs end together
    with concurrent.futures.ProcessPoolExecutor(jobs) as pool:
        for done, (lang, n_bytes, spaced) in enumerate(pool.map(write_language, work), 1):
            written += n_bytes
            rate = written / 1e6 / (time.perf_counter() - start)
            print(f"{lang}: {n_bytes / 1e6:8.1f} MB ({'words' if spaced else 'characters'}) "
                  f"[{done}/{len(languages)}, {rate:.0f} MB/s]", flush=True)


def write_language(work: tuple[Path, str, int, str | None, int]) -> tuple[str, int, bool]:
    out, lang, budget, compression, seed = work
    model = LanguageModel.fit(lang, real_lines(lang))
    writer = Writer(model, seed)
    name = out / (f"{lang}.txt" + {"zstd": ".zst", "gzip": ".gz", None: ""}[compression])
    done = 0
    with open_for(name, compression) as stream:
        while done < budget:
            piece = writer.batch()
            if done + len(piece) > budget:  # end on a whole line at the budget
                cut = piece.rfind(b"\n", 0, budget - done)
                piece = piece[:cut + 1] if cut >= 0 else b""
                done = budget - len(piece)
            stream.write(piece)
            done += len(piece)
    return lang, name.stat().st_size if compression is None else budget, model.spaced


def open_for(path: Path, compression: str | None):
    if compression == "zstd":
        import zstandard

        return zstandard.open(path, "wb", cctx=zstandard.ZstdCompressor(level=3))
    if compression == "gzip":
        import gzip

        return gzip.open(path, "wb", compresslevel=3)
    return open(path, "wb")


def distinct_chunks_growth(lines: list[str], points: int = 8) -> list[int]:
    """Distinct o200k chunks in the first k/points of the text's bytes, k = 1..points."""
    from analyzer.bpe.counting import chunk_counter, count_texts
    from analyzer.bpe.pretokenize import resolve

    splitter = resolve("o200k")
    total = sum(len(line.encode()) + 1 for line in lines)
    counter, found, k, size = chunk_counter(), [], 0, 0
    for point in range(1, points + 1):
        goal, batch = total * point // points, []
        while k < len(lines) and size < goal:
            batch.append(lines[k])
            size += len(lines[k].encode()) + 1
            k += 1
        count_texts(counter, batch, splitter, k)
        found.append(len(counter))
    return found


def check(languages: list[str]) -> None:
    """The growth curves: fitted on the first half of each language's real text, made text as
    long as all of it, distinct o200k chunks at each eighth; the error of the made text's count
    at the full size (a prediction: twice what the model saw) and over the curve."""
    print(f"{'language':<10} {'model':<6} {'real':>7} {'made':>7} {'at 2x':>7} {'curve':>7} "
          f"{'beta real':>9} {'made':>6}")
    full_errors, curve_errors, beta_gaps = [], [], []
    for lang in languages:
        lines = [line for line in real_lines(lang) if line.strip()]
        model = LanguageModel.fit(lang, lines[:len(lines) // 2])
        writer = Writer(model, 0)
        target = sum(len(line.encode()) + 1 for line in lines)
        made_text = b""
        while len(made_text) < target:
            made_text += writer.batch(64)
        made_lines = made_text[:target].decode(errors="ignore").splitlines()
        real = distinct_chunks_growth(lines)
        made = distinct_chunks_growth(made_lines)
        errors = [m / r - 1 for m, r in zip(made, real)]
        beta_real = math.log(real[-1] / real[1]) / math.log(4)
        beta_made = math.log(made[-1] / made[1]) / math.log(4)
        full_errors.append(abs(errors[-1]))
        curve_errors.append(statistics.mean(map(abs, errors)))
        beta_gaps.append(abs(beta_made - beta_real))
        print(f"{lang:<10} {'words' if model.spaced else 'chars':<6} {real[-1]:>7,} "
              f"{made[-1]:>7,} {errors[-1]:>+7.1%} {curve_errors[-1]:>7.1%} "
              f"{beta_real:>9.3f} {beta_made:>6.3f}", flush=True)
    print(f"median over {len(languages)} languages: |error| at 2x the fitted text "
          f"{statistics.median(full_errors):.1%}, mean |error| over the curve "
          f"{statistics.median(curve_errors):.1%}, |beta made - beta real| "
          f"{statistics.median(beta_gaps):.3f} (beta: the slope of log distinct chunks against "
          "log text from a quarter to all of it)")


def parse_bytes(text: str) -> int:
    units = {"": 1, "K": 10**3, "M": 10**6, "G": 10**9}
    number, unit = text.rstrip("KMGkmg"), text[len(text.rstrip("KMGkmg")):].upper()
    return int(float(number) * units[unit])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, nargs="?", help="folder for the <lang>.txt files")
    parser.add_argument("--bytes", default="100M", help="total, e.g. 1G (decimal units)")
    parser.add_argument("--languages", help="comma-separated codes (default: NTREX's 58)")
    parser.add_argument("--equal", action="store_true", help="every language the same size")
    parser.add_argument("--compression", choices=["zstd", "gzip"], help="compress the files")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1,
                        help="languages made at once (default: every core)")
    parser.add_argument("--check", action="store_true", help="the growth curves against NTREX")
    args = parser.parse_args()
    languages = args.languages.split(",") if args.languages else languages_here()
    if args.check:
        check(languages)
        return
    if args.out is None:
        parser.error("give the folder to write to (or --check)")
    write(args.out, parse_bytes(args.bytes), languages, args.equal, args.compression, args.seed,
          args.jobs)


if __name__ == "__main__":
    main()
