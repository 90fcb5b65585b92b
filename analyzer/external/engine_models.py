"""Production tokenizers on the analyzer's own engine: a tokenizer's files read into a
`RankedModel`, its pre-tokenizer written as the compiled splitter's steps, its normaliser
taken from its library; or, in words, why not.

The library stays the definition. Only what is known to count exactly as the library does
comes here (tests/test_external_engine.py compares every unit of the real corpora and
generated text, token for token): byte-level BPE with its merges by rank (tiktoken's files,
Hugging Face tokenizer.json files), and Hugging Face BPE over characters with byte fallback
(Gemma's). A pre-tokenizer is recognised by its exact pattern; one the splitter does not know
keeps the tokenizer on its library, and `analyzer tokenizers` says so.

>>> tiktoken_steps(r"'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+")
[('gpt2', False)]
>>> tiktoken_steps("[a-z]+")
'its split pattern is not one the compiled splitter knows'
"""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import TYPE_CHECKING

from analyzer.bpe.native_split import PRODUCTION_PATTERNS
from analyzer.bpe.pretokenize import PRETOKENIZERS
from analyzer.bpe.ranked import PackedModel, RankedModel, Step

from .byte_level import BYTE_TOKEN, byte_level_alphabet, byte_level_bytes

if TYPE_CHECKING:
    import numpy as np

KNOWN_PATTERNS: dict[str, str] = {
    **{pattern: name for name, pattern in PRETOKENIZERS.items()
       if pattern is not None and name in ("gpt2", "cl100k", "o200k", "llama3")},
    **{pattern: name for name, (_, pattern) in PRODUCTION_PATTERNS.items()},
    # GPT-2's pattern as its encoder.py and Hugging Face's ByteLevel spell it: the same chunks
    # as tiktoken's faster form (tests/test_bpe_native_split.py checks the two agree).
    r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+""": "gpt2",
}
"""Split patterns the compiled splitter writes out, by their text (after `_canonical`)."""

METASPACE = "\u2581"


def _canonical(pattern: str) -> str:
    """A pattern with its line breaks as escapes: tokenizer.json files hold `[^\\r\\n` both as
    the escapes and as the characters themselves (the same pattern to a regex engine)."""
    return pattern.replace("\r", "\\r").replace("\n", "\\n")


def known_pattern(pattern: str) -> str | None:
    """The splitter's name for a split pattern, or None.

    >>> known_pattern("\\\\p{N}{1,3}")
    'numbers'
    """
    return KNOWN_PATTERNS.get(_canonical(pattern))


@dataclass(frozen=True)
class EngineTokenizer:
    """What the engine counts a tokenizer with, beside its library."""

    model: RankedModel | PackedModel
    steps: tuple[Step, ...]
    library: str
    """Whose regular expressions the splitter follows ("tiktoken" or "tokenizers"): their
    Unicode tables are read out of that library (`library_unicode`)."""
    normalizer: dict | str | None = None
    """A tokenizer.json normaliser (run by Hugging Face's own code), "NFKC" and the like (run
    by `unicodedata`, as js-tiktoken's callers do), or None."""
    added: tuple[tuple[str, bool, int], ...] = ()
    """Text that Hugging Face's added vocabulary takes out of a text before anything else (its
    non-special added tokens), each with whether it is looked for in the normalised text (else
    in the text as given) and its id: each is that token, the text between them counted."""
    unsplit: tuple[str, ...] = ()
    """Text across which a merge could cross the steps' cut (Gemma's tokens that hold a "▁"
    after another character): a text holding any is counted whole, without the steps."""
    surrogates: str = "refuse"
    """"replace": tiktoken's handling of a lone surrogate (the text made UTF-16 and back,
    U+FFFD for what cannot be); "refuse": the library takes none (a text with one is counted
    by the library, which says so)."""
    digits: bool = False
    """Its steps use Hugging Face's Digits: exact only where Digits' digits are the regular
    expressions' \\p{N} (checked against the library's tables when it is built)."""
    notes: list[str] = field(default_factory=list, compare=False)


# --- tiktoken's formats ------------------------------------------------------------------------


def tiktoken_steps(pattern: str) -> list[Step] | str:
    """tiktoken's findall over its pattern, as steps; or why the splitter cannot."""
    name = known_pattern(pattern)
    if name is None:
        return "its split pattern is not one the compiled splitter knows"
    return [(name, False)]


def from_ranks(ranks: dict[bytes, int], pattern: str,
               normalization: str | None = None) -> EngineTokenizer | str:
    """A tiktoken encoding (its mergeable ranks and pattern) on the engine, or why not."""
    steps = tiktoken_steps(pattern)
    if isinstance(steps, str):
        return steps
    singles = [ranks.get(bytes([byte])) for byte in range(256)]
    if any(rank is None for rank in singles):
        return "a byte has no rank of its own"
    pieces: list[bytes | None] = [None] * (max(ranks.values()) + 1)
    for token, rank in ranks.items():
        if pieces[rank] is not None:
            return f"two tokens share rank {rank}"
        pieces[rank] = token
    model = RankedModel(pieces, [], singles, "bytes", whole_first=True,  # type: ignore[arg-type]
                        derived=True)
    return EngineTokenizer(model, tuple(steps), "tiktoken", normalization, surrogates="replace")


# --- Hugging Face tokenizer.json ---------------------------------------------------------------


def _split_step(step: dict) -> list[Step] | str:
    kind = step.get("type")
    if kind == "Sequence":
        found: list[Step] = []
        for inner in step.get("pretokenizers") or []:
            steps = _split_step(inner)
            if isinstance(steps, str):
                return steps
            found += steps
        return found
    if kind == "Split":
        pattern = step.get("pattern") or {}
        if step.get("invert") or str(step.get("behavior")).lower() != "isolated" \
                or "Regex" not in pattern:
            return f"its Split ({step.get('behavior')}, {list(pattern)}) is not one the engine runs"
        name = known_pattern(pattern["Regex"])
        if name is None:
            return "its split pattern is not one the compiled splitter knows"
        return [(name, True)]
    if kind == "ByteLevel":
        if step.get("add_prefix_space"):
            return "its ByteLevel adds a space before each text"
        return [("gpt2", True)] if step.get("use_regex", True) else []
    if kind == "Digits":
        if not step.get("individual_digits"):
            return "its Digits keeps runs of digits together"
        return [("digits", True)]
    return f"its pre-tokenizer {kind} is not one the engine runs"


def _merge_pairs(merges: Sequence) -> list[tuple[str, str]]:
    """A tokenizer.json's merges: "a b" strings (older files) or [a, b] pairs."""
    pairs = []
    for merge in merges:
        left, right = merge.split(" ", 1) if isinstance(merge, str) else merge
        pairs.append((left, right))
    return pairs


def _is_gemma_layout(document: dict) -> bool:
    """Gemma's: spaces replaced by "▁", then nothing split (its Split on " " finds no space
    left), BPE over characters with byte fallback."""
    normalizer, pre = document.get("normalizer") or {}, document.get("pre_tokenizer")
    replaces_spaces = (normalizer.get("type") == "Replace"
                       and normalizer.get("pattern") == {"String": " "}
                       and normalizer.get("content") == METASPACE)
    splits_nothing = pre is None or (pre.get("type") == "Split" and pre.get("pattern") == {"String": " "}
                                     and not pre.get("invert"))
    return replaces_spaces and splits_nothing


def from_tokenizer_json(document: dict) -> EngineTokenizer | str:
    """A Hugging Face tokenizer.json (parsed) on the engine, or why not."""
    model = document.get("model") or {}
    if model.get("type") != "BPE":
        return f"its model is {model.get('type')}, not BPE"
    if model.get("dropout") not in (None, 0, 0.0):
        return "its BPE drops merges at random (dropout)"
    if model.get("continuing_subword_prefix") or model.get("end_of_word_suffix"):
        return "its BPE marks word pieces (a prefix or suffix)"
    vocab: dict[str, int] = model.get("vocab") or {}
    added_tokens = [token for token in document.get("added_tokens") or []
                    if not token.get("special") and token.get("content")]
    if any(token.get(flag) for token in added_tokens for flag in ("lstrip", "rstrip", "single_word")):
        return "its added tokens take the spaces beside them (lstrip, rstrip) or whole words only"
    added = tuple((token["content"], bool(token.get("normalized")), token["id"])
                  for token in added_tokens)
    unsplit: tuple[str, ...] = ()
    byte_level = '"ByteLevel"' in json.dumps([document.get("pre_tokenizer"), document.get("decoder")])
    if byte_level:
        pre = document.get("pre_tokenizer")
        steps = _split_step(pre) if pre else []
        if isinstance(steps, str):
            return steps
        size = max(vocab.values(), default=-1) + 1
        pieces: list[bytes | None] = [None] * size
        for token, i in vocab.items():
            pieces[i] = byte_level_bytes(token)
        alphabet = byte_level_alphabet()
        singles = [vocab.get(alphabet[byte]) for byte in range(256)]
        symbols = "bytes"
        normalizer = document.get("normalizer")
    elif _is_gemma_layout(document) and model.get("byte_fallback"):
        size = max(vocab.values(), default=-1) + 1
        pieces = [None] * size
        for token, i in vocab.items():
            if not BYTE_TOKEN.fullmatch(token):
                pieces[i] = token.encode("utf-8")
        # A byte's fallback token is needed only for a character not in the vocabulary: an
        # ASCII character that is in it never falls back (Gemma 2 has no <0x09>: its tab is).
        singles = [vocab.get(f"<0x{byte:02X}>",
                             vocab.get(chr(byte)) if byte < 0x80 else None) for byte in range(256)]
        symbols = "characters"
        normalizer = document.get("normalizer")
        # No merge can cross a "▁" that follows another character where no token holds that
        # character before a "▁": the text is cut before each such "▁", and each piece counted
        # once however often it recurs. Texts holding a pair some token does hold are counted
        # whole.
        steps = [("metaspace", True)]
        unsplit = tuple(sorted({token[at - 1] + METASPACE for token in vocab
                                for at in range(1, len(token))
                                if token[at] == METASPACE and token[at - 1] != METASPACE}))
    else:
        return "its BPE is neither byte-level nor Gemma's (characters with byte fallback)"
    if any(single is None for single in singles):
        return "a byte has no token of its own"
    ranked = {}
    for rank, (left, right) in enumerate(_merge_pairs(model.get("merges") or [])):
        if left not in vocab or right not in vocab or left + right not in vocab:
            return f"merge {rank} ({left} {right}) makes a token the vocabulary lacks"
        ranked[(vocab[left], vocab[right])] = (rank, vocab[left + right])  # the last of a pair twice
    merges = [(left, right, rank, made) for (left, right), (rank, made) in ranked.items()]
    built = RankedModel(pieces, merges, singles, symbols,  # type: ignore[arg-type]
                        whole_first=bool(model.get("ignore_merges")))
    return EngineTokenizer(built, tuple(steps), "tokenizers", normalizer, added, unsplit,
                           digits=any(name == "digits" for name, _ in steps))


# --- Normalisers -------------------------------------------------------------------------------

UNICODE_FORMS = ("NFC", "NFD", "NFKC", "NFKD")


class Normalizer:
    """A tokenizer's normaliser as its library runs it, on one text or on many at once; for
    the Unicode normal forms (`form`) with Python's own test first: a text of characters
    Python's Unicode knows, in the form by it, is in the form by any later Unicode (Unicode's
    stability policy), and characters no Unicode of the library's knows are left as they are.
    ASCII is its own normal form."""

    def __init__(self, one: Callable[[str], str], form: str | None = None):
        self.one = one
        self.form = form

    def __call__(self, text: str) -> str:
        return self.one(text)  # one text: the library itself (the batch's test pays off in bulk)

    def batch(self, texts: Sequence[str]) -> list[str]:
        if self.form is None:
            return [self.one(text) for text in texts]
        found = list(texts)
        form = self.form
        unsure: list[int] = []
        changed: set[int] = set()
        for k, text in enumerate(texts):
            if not text.isascii():
                (unsure.append if unicodedata.is_normalized(form, text)  # type: ignore[arg-type]
                 else changed.add)(k)
        changed.update(unsure[i] for i in unknown_to_python([texts[k] for k in unsure]))
        for k in changed:
            found[k] = self.one(texts[k])
        return found


def normalizer_of(spec: dict | str | None) -> Normalizer | None:
    """The normaliser of a tokenizer's normaliser spec (a tokenizer.json's, or a Unicode form
    run by `unicodedata`, as js-tiktoken's callers do), or None for none."""
    if spec is None:
        return None
    if isinstance(spec, str):  # unicodedata is the definition itself: no test of Unicode's
        form = spec
        return Normalizer(lambda text: unicodedata.normalize(form, text),  # type: ignore[arg-type]
                          None if form not in UNICODE_FORMS else form)
    kind = spec.get("type")
    if kind == "Sequence" and not spec.get("normalizers"):
        return None
    if kind == "Replace" and set(spec.get("pattern") or {}) == {"String"}:
        old, new = spec["pattern"]["String"], spec["content"]
        return Normalizer(lambda text: text.replace(old, new))  # a literal replace, as Replace's String is
    from tokenizers import Tokenizer

    # The library's own normaliser, alone: a tokenizer of it and an empty model.
    holder = Tokenizer.from_str(json.dumps({"version": "1.0", "normalizer": spec, "model": {
        "type": "BPE", "vocab": {}, "merges": []}}))
    return Normalizer(holder.normalizer.normalize_str, kind if kind in UNICODE_FORMS else None)


@cache
def _unknown_table() -> np.ndarray:
    """A flag per code point: unassigned in Python's own Unicode (`unicodedata`)."""
    import numpy as np

    return np.array([unicodedata.category(chr(code)) == "Cn" for code in range(0x110000)])


def unknown_to_python(texts: Sequence[str]) -> list[int]:
    """The indices of the texts holding a character Python's Unicode has not assigned (one
    pass over them all).

    >>> unknown_to_python(["a", "\\u0378", "b"])
    [1]
    """
    import numpy as np  # here: a command that lists or resolves tokenizers loads no NumPy

    if not texts:
        return []
    codes = np.frombuffer("\x00".join(texts).encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    flags = _unknown_table()[codes]
    starts = np.cumsum([0] + [len(text) + 1 for text in texts[:-1]])
    return [int(k) for k in np.flatnonzero(np.logical_or.reduceat(flags, starts))]


def space_replacement(spec: dict | str | None) -> str | None:
    """The one character a normaliser writes every space as (Hugging Face's Replace of " "),
    else None."""
    if isinstance(spec, dict) and spec.get("type") == "Replace" \
            and spec.get("pattern") == {"String": " "} and len(spec.get("content") or "") == 1:
        return spec["content"]
    return None


def words_text_of(spec: dict | str | None) -> Callable[[str], str]:
    """The text a tokenizer's split words are counted on, from the text as given: as its
    normaliser leaves it (where its tokens are), but for a normaliser that only writes spaces
    as another character (Gemma's "▁"), whose tokens' bytes spell that character as a space.

    >>> words_text_of("NFKC")("ﬁne"), words_text_of(None)("ﬁne")
    ('fine', 'ﬁne')
    """
    normalize = None if space_replacement(spec) is not None else normalizer_of(spec)
    return normalize or (lambda text: text)
