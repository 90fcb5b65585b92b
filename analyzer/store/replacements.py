"""What each merge did for each language, and which tokens each language uses: the stored
data behind vocabulary allocation (who got the vocabulary, equal-cost sizes, utilisation,
Rényi efficiency, divergence). Blobs are zlib-compressed little-endian arrays.

>>> unpack_int64s(pack_int64s([3, 0, 2**40]))
[3, 0, 1099511627776]
>>> dict(unpack_histogram(pack_histogram({300: 2, 97: 5})))
{97: 5, 300: 2}
"""

from __future__ import annotations

import sys
import zlib
from array import array
from collections.abc import Iterator, Mapping

import numpy as np

from analyzer.identity import Role

from .kinds import ReplacementTexts
from .sqlite import Database


def _packed(values: array) -> bytes:
    if sys.byteorder == "big":
        values.byteswap()
    return zlib.compress(values.tobytes(), 6)


def _unpacked(kind: str, blob: bytes) -> array:
    values = array(kind)
    values.frombytes(zlib.decompress(blob))
    if sys.byteorder == "big":
        values.byteswap()
    return values


def pack_int64s(values: list[int]) -> bytes:
    return _packed(array("q", values))


def unpack_int64s(blob: bytes) -> list[int]:
    return _unpacked("q", blob).tolist()


def pack_histogram(histogram: dict[int, int]) -> bytes:
    """Token ids ascending, then their counts."""
    ids = sorted(histogram)
    return _packed(array("I", ids + [histogram[i] for i in ids]))


class TokenHistogram(Mapping[int, int]):
    """A language's token histogram as stored: its token ids ascending (`ids`) beside their
    occurrences (`counts`), as the arrays the allocation metrics compute on (a run of 200
    languages reads a thousand of them); and a read-only `{token id: occurrences}`.

    >>> histogram = TokenHistogram(np.array([97, 300]), np.array([5, 2]))
    >>> histogram[300], 98 in histogram, list(histogram.items())
    (2, False, [(97, 5), (300, 2)])
    """

    __slots__ = ("counts", "ids")

    def __init__(self, ids: np.ndarray, counts: np.ndarray):
        self.ids = ids
        self.counts = counts

    def __getitem__(self, token: int) -> int:
        at = int(np.searchsorted(self.ids, token))
        if at < len(self.ids) and self.ids[at] == token:
            return int(self.counts[at])
        raise KeyError(token)

    def __iter__(self) -> Iterator[int]:
        return iter(self.ids.tolist())

    def __len__(self) -> int:
        return len(self.ids)

    def __repr__(self) -> str:
        return f"TokenHistogram({dict(self)!r})"


def unpack_histogram(blob: bytes) -> TokenHistogram:
    values = np.frombuffer(zlib.decompress(blob), dtype="<u4").astype(np.int64)
    half = len(values) // 2
    return TokenHistogram(values[:half], values[half:])


def add_replacements(db: Database, vocab_id: int, texts: ReplacementTexts,
                     by_language: dict[str, list[int]]) -> None:
    db.conn.executemany(
        "INSERT INTO merge_replacements (vocab_id, texts, lang, per_merge) VALUES (?, ?, ?, ?)",
        ((vocab_id, texts, lang, pack_int64s(values)) for lang, values in by_language.items()))


def add_histograms(db: Database, vocab_id: int,
                   histograms: dict[int, dict[str, dict[int, int]]]) -> None:
    db.conn.executemany(
        "INSERT INTO token_histograms (vocab_id, size, lang, histogram) VALUES (?, ?, ?, ?)",
        ((vocab_id, size, lang, pack_histogram(histogram))
         for size, by_lang in histograms.items() for lang, histogram in by_lang.items()))


VocabularyKey = tuple[str, str | None]
"""A vocabulary of a run: (scope, pre-tokenizer)."""


def load_replacements(db: Database, run_id: int,
                      texts: ReplacementTexts) -> dict[VocabularyKey, dict[str, list[int]]]:
    """`{(scope, pretokenizer): {lang: [occurrences each merge replaced]}}` of a run."""
    found: dict[VocabularyKey, dict[str, list[int]]] = {}
    for scope, pretokenizer, lang, blob in db.execute(
            "SELECT v.scope, v.pretokenizer, r.lang, r.per_merge FROM merge_replacements r "
            "JOIN vocabularies v ON v.id = r.vocab_id WHERE v.run_id = ? AND r.texts = ? "
            "ORDER BY v.id, r.lang", [run_id, texts]):
        found.setdefault((scope, pretokenizer), {})[lang] = unpack_int64s(blob)
    return found


def load_histograms(db: Database, run_id: int
                    ) -> dict[tuple[str, str | None, int], dict[str, TokenHistogram]]:
    """`{(scope, pretokenizer, size): {lang: {token id: occurrences}}}` of a run."""
    found: dict[tuple[str, str | None, int], dict[str, TokenHistogram]] = {}
    for scope, pretokenizer, size, lang, blob in db.execute(
            "SELECT v.scope, v.pretokenizer, h.size, h.lang, h.histogram FROM token_histograms h "
            "JOIN vocabularies v ON v.id = h.vocab_id WHERE v.run_id = ? "
            "ORDER BY v.id, h.size, h.lang", [run_id]):
        found.setdefault((scope, pretokenizer, size), {})[lang] = unpack_histogram(blob)
    return found


def load_chosen(db: Database, run_id: int) -> dict[VocabularyKey, list[str | None]]:
    """`{(scope, pretokenizer): [the language each merge served first]}` of the run's
    parity-aware vocabularies (None: a merge chosen over all languages)."""
    found: dict[VocabularyKey, list[str | None]] = {}
    for scope, pretokenizer, chosen in db.execute(
            "SELECT v.scope, v.pretokenizer, m.chosen_by FROM merges m "
            "JOIN vocabularies v ON v.id = m.vocab_id WHERE v.run_id = ? AND v.kind = ? "
            "ORDER BY v.id, m.rank", [run_id, str(Role.PARITY.kind)]):
        found.setdefault((scope, pretokenizer), []).append(chosen)
    return found
