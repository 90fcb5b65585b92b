"""Training on texts by language: who each merge served, and parity-aware BPE.

`train_by_language` takes `{language: [texts]}` and returns, beside the merges, how many
occurrences each merge replaced in each language's training texts, at the moment it was
learned (what the merge did for whom). With `parity=True` it trains parity-aware (Foroutan et
al. 2025, as `reference.train_parity` defines it): each merge is the most frequent pair of the
language whose dev texts have the most tokens so far.

Languages are groups for the engine (`train_grouped`); with a pre-tokenizer each language's
texts are cut into chunks and each distinct chunk of a language trained on once, weighted by
how often it occurs there (so a chunk two languages share still counts in each).

>>> result = train_by_language({"eng": ["aaaaaaaa"], "kor": ["bcdbcdbcd"]}, 258, parity=True)
>>> result.merges, result.chosen
([((98, 99), 256), ((97, 97), 257)], ['kor', 'eng'])
>>> result.replaced_by_language
{'eng': [0, 4], 'kor': [3, 0]}
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Protocol, cast

from .contract import MAX_WEIGHT, Progress, TokenIds
from .engines import engine
from .packing import Packed, PackedChunks, join_packed, pack
from .pretokenize import Pretokenizer, Splitter, distinct_chunks, splitter
from .reference import MIN_PAIR_COUNT, Merge
from .threads import available_cores


class ChunkEncoder(Protocol):
    """A base that gives chunks their ids (a production tokenizer to extend): continued
    training starts from those ids, new ones from `size`."""

    size: int

    def encode_chunks(self, chunks: Sequence[str]) -> list[list[int]]: ...


@dataclass(frozen=True)
class ChunkCounts:
    """A language's training text already cut into chunks: its distinct chunks, in order of
    first appearance, and how often each occurs. What a pre-tokenizer makes of texts, made
    elsewhere (a training source's counting pass); `train_by_language` takes it in place of
    texts, cut by the same pre-tokenizer it is given."""

    chunks: Sequence[str]
    counts: Sequence[int]


class ChunkTables(Mapping[str, ChunkCounts]):
    """Languages' `ChunkCounts`, each read (`load(lang)`) when asked for and not kept: a
    training source's tables, which `train_by_language` lays out for the engine one language
    at a time, so that no language's chunks are held twice (a gigabyte of them, at scale).

    >>> tables = ChunkTables(["eng"], lambda lang: ChunkCounts(["ab"], [3]))
    >>> list(tables), tables["eng"].counts
    (['eng'], [3])
    """

    def __init__(self, languages: Sequence[str], load: Callable[[str], ChunkCounts]):
        self._languages = list(languages)
        self._load = load

    def __getitem__(self, lang: str) -> ChunkCounts:
        if lang not in self._languages:
            raise KeyError(lang)
        return self._load(lang)

    def __contains__(self, lang: object) -> bool:  # without reading it (Mapping's would)
        return lang in self._languages

    def __iter__(self) -> Iterator[str]:
        return iter(self._languages)

    def __len__(self) -> int:
        return len(self._languages)


@dataclass(frozen=True)
class LanguageTraining:
    merges: list[Merge]
    counts: list[int]
    """The count each merge was chosen on: over all languages, or (parity-aware) within the
    language that chose it; weights applied."""
    replaced: list[int]
    """Occurrences each merge replaced in all training texts (weights applied)."""
    n_bytes: int
    """Bytes of all training texts (weights applied)."""
    stop_reason: str
    languages: list[str]
    chosen: list[str | None]
    """Parity-aware: the language whose pair each merge was; None for a merge chosen over all
    languages (every merge, when not parity-aware)."""
    replaced_by_language: dict[str, list[int]]
    """`{language: [occurrences each merge replaced in its training texts]}` (weights applied)."""


def train_by_language(
    texts: Mapping[str, Sequence[str] | ChunkCounts],
    vocab_size: int,
    *,
    parity: bool = False,
    dev: Mapping[str, Sequence[str]] | None = None,
    global_merges: int = 0,
    pretokenizer: str | Splitter | None = "none",
    weights: Mapping[str, int] | None = None,
    min_pair_count: int = MIN_PAIR_COUNT,
    tie_break: str = "lexicographic",
    progress: Progress | None = None,
    base: Sequence[Merge] | ChunkEncoder = (),
) -> LanguageTraining:
    """Learn merges on every language's texts together; see the module's docstring.

    `weights[lang] = n` trains as if each text of that language appeared n times (default 1);
    `dev` (parity-aware only) are the texts whose token counts decide whose turn it is (default:
    the training texts, each once); `global_merges` first merges are chosen over all languages.
    Not parity-aware, the merges are `train(all texts, languages in order)`'s. A language's
    texts may be given already cut (`ChunkCounts`, by `pretokenizer`): the same training. With a `base`
    merge list, training continues it (as `continue_training`): each chunk is encoded with the
    base first, and the result holds the added merges, new ids from `256 + len(base)`. A
    `ChunkEncoder` base (a production tokenizer, with its own splitter as `pretokenizer`)
    gives the chunks their ids instead, new ids from its size.
    """
    languages = sorted(texts) if parity else list(texts)
    _check(texts, dev, weights, parity, global_merges)
    flat: list[str] = []
    start: list[str] | TokenIds | Packed
    if dev is None and isinstance(base, Sequence) and not base and \
            (isinstance(texts, ChunkTables) or all(isinstance(texts[lang], ChunkCounts)
                                                    for lang in languages)):
        # Chunks counted already (a training source's tables): laid out as bytes, a language
        # at a time, without a str per chunk.
        counted = cast(Mapping[str, ChunkCounts], texts)  # every value, just checked
        start, groups, train_weights, multiplicities = _laid_out(counted, languages,
                                                                 weights or {}, parity)
    else:
        parts = [(texts[lang], group, (weights or {}).get(lang, 1), dev is None, True)
                 for group, lang in enumerate(languages)]
        if dev is not None:  # each language's dev texts after its own, measured, not trained
            parts = [part for group, lang in enumerate(languages)
                     for part in (parts[group], (dev[lang], group, 0, True, False))]
        flat, groups, train_weights, multiplicities = _flat(parts, splitter(pretokenizer))
        start = flat
        del parts
    if isinstance(base, Sequence):
        if base:
            start = encoded_by(base, flat)
    else:
        start = TokenIds(base.encode_chunks(flat), base.size)
    plain = set(train_weights) <= {1}  # every weight 1 (or none): the engine's default
    result = engine.train_grouped(
        start, groups, vocab_size, weights=None if plain else train_weights,
        multiplicities=multiplicities if parity else None, parity=parity,
        global_merges=global_merges, min_pair_count=min_pair_count, tie_break=tie_break,
        progress=progress)
    return LanguageTraining(
        result.merges, result.counts, result.replaced, result.n_bytes, result.stop_reason,
        languages, [languages[g] if g >= 0 else None for g in result.chosen],
        dict(zip(languages, result.replaced_by_group)))


def _flat(parts: list, split: Splitter | None) -> tuple[list[str], array, array, array]:
    """Every part's distinct chunks, one list (a str each), with each one's group, training
    weight and multiplicity."""
    split_parts = _split_each([items for items, *_ in parts], split)
    # One entry per chunk (hundreds of thousands; millions from a training source): each
    # array made whole at once, then filled a language at a time (appending would copy it
    # again and again as it grows).
    total = sum(len(chunks) for chunks, _ in split_parts)
    flat: list[str] = [""] * total
    groups, train_weights, multiplicities = (array("q", bytes(8 * total)) for _ in range(3))
    at = 0
    for (_, group, weight, measured, trained), (chunks, counts) in zip(parts, split_parts):
        n = len(chunks)
        flat[at:at + n] = chunks
        groups[at:at + n] = array("q", [group]) * n
        counted = array("q", counts)  # from an int64 array: one copy
        if trained:
            train_weights[at:at + n] = counted if weight == 1 else array(
                "q", [weight * count for count in counted])
        if measured:
            multiplicities[at:at + n] = counted
        at += n
    return flat, groups, train_weights, multiplicities


def _laid_out(texts: Mapping[str, ChunkCounts], languages: list[str], weights: Mapping[str, int],
              parity: bool) -> tuple[Packed, array, array, array | None]:
    """Languages' counted chunks laid out for the engine (`join_packed`), read one language at
    a time and let go (with `ChunkTables`, nothing holds them but this loop), with each
    chunk's group and training weight, and, parity-aware, its multiplicity (its count: the
    training texts are the measured ones)."""
    parts: list[Packed] = []
    groups, train_weights = array("q"), array("q")
    multiplicities = array("q") if parity else None
    for group, lang in enumerate(languages):
        table = texts[lang]
        chunks, counts = table.chunks, table.counts
        if len(chunks) != len(counts):
            raise ValueError(f"{lang}: {len(chunks):,} chunks but {len(counts):,} counts: give "
                             "one count per chunk")
        parts.append(chunks.packed() if isinstance(chunks, PackedChunks) else pack(chunks))
        counted = counts if isinstance(counts, array) and counts.typecode == "q" \
            else array("q", counts)
        del table, chunks, counts
        groups.extend(array("q", [group]) * len(counted))
        weight = weights.get(lang, 1)
        train_weights.extend(counted if weight == 1 else array("q", [weight * c for c in counted]))
        if multiplicities is not None:
            multiplicities.extend(counted)
        del counted
    return join_packed(parts), groups, train_weights, multiplicities


def _split_each(parts: list[Sequence[str] | ChunkCounts],
                split: Splitter | None) -> list[tuple[Sequence[str], Sequence[int]]]:
    """Each part's distinct chunks and their counts (each text once, count 1, without a
    splitter; a part already cut, as it is). The parts (a language's texts each) are cut on
    every core: the compiled splitter gives up the GIL, and one part is mostly too small to
    share out by itself."""
    texts = [items for items in parts if not isinstance(items, ChunkCounts)]
    cut = iter(_split_texts(texts, split))
    return [(items.chunks, items.counts) if isinstance(items, ChunkCounts) else next(cut)
            for items in parts]


def _split_texts(parts: list[Sequence[str]],
                 split: Splitter | None) -> list[tuple[Sequence[str], Sequence[int]]]:
    if split is None:
        return [(items, [1] * len(items)) for items in parts]
    cores = available_cores()
    native = isinstance(split, Pretokenizer) and split.native  # others hold the GIL anyway
    if cores == 1 or len(parts) <= 1 or not native:
        return [distinct_chunks(items, split) for items in parts]
    with ThreadPoolExecutor(cores) as pool:
        return list(pool.map(lambda items: distinct_chunks(items, split), parts))


def encoded_by(base: Sequence[Merge], chunks: Sequence[str]) -> TokenIds:
    """Each chunk in the ids a base merge list gives it: where continued training starts (new
    ids from the base's size).

    >>> encoded_by([((97, 97), 256)], ["aaa", "b"])
    TokenIds(sequences=[[256, 97], [98]], first_id=257)
    """
    vocabulary = engine.Vocabulary(base)
    return TokenIds([vocabulary.encode(chunk) for chunk in chunks], vocabulary.size)


def _check(texts: Mapping[str, Sequence[str] | ChunkCounts],
           dev: Mapping[str, Sequence[str]] | None,
           weights: Mapping[str, int] | None, parity: bool, global_merges: int) -> None:
    if not texts:
        raise ValueError("no languages: texts maps each language to its texts")
    if dev is not None:
        if not parity:
            raise ValueError("dev texts are for parity-aware training")
        if set(dev) != set(texts):
            raise ValueError(f"dev must have the same languages as texts: "
                             f"{sorted(set(dev) ^ set(texts))} are in only one")
    for lang, weight in (weights or {}).items():
        if lang not in texts:
            raise ValueError(f"a weight for {lang!r}, which has no texts")
        if isinstance(weight, bool) or not isinstance(weight, int) or not 1 <= weight <= MAX_WEIGHT:
            raise ValueError(f"the weight of {lang} is {weight!r}: a whole number from 1 to "
                             f"{MAX_WEIGHT:,}")
    if isinstance(global_merges, bool) or not isinstance(global_merges, int) or global_merges < 0:
        raise ValueError(f"global_merges must be a whole number from 0, not {global_merges!r}")


def train_parity(
    texts: Mapping[str, Sequence[str]],
    vocab_size: int,
    *,
    dev: Mapping[str, Sequence[str]] | None = None,
    global_merges: int = 0,
    min_pair_count: int = MIN_PAIR_COUNT,
    tie_break: str = "lexicographic",
    pretokenizer: str | None = "none",
    weights: Mapping[str, int] | None = None,
    progress: Progress | None = None,
) -> list[Merge]:
    """Parity-aware merges: exactly `reference.train_parity`'s (on each language's chunks, with
    a pre-tokenizer; on texts repeated as `weights` say).

    >>> train_parity({"eng": ["aaaaaaaa"], "kor": ["bcdbcdbcd"]}, 258)
    [((98, 99), 256), ((97, 97), 257)]
    """
    return train_by_language(texts, vocab_size, parity=True, dev=dev, global_merges=global_merges,
                             pretokenizer=pretokenizer, weights=weights,
                             min_pair_count=min_pair_count, tie_break=tie_break,
                             progress=progress).merges
