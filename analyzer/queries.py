"""Questions the command line and the service both ask of stored runs: is a run complete, a
trained vocabulary at a size, a text's tokens under it or under a production tokenizer, and
what the same content costs in each language (a comparison against a pivot).

    vocabulary = trained_vocabulary(db, run_id, "shared", size=1024)
    tokenization(text, vocabulary.pieces)   # {"count", "ids", "pieces", "bytes"}
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Protocol

from analyzer import bpe
from analyzer.bpe.pretokenize import SUPERBPE
from analyzer.bpe.readable import marked
from analyzer.errors import Invalid
from analyzer.external.extension import Extended, ExtensionBase, extension_base
from analyzer.external.library_trained import LibraryModel, model_from_document
from analyzer.identity import BASE_PRETOKENIZER, SHARED_SCOPE
from analyzer.store import (
    AnalyzerDatabase,
    NotFound,
    RunNotComplete,
    RunRead,
    RunStatus,
    StoredMerge,
    StoreError,
    VocabularyRead,
    get_run,
    load_merges,
    load_model,
    vocabularies,
)

Pieces = Callable[[str], list[tuple[int, bytes]]]


class QueryError(Invalid):
    """A question asked in a way that cannot be answered (the message says what to change)."""


class InvalidText(QueryError):
    """A text that is not valid Unicode (a lone surrogate): the message names the character."""


def complete_run(db: AnalyzerDatabase, run_id: int) -> RunRead:
    """The run, if it has results; NotFound or RunNotComplete (saying what it is) otherwise."""
    run = get_run(db, run_id)
    if run.status != RunStatus.COMPLETE:
        why = f" ({run.error})" if run.error else ""
        raise RunNotComplete(f"run {run_id} is {run.status}{why}: it has no results")
    return run


class Encoder(Protocol):
    """What shows a text's tokens: a trained vocabulary, or an extended production tokenizer."""

    def encode(self, text: str) -> list[int]: ...

    def token_bytes(self, token: int) -> bytes: ...


@dataclass(frozen=True)
class TrainedVocabulary:
    scope: str
    pretokenizer: str
    size: int
    largest: int
    """The largest size the vocabulary has (256 + its merges; an extension's base size + its
    merges)."""
    vocabulary: Encoder

    def pieces(self, text: str) -> list[tuple[int, bytes]]:
        """The text's tokens as (id, bytes); ValueError naming a character that is not
        valid Unicode (a lone surrogate)."""
        try:
            # An encoder whose pieces depend on their place (WordPiece: a chunk's first piece is
            # whole, `##` and all) spells them itself.
            spell = getattr(self.vocabulary, "pieces", None)
            if spell is not None:
                return spell(text)
            ids = self.vocabulary.encode(text)
        except ValueError:
            raise InvalidText(invalid_text(text)) from None
        return [(token, self.vocabulary.token_bytes(token)) for token in ids]


def trained_merges(db: AnalyzerDatabase, run_id: int, scope: str,
                   pretokenizer: str | None = None) -> tuple[list[StoredMerge], str]:
    """The stored merges of a trained vocabulary of a complete run, and its pre-tokenizer (the
    run's first unless one is named); StoreError for a production tokenizer, which has none."""
    stored, pretokenizer = _trained(db, run_id, scope, pretokenizer)
    if stored is not None and not stored.kind.has_merges:
        raise StoreError(f"{scope} is a {stored.kind.algorithm} vocabulary, counted by Hugging "
                         "Face tokenizers: it has no merges; tokenize shows its pieces, and "
                         f"export --tokenizer {scope} writes its model")
    return load_merges(db, run_id, scope, pretokenizer), pretokenizer


def _trained(db: AnalyzerDatabase, run_id: int, scope: str,
             pretokenizer: str | None) -> tuple[VocabularyRead | None, str]:
    """A complete run's trained vocabulary (None if it has none such: `load_merges` then says
    what it has) and its pre-tokenizer: an extension's is its base's own, any other's the
    one named or the run's first."""
    run = get_run(db, run_id)
    found = vocabularies(db, run.id)
    kinds = {v.scope: v.kind for v in found}
    if scope in kinds and kinds[scope].measured:
        what = ("holds imported counts" if kinds[scope].imported
                else "is a production tokenizer")
        raise StoreError(f"{scope} {what}: its merges are not stored; "
                         "merges and tokenize show the run's trained vocabularies")
    complete_run(db, run_id)
    if scope in kinds and kinds[scope].extends:  # cut by its base's own pre-tokenizer
        pretokenizer = BASE_PRETOKENIZER
    pretokenizer = pretokenizer or run.pretokenizers[0]
    stored = next((v for v in found if v.scope == scope and v.pretokenizer == pretokenizer), None)
    return stored, pretokenizer


def trained_vocabulary(db: AnalyzerDatabase, run_id: int, scope: str = SHARED_SCOPE,
                       size: int | None = None, pretokenizer: str | None = None) -> TrainedVocabulary:
    """A trained vocabulary of a complete run at `size` (default: its largest), under its
    pre-tokenizer (default: the run's first). StoreError for a production tokenizer (its merges
    are not stored) or a size the vocabulary does not have."""
    stored, pretokenizer = _trained(db, run_id, scope, pretokenizer)
    if stored is not None and stored.kind.extends:
        extended = _extended(db, run_id, stored, size)
        return TrainedVocabulary(scope, pretokenizer, extended.size,
                                 extended.base.size + (stored.merges_learned or 0), extended)
    if stored is not None and not stored.kind.has_merges:
        model = library_model(db, run_id, stored, size)
        return TrainedVocabulary(scope, pretokenizer, model.size, stored.size, model)
    rows = load_merges(db, run_id, scope, pretokenizer)  # StoreError when there is no such
    assert stored is not None
    largest = 256 + len(rows)
    size = size or largest
    if not 256 <= size <= largest:
        raise NotFound(f"size {size} is outside 256..{largest}, the sizes {scope} has in run {run_id}")
    merges = [((left, right), new_id) for left, right, new_id, _, _ in rows[:size - 256]]
    split = pretokenizer
    if stored.kind.two_stages and stored.transition and size > stored.transition:
        split = SUPERBPE  # past its transition a SuperBPE vocabulary splits as its stage 2
    return TrainedVocabulary(scope, pretokenizer, size, largest, bpe.Vocabulary(merges, split))


def library_model(db: AnalyzerDatabase, run_id: int, stored: VocabularyRead,
                  size: int | None = None) -> LibraryModel:
    """A Unigram or WordPiece vocabulary's model at `size` (default: its largest), as the run
    stored and measured it; NotFound naming the sizes it was trained at."""
    assert stored.kind.algorithm is not None and stored.pretokenizer is not None
    found = load_model(db, run_id, stored.scope, stored.pretokenizer, size)
    return model_from_document(stored.kind.algorithm, found.document, stored.pretokenizer)


def extended_tokenizer(db: AnalyzerDatabase, run_id: int, scope: str,
                       size: int | None = None) -> Extended:
    """An extension of a complete run at `size` (the base's size plus added tokens; default:
    every added token): its base loaded on this machine (TokenizerError if it is not here) and
    its stored merges. NotFound for a size it does not have."""
    return _extended(db, run_id, _extension(db, run_id, scope), size)


def extension_base_bytes(db: AnalyzerDatabase, run_id: int, scope: str) -> Callable[[int], bytes]:
    """The bytes of the ids of an extension's base (its merges' parts may be any of them),
    without loading its merges."""
    return _base_of(run_id, _extension(db, run_id, scope)).token_bytes


def _extension(db: AnalyzerDatabase, run_id: int, scope: str) -> VocabularyRead:
    complete_run(db, run_id)
    found = vocabularies(db, run_id)
    stored = next((v for v in found if v.scope == scope), None)
    if stored is None or not stored.kind.extends or stored.base_size is None:
        extensions = [v.scope for v in found if v.kind.extends]
        raise NotFound(f"run {run_id} has no extension {scope!r}; it has: "
                       f"{', '.join(extensions) or 'none'}")
    return stored


def _extended(db: AnalyzerDatabase, run_id: int, stored: VocabularyRead,
              size: int | None) -> Extended:
    assert stored.base_size is not None
    rows = load_merges(db, run_id, stored.scope, BASE_PRETOKENIZER)
    first, largest = stored.base_size, stored.base_size + len(rows)
    size = size or largest
    if not first <= size <= largest:
        raise NotFound(f"size {size:,} is outside {first:,}..{largest:,} (+0 to +{len(rows):,}), "
                       f"the sizes {stored.scope} has in run {run_id}")
    return Extended(_base_of(run_id, stored),
                    [((r.left, r.right), r.new_id) for r in rows[:size - first]])


def _base_of(run_id: int, stored: VocabularyRead) -> ExtensionBase:
    """An extension's base, loaded on this machine; StoreError unless it is the very one the
    run extended (its size, and its files' SHA-256 where the run recorded them)."""
    name = stored.identity.name
    assert name is not None  # an extension names its base
    base = extension_base(name, downloads=False)
    if base.size != stored.base_size:
        raise StoreError(f"{stored.scope}: {base.name} on this machine has {base.size:,} ids, but "
                         f"run {run_id} extended one of {stored.base_size:,}")
    then, now = file_digests(stored.source or ""), file_digests(base.source)
    if then and now and then != now:  # an hf: repository, say, that changed since the run
        raise StoreError(f"{stored.scope}: {base.name} on this machine is not the one run "
                         f"{run_id} extended (its files' SHA-256 are {', '.join(sorted(now))}, "
                         f"the run's {', '.join(sorted(then))}); its merges only fit that one")
    return base


def merge_parts(merges: list[StoredMerge],
                base_bytes: Callable[[int], bytes] | None = None) -> Callable[[int], bytes | None]:
    """The bytes of any id a vocabulary's merges join: a byte, a token it learned, or (an
    extension, given `base_bytes`) one of its base's; None for a base id without them.

    >>> part = merge_parts([StoredMerge(97, 97, 256, 3, b"aa")])
    >>> part(256), part(98)
    (b'aa', b'b')
    """
    learned = {merge.new_id: merge.token for merge in merges}
    first = min(learned, default=256)

    def part(token: int) -> bytes | None:
        if token in learned:
            return learned[token]
        if base_bytes is not None:
            return base_bytes(token)
        return bytes([token]) if first == 256 and 0 <= token < 256 else None

    return part


def file_digests(source: str) -> set[str]:
    """The SHA-256 digests a tokenizer's recorded source names.

    >>> sorted(file_digests("a.tiktoken: cache (SHA-256 " + "ab" * 32 + " verified)"))[0][:8]
    'abababab'
    """
    return set(re.findall(r"SHA-256 ([0-9a-f]{64})", source))


def invalid_text(text: str) -> str:
    """Why a text cannot be encoded: its first character that is not valid Unicode."""
    position = next((i for i, char in enumerate(text) if "\ud800" <= char <= "\udfff"), None)
    if position is None:
        return "the text is not valid Unicode"
    char = text[position]
    what = (f"the byte {ord(char) - 0xDC00:#04x}, not UTF-8" if "\udc80" <= char <= "\udcff"
            else f"U+{ord(char):04X}, a lone surrogate")
    return f"the text is not valid Unicode: character {position} is {what}"


def tokenization(text: str, pieces: Pieces) -> dict:
    """`{"count", "ids", "pieces", "bytes"}`: the tokens of a text, each piece as text (bytes
    that are not whole UTF-8 characters written as the terminal writes them, `‹e0 b8›`:
    `bpe.readable.marked`) and as hex bytes."""
    try:
        found = pieces(text)
    except UnicodeEncodeError:  # a production tokenizer given a lone surrogate
        raise InvalidText(invalid_text(text)) from None
    return {"count": len(found), "ids": [token for token, _ in found],
            "pieces": [marked(piece) for _, piece in found],
            "bytes": [piece.hex() for _, piece in found]}


def comparison(texts: dict[str, str], counters: Mapping[str, Pieces], pivot: str | None = None,
               with_pieces: bool = False) -> dict:
    """The same content in several languages under several vocabularies or tokenizers:
    `{"pivot", "languages", "rows": [{"vocab", "lang", "tokens", "bytes", "premium",
    "pieces"?}]}`, premium = tokens / the pivot's tokens under the same vocabulary. The pivot
    is `pivot`, else English if given, else the first language."""
    if not texts:
        raise QueryError("no texts: give at least one language's text")
    languages = list(texts)
    if pivot is None:
        pivot = "eng_Latn" if "eng_Latn" in texts else languages[0]
    elif pivot not in texts:
        raise QueryError(f"the pivot {pivot!r} has no text; the languages given: {', '.join(languages)}")
    rows = []
    for name, pieces in counters.items():
        found = {lang: tokenization(text, pieces) for lang, text in texts.items()}
        base = found[pivot]["count"]
        for lang in languages:
            row = {"vocab": name, "lang": lang, "tokens": found[lang]["count"],
                   "bytes": len(texts[lang].encode("utf-8")),
                   "premium": found[lang]["count"] / base if base else None}
            if with_pieces:
                row["pieces"] = found[lang]["pieces"]
            rows.append(row)
    return {"pivot": pivot, "languages": languages, "rows": rows}
